"""Trinity (Liu and Qian, 2025): a shared vector-search pool for prefill/decode-disaggregated LLM serving.

The paper has no code and no evaluation; this study builds its three mechanisms and measures them:

- :mod:`.graph`: the CAGRA-style fixed-degree graph the search pool keeps resident (section 3.2);
- :mod:`.engine`: the extend-step search engine, one extend of every active request per fixed-shape
  batched distance operation (section 3.2, Figure 3);
- :mod:`.batching`: static and continuous batching on that engine;
- :mod:`.scheduler`: the stage-aware two-queue scheduler and its baselines (section 3.3, Figure 4);
- :mod:`.serve`: the event loop that drives an engine with arrivals on a virtual clock;
- :mod:`.workload`: the emulated LLM stages (prefill arrivals, decode streams) that issue retrievals;
- :mod:`.roofline`: the u(X) = min(u_max, (X/X_sat)^alpha) fit of Figure 1;
- :mod:`.placement`: the analytic model of Figure 2's three placements (modelled).
"""

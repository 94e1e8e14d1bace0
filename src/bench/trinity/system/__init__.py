"""Trinity's mechanisms (Liu and Qian, 2025), usable on their own (they import bench.core, bench.serving,
bench.data and each other only). The CAGRA-style fixed-degree graph the search pool keeps resident (section
3.2) is built by :mod:`bench.ann.graph` (with :mod:`bench.ann.knn`), shared with any study; here:

- :mod:`.engine` (with :mod:`.visited` and :mod:`.capture`): the extend-step search engine, one extend of
  every active request per fixed-shape batched distance operation, captured as a CUDA graph where there is
  one (section 3.2, Figure 3);
- :mod:`.batching`: static and continuous batching on that engine (section 3.2);
- :mod:`.scheduler`: the stage-aware two-queue scheduler and its baselines (section 3.3, Figure 4);
- :mod:`.event_loop`: the event loop that drives an engine (live or replayed) with arrivals on a virtual clock;
- :mod:`.workload`: the emulated LLM stages (prefill arrivals, decode streams) that issue retrievals;
- :mod:`.roofline`: the u(X) = min(u_max, (X/X_sat)^alpha) fit of Figure 1 and the FLOP counts;
- :mod:`.placement`: the analytic model of Figure 2's three placements (modelled).
"""

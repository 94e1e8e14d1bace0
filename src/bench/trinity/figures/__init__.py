"""Trinity's figures, drawn from records only (found in this package's modules by the registry): Figure 1
(roofline, :mod:`.roofline`), Figure 2 (placements, modelled, :mod:`.placement`), and the study's first
evaluation of the paper's mechanisms: recall against queries/s (:mod:`.recall`), latency and lane
utilisation against load, static against continuous batching (:mod:`.load`), the scheduler's policies and
its open parameters (:mod:`.scheduler`). The paper has no evaluation, so no paper value is drawn; its
Figures 1 and 2 are qualitative."""
from ...core.presenting.figures import Registry

# What each figure shows, for the report (the caption the figure writes adds the run's details).
DESCRIPTIONS = {
    "fig1_roofline": (
        "Figure 1 of Trinity measured on this machine: utilisation (FLOP/s over the device's GEMM peak, the best "
        "of several GEMM sizes: the GPU where there is one, else a CPU stand-in drawn beside the saturation rows, "
        "never judging them) against batch size for the extend engine, prefill and decode of the shared "
        "random-weight Llama-architecture model (transformers), with the paper's fit u(X) = min(u_max, "
        "(X/X_sat)^alpha) per stage, each stage's knee with its interval, and the knee ratios the rows judge."
    ),
    "fig2_placement": (
        "Figure 2 of Trinity as an analytic model (modelled, not measured): coupled, co-located with "
        "prefill, and an independent search pool, from the measured extend times and stated link "
        "latencies."
    ),
    "recall_qps": (
        "recall@10 against queries/s: the extend engine at batch 1, static and continuous batching "
        "(sweeping top-M) beside faiss IndexHNSWFlat (sweeping efSearch), same data and threads; hnswlib "
        "not installed."
    ),
    "latency_load": (
        "p50/p95/p99 latency from the intended arrival and achieved throughput against offered load, "
        "static against continuous batching, heterogeneous requests, Poisson and bursty arrivals (replay "
        "of real searches with measured extend times), with the sustained-load target's p95 bound."
    ),
    "smoothing": (
        "Latency jitter (the spread over a run's windows of each window's p50 and p95), static against "
        "continuous batching, and the smoothing claim's quantity on the CPU replay (the ledger row needs a GPU: drawn, not judged)."
    ),
    "replay_check": (
        "The replay of traced searches against the live engine serving the same arrivals, in each fresh trace "
        "process: the error every serving row's interval carries."
    ),
    "sched_sweep": (
        "The scheduler's open parameters (the paper leaves r_min, r_max, tau_pre, the retrieval interval "
        "delta and the deadline open), swept one at a time at one prefill load: share of prefill retrievals "
        "within their deadline and decode stall fraction, Trinity against FIFO at each value."
    ),
    "lanes": (
        "Lane utilisation of the fixed-shape distance operation against load, static against continuous "
        "batching, and the busy claim's quantity on the CPU replay (the ledger row needs a GPU: drawn, not judged)."
    ),
    "scheduler": (
        "Stage-aware scheduling: prefill p95 wait, share of prefill retrievals within the deadline, "
        "decode stall fraction and emulated decode tokens/s per policy across loads; the control loop's "
        "prefill share r (emulated LLM stages)."
    ),
}
FIGURES = Registry(__name__, DESCRIPTIONS)

"""The ``trinity`` profile section as typed parameters (defaults: experiments/schema/trinity.yaml only)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Graph:
    """The fixed-degree graph (CAGRA): out-degree D, kNN degree K, exact kNN up to exact_max_n vectors on the
    CPU and exact_max_n_cuda on CUDA."""

    degree: int
    knn_degree: int
    exact_max_n: int
    exact_max_n_cuda: int
    ivf_nprobe: int


@dataclass(frozen=True)
class Engine:
    """The extend engine: p parents per extend, capacity slots, chunk lanes per distance-op launch."""

    p: int
    capacity: int
    chunk: int | None
    max_iters: int
    device: str
    threads: int


@dataclass(frozen=True)
class Hnsw:
    M: int
    ef_construction: int
    ef_search: tuple[int, ...]


@dataclass(frozen=True)
class Recall:
    k: int
    top_m: tuple[int, ...]
    modes: tuple[str, ...]
    p_values: tuple[int, ...]
    batch1_queries: int
    batch_queries: int
    repeats: int
    warmup: int
    target_recall: float
    hnsw: Hnsw


@dataclass(frozen=True)
class Class:
    """One request class of the workload: k results from a top-M search, drawn by weight."""

    k: int
    top_m: int
    weight: float


@dataclass(frozen=True)
class Workload:
    classes: tuple[Class, ...]
    prefill_classes: tuple[Class, ...]
    decode_classes: tuple[Class, ...]


@dataclass(frozen=True)
class Burst:
    """Bursty arrivals: burst_factor x the rate for burst_s of every period_s (bench.serving.loadgen)."""

    burst_factor: float
    burst_s: float
    period_s: float


@dataclass(frozen=True)
class LiveCheck:
    load: float
    n_requests: int


@dataclass(frozen=True)
class Load:
    loads: tuple[float, ...]
    claim_load: float
    arrivals: tuple[str, ...]
    burst: Burst
    duration_s: float
    min_requests: int
    repeats: int
    flush_ms: float
    p95_bound_factor: float
    live_check: LiveCheck
    target_ratio: float
    util_chunks: tuple[int, ...]
    target_util: float
    high_load: float


@dataclass(frozen=True)
class Sweepable:
    """The scheduler parameters a sweep may vary, each with the values it takes (None: not swept)."""

    r_min: tuple[float, ...] | None
    r_max: tuple[float, ...] | None
    r: tuple[float, ...] | None
    tau_pre_ms: tuple[float, ...] | None
    delta_tokens: tuple[int, ...] | None
    token_ms: tuple[float, ...] | None
    deadline_factor: tuple[float, ...] | None
    decode_share: tuple[float, ...] | None
    control_ms: tuple[float, ...] | None


@dataclass(frozen=True)
class Sweep:
    load_frac: float
    policies: tuple[str, ...]
    repeats: int
    params: Sweepable


@dataclass(frozen=True)
class Scheduler:
    policies: tuple[str, ...]
    prefill_loads: tuple[float, ...]
    arrival: str
    burst: Burst
    decode_share: float
    delta_tokens: int
    token_ms: float
    deadline_factor: float
    duration_s: float
    repeats: int
    flush_ms: float
    tau_pre_ms: float
    tau_pre_min_ms: float
    tau_pre_max_ms: float
    r: float
    r_min: float
    r_max: float
    r_step: float
    aging_ms: float
    urgent: float
    control_ms: float
    wait_target: float
    stall_target: float
    target_met: float
    fifo_miss: float
    decode_tokens_floor: float
    sweep: Sweep


@dataclass(frozen=True)
class LM:
    d_model: int
    layers: int
    heads: int
    vocab: int


@dataclass(frozen=True)
class Roofline:
    search_batches: tuple[int, ...]
    search_top_m: int
    search_warmup: int
    search_repeats: int
    prefill_batches: tuple[int, ...]
    decode_batches: tuple[int, ...]
    prompt_tokens: int
    decode_context: int
    lm: LM
    lm_warmup: int
    lm_repeats: int
    peak_n: int
    knee_boot: int
    knee_factor: float
    flat_gain: float
    max_doublings: int
    sweep_budget_s: float


@dataclass(frozen=True)
class Placement:
    prefill_nodes: int
    decode_nodes: int
    gpus_per_node: int
    intra_node_us: float
    network_us: float
    prefill_share: float
    loads_x_device: tuple[float, ...]


@dataclass(frozen=True)
class Params:
    enabled: bool
    datasets: tuple[str, ...]
    graph: Graph
    engine: Engine
    trace_queries: int
    trace_calibration: int
    recall: Recall
    workload: Workload
    load: Load
    scheduler: Scheduler
    roofline: Roofline
    placement: Placement

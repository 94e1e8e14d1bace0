"""The ``trinity`` profile section as typed parameters: each key's type, default, bounds and
description (bench.core.declaring.keys), the one source of the section's schema."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.base.errors import ConfigError
from ..core.declaring.keys import key


@dataclass(frozen=True)
class Graph:
    """The fixed-degree graph (CAGRA): out-degree D, kNN degree K, exact kNN up to exact_max_n vectors on the
    CPU and exact_max_n_cuda on CUDA."""

    degree: int = key(32, minimum=2, description="D, fixed out-degree (CAGRA graph_degree)")
    knn_degree: int = key(64, minimum=2, description="K of the kNN graph (CAGRA intermediate degree)")
    exact_max_n: int = key(
        200000,
        minimum=1,
        description="exact kNN graph (faiss flat) up to this N when built on the CPU, IVF-flat beyond",
    )
    exact_max_n_cuda: int = key(
        2000000,
        minimum=1,
        description=("exact kNN graph (tiled matmul + topk on the GPU) up to this N when built on CUDA, IVF-flat "
                     "beyond"),
    )
    ivf_nprobe: int = key(16, minimum=1)


@dataclass(frozen=True)
class Engine:
    """The extend engine: p parents per extend, capacity slots, chunk lanes per distance-op launch."""

    p: int = key(1, description="parents per extend (CAGRA search_width); must be > 0")
    capacity: int = key(64, minimum=1, description="request slots (the captured batch size B)")
    chunk: int | None = key(
        256,
        nullable=True,
        minimum=1,
        description="lanes of one launch of the fixed-shape distance op (null: capacity x p x D)",
    )
    max_iters: int = key(256, minimum=1)
    device: str = key("auto", enum=["auto", "cpu", "cuda"])
    threads: int = key(
        1,
        minimum=1,
        description=("torch (engine, transformer) and faiss (HNSW reference) threads of every trinity step; 1 = "
                     "ann-benchmarks' single-thread convention"),
    )


@dataclass(frozen=True)
class Hnsw:
    M: int = key(16, minimum=2)
    ef_construction: int = key(40, minimum=1)
    ef_search: tuple[int, ...] = key([10, 16, 24, 32, 48, 64, 128], min_items=1, items={"minimum": 1})


@dataclass(frozen=True)
class Recall:
    k: int = key(10, minimum=1)
    top_m: tuple[int, ...] = key([10, 16, 32, 64], min_items=1, items={"minimum": 1})
    modes: tuple[str, ...] = key(
        ["batch1", "static", "continuous"],
        items={"enum": ["batch1", "static", "continuous"]},
        min_items=1,
    )
    p_values: tuple[int, ...] = key(
        [],
        items={"minimum": 1},
        description=("other parents-per-extend values (CAGRA search_width) run in continuous mode over top_m, as "
                     "engine-continuous-p<P>"),
    )
    batch1_queries: int = key(20, minimum=1)
    batch_queries: int = key(256, minimum=1)
    repeats: int = key(2, minimum=1)
    warmup: int = key(1, minimum=0)
    target_recall: float = key(0.95, minimum=0, maximum=1)
    hnsw: Hnsw = key({})


@dataclass(frozen=True)
class Class:
    """One request class of the workload: k results from a top-M search, drawn by weight."""

    k: int = key(minimum=1)
    top_m: int = key(minimum=1)
    weight: float = key(1.0, exclusive_minimum=0)


@dataclass(frozen=True)
class Workload:
    classes: tuple[Class, ...] = key(
        [{"k": 10, "top_m": 16, "weight": 2}, {"k": 10, "top_m": 32}, {"k": 20, "top_m": 64}],
        min_items=1,
    )
    prefill_classes: tuple[Class, ...] = key([{"k": 10, "top_m": 32}, {"k": 20, "top_m": 64}], min_items=1)
    decode_classes: tuple[Class, ...] = key([{"k": 10, "top_m": 16}], min_items=1)


@dataclass(frozen=True)
class Burst:
    """Bursty arrivals: burst_factor x the rate for burst_s of every period_s (bench.serving.loadgen)."""

    burst_factor: float = key(exclusive_minimum=1)
    burst_s: float = key(exclusive_minimum=0)
    period_s: float = key(exclusive_minimum=0)


@dataclass(frozen=True)
class LivePoint:
    """One check point of the replay: an arrival process at an offered load (fraction of capacity)."""

    arrival: str = key(enum=["poisson", "bursty"])
    load: float = key(exclusive_minimum=0)


@dataclass(frozen=True)
class LiveCheck:
    """The replay checked against the live engine: in each fresh process of the ``trace`` step, right after
    it traces, the live engine serves these points and the replay of that process's trace serves the same
    arrivals (the replay's error, which the serving rows' intervals carry)."""

    points: tuple[LivePoint, ...] = key(
        [{"arrival": "bursty", "load": 0.3}, {"arrival": "poisson", "load": 1.0}],
        min_items=1,
        description=("points served live with static and continuous batching: the smoothing claim's setting "
                     "(bursty, load.claim_load) and a high load (lane utilisation, the busy claim)"),
    )
    n_requests: int = key(200, minimum=0, description="requests per live load point (0: no live check)")
    sched_duration_s: float | None = key(
        None,
        nullable=True,
        minimum=0,
        description=("emulated seconds of one live scheduler run (Trinity and FIFO at the judged load); null: the "
                     "scheduler's own duration_s, the runs the rows judge; 0: no live scheduler check"),
    )

    def sched_seconds(self, scheduler_duration_s: float) -> float:
        """The live scheduler run's emulated seconds (the judged runs' own where not set)."""
        return scheduler_duration_s if self.sched_duration_s is None else self.sched_duration_s


@dataclass(frozen=True)
class Load:
    loads: tuple[float, ...] = key([0.1, 0.2, 0.3, 0.4, 0.6, 0.8, 1.0], min_items=1)
    claim_load: float = key(
        0.3,
        exclusive_minimum=0,
        description=("load (fraction of capacity) at which the p95 of static and continuous are compared for the "
                     "paper's smoothing claim"),
    )
    arrivals: tuple[str, ...] = key(["poisson", "bursty"], items={"enum": ["poisson", "bursty"]}, min_items=1)
    burst: Burst = key({"burst_factor": 3.0, "burst_s": 0.1, "period_s": 0.5})
    duration_s: float = key(1.5, exclusive_minimum=0, description="emulated seconds of arrivals per run")
    min_requests: int = key(200, minimum=10)
    repeats: int = key(3, minimum=1)
    flush_ms: float = key(2.0, minimum=0)
    p95_bound_factor: float = key(
        2.0,
        exclusive_minimum=1,
        description="p95 bound = factor x continuous p95 at the lowest load",
    )
    live_check: LiveCheck = key({})
    target_ratio: float = key(1.5)
    util_chunks: tuple[int, ...] = key(
        [64, 128, 256, 512, 1024, 2048],
        min_items=1,
        items={"minimum": 1},
        description="distance-op sizes for the what-if lane utilisation of the same extends",
    )
    target_util: float = key(0.9)
    jitter_window: int = key(
        50,
        minimum=5,
        description=("requests per window (in arrival order) of the smoothing statistic: the spread over a run's "
                     "windows of each window's p50 and p95"),
    )
    high_load: float = key(
        0.9,
        exclusive_minimum=0,
        description="loads >= this fraction of capacity count as high for lane utilisation",
    )


@dataclass(frozen=True)
class Sweepable:
    """The scheduler parameters a sweep may vary, each with the values it takes (None: not swept)."""

    r_min: tuple[float, ...] | None = key(items={"minimum": 0, "maximum": 1}, min_items=1)
    r_max: tuple[float, ...] | None = key(items={"minimum": 0, "maximum": 1}, min_items=1)
    r: tuple[float, ...] | None = key(items={"minimum": 0, "maximum": 1}, min_items=1)
    tau_pre_ms: tuple[float, ...] | None = key(items={"minimum": 0}, min_items=1)
    delta_tokens: tuple[int, ...] | None = key(items={"minimum": 1}, min_items=1)
    token_ms: tuple[float, ...] | None = key(items={"exclusiveMinimum": 0}, min_items=1)
    deadline_factor: tuple[float, ...] | None = key(items={"exclusiveMinimum": 0}, min_items=1)
    decode_share: tuple[float, ...] | None = key(items={"exclusiveMinimum": 0}, min_items=1)
    control_ms: tuple[float, ...] | None = key(items={"exclusiveMinimum": 0}, min_items=1)


@dataclass(frozen=True)
class Sweep:
    load_frac: float = key(0.7, exclusive_minimum=0)
    policies: tuple[str, ...] = key(
        ["fifo", "trinity"],
        items={"enum": ["fifo", "prefill_first", "decode_first", "fixed_r", "trinity"]},
        min_items=1,
    )
    repeats: int = key(2, minimum=1)
    params: Sweepable = key({})


@dataclass(frozen=True)
class Scheduler:
    policies: tuple[str, ...] = key(
        ["fifo", "prefill_first", "decode_first", "fixed_r", "trinity"],
        items={"enum": ["fifo", "prefill_first", "decode_first", "fixed_r", "trinity"]},
        min_items=1,
    )
    prefill_loads: tuple[float, ...] = key([0.2, 0.4, 0.5, 0.6, 0.7, 0.8], min_items=1)
    arrival: str = key("poisson", enum=["poisson", "bursty"])
    burst: Burst = key({"burst_factor": 3.0, "burst_s": 0.1, "period_s": 0.5})
    decode_share: float = key(
        0.5,
        exclusive_minimum=0,
        description="decode retrieval load (never stalled) as a share of the engine's capacity",
    )
    delta_tokens: int = key(16, minimum=1)
    token_ms: float = key(20.0, exclusive_minimum=0)
    deadline_factor: float = key(
        1.5,
        exclusive_minimum=0,
        description="L_pre,max = factor x prefill search time at full occupancy",
    )
    duration_s: float = key(1.5, exclusive_minimum=0)
    repeats: int = key(3, minimum=1)
    flush_ms: float = key(2.0, minimum=0)
    tau_pre_ms: float = key(0.5, minimum=0)
    tau_pre_min_ms: float = key(0.1, minimum=0)
    tau_pre_max_ms: float = key(2.0, minimum=0)
    r: float = key(0.5, minimum=0, maximum=1)
    r_min: float = key(0.25, minimum=0, maximum=1)
    r_max: float = key(0.9, minimum=0, maximum=1)
    r_step: float = key(0.05, exclusive_minimum=0)
    aging_ms: float = key(200.0, minimum=0, description="decode wait after which it goes before non-urgent prefill")
    urgent: float = key(
        0.25,
        minimum=0,
        description="prefill slack below this fraction of L_pre,max is urgent (served first)",
    )
    control_ms: float = key(200.0, exclusive_minimum=0)
    wait_target: float = key(
        0.9,
        exclusive_minimum=0,
        description="prefill p95 wait (retrieval latency) target as a fraction of L_pre,max",
    )
    stall_target: float = key(0.3, exclusive_minimum=0)
    target_met: float = key(0.99)
    fifo_miss: float = key(0.05)
    judged_load: float | None = key(
        None,
        nullable=True,
        exclusive_minimum=0,
        description=("prefill load (one of prefill_loads) at which the deadline, stall and decode-token rows are "
                     "judged, with FIFO missing > fifo_miss of deadlines there as their premise; null: the lowest "
                     "listed load whose total (prefill + decode_share) exceeds the engine's capacity, the mildest "
                     "overload (past it, any policy that meets prefill deadlines must cut decode by the excess)"),
    )
    decode_tokens_floor: float = key(
        0.9,
        description="'without starving decode': Trinity's decode tokens/s at least this share of FIFO's",
    )
    sweep: Sweep = key(
        {},
        description=("the parameters the paper leaves open, swept one at a time around the values above at one "
                     "prefill load (the others fixed): each value runs every listed policy for `repeats` seeds "
                     "(rows with row = sweep). An empty `params` sweeps nothing."),
    )

    def judged(self) -> float | None:
        """The prefill load the scheduler rows are judged at: ``judged_load``, or the lowest listed load whose
        total with ``decode_share`` exceeds capacity (None where none does). A ``judged_load`` not among
        ``prefill_loads`` is a configuration error."""
        loads = sorted(self.prefill_loads)
        if self.judged_load is not None:
            if not any(abs(self.judged_load - x) < 1e-9 for x in loads):
                raise ConfigError(f"trinity.scheduler.judged_load={self.judged_load}: not one of prefill_loads "
                                  f"{loads}")
            return float(self.judged_load)
        over = [x for x in loads if x + self.decode_share > 1 + 1e-9]
        return float(over[0]) if over else None


@dataclass(frozen=True)
class LM:
    d_model: int = key(minimum=8)
    layers: int = key(minimum=1)
    heads: int = key(minimum=1)
    vocab: int = key(minimum=2)


@dataclass(frozen=True)
class Roofline:
    search_batches: tuple[int, ...] = key([1, 2, 4, 8, 16, 32, 64, 128, 256], min_items=1, items={"minimum": 1})
    search_top_m: int = key(64, minimum=1)
    search_warmup: int = key(2, minimum=0)
    search_repeats: int = key(20, minimum=1, description="timed extends per batch, split over the fresh processes "
                              "(an extend takes milliseconds: enough runs per process for the end-gain interval)")
    prefill_batches: tuple[int, ...] = key([1, 2, 4, 8, 16], min_items=1, items={"minimum": 1})
    decode_batches: tuple[int, ...] = key([1, 2, 4, 8, 16, 32, 64, 128], min_items=1, items={"minimum": 1})
    prompt_tokens: int = key(32, minimum=1)
    decode_context: int = key(64, minimum=1)
    lm: LM = key({"d_model": 256, "layers": 2, "heads": 4, "vocab": 8000})
    lm_warmup: int = key(1, minimum=0)
    lm_repeats: int = key(6, minimum=1, description="timed prefill passes / decode steps per batch, split over the "
                          "fresh processes (at least 3 each in tiny's 2, so a process's median is not one run)")
    peak_sizes: tuple[int, ...] = key(
        [64, 128, 256, 512, 1024],
        min_items=1,
        items={"minimum": 16},
        description=("n of the n x n float32 GEMMs timed for the peak: the peak is the best of them (a GEMM's "
                     "FLOP/s depends on its size and the caches)"),
    )
    knee_boot: int = key(50, minimum=1, description="bootstrap resamples of the knee (refits) in the claims")
    knee_factor: float = key(
        2.0,
        exclusive_minimum=1,
        description="'saturates at a different batch size': knees differ by at least this factor",
    )
    flat_gain: float = key(
        0.1,
        exclusive_minimum=0,
        description=("a stage's gain has flattened when doubling its batch raises its median utilisation by at "
                     "most this share; the sweep doubles the largest batch until then"),
    )
    max_doublings: int = key(
        4,
        minimum=0,
        description="batch doublings the sweep may add past each stage's listed batches while the gain still rises",
    )
    sweep_budget_s: float = key(
        20.0,
        exclusive_minimum=0,
        description=("seconds of timed runs each stage's added doublings may spend; a stage still rising when it "
                     "is spent is recorded as not flattened"),
    )


@dataclass(frozen=True)
class Placement:
    prefill_nodes: int = key(4, minimum=1)
    decode_nodes: int = key(4, minimum=1)
    gpus_per_node: int = key(8, minimum=2)
    intra_node_us: float = key(10.0, minimum=0)
    network_us: float = key(50.0, minimum=0)
    prefill_share: float = key(0.3, minimum=0, maximum=1)
    loads_x_device: tuple[float, ...] = key([0.25, 0.5, 1, 2, 4, 8], min_items=1)


@dataclass(frozen=True)
class Params:
    """Trinity (Liu and Qian 2025): an extend-step graph search engine with static and continuous batching, the
    stage-aware prefill/decode scheduler and its baselines, Figure 1's roofline and Figure 2's placements."""

    enabled: bool = key(True)
    datasets: tuple[str, ...] = key(
        ["sift-like"],
        min_items=1,
        description="names from the profile's datasets section (the first one also drives roofline and placement)",
    )
    graph: Graph = key({})
    engine: Engine = key({})
    trace_queries: int = key(300, minimum=1, description="queries traced per top-M for the serving steps")
    trace_calibration: int = key(
        20,
        minimum=0,
        description=("calibration rounds: each fills the engine level by level to every launch count of the distance "
                     "op, timing 2 extends at each (the replay's cost of a partly full engine relative to a full one)"),
    )
    recall: Recall = key({})
    workload: Workload = key({})
    load: Load = key({})
    scheduler: Scheduler = key({})
    roofline: Roofline = key({})
    placement: Placement = key({})

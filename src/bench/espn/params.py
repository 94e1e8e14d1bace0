"""The ``espn`` profile section as typed parameters (defaults: experiments/schema/espn.yaml only).

ESPN (Shrestha, Reddy, Li): the build (sections 3.1, 4.1, 4.2), the prefetcher's step and delta (equation 3),
the memory budgets and back ends of Tables 4/5, the batch sweep of Figures 8-10 and the reader-vs-fio reference.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Index:
    """The IVF index over the CLS vectors: IVF-Flat (MS MARCO v1 in the paper) or IVF-PQ (v2)."""

    kind: str
    nlist: int
    m: int
    nbits: int
    train_size: int | None


@dataclass(frozen=True)
class EmulatedSsd:
    """Optional e2e configurations on an emulated slower SSD: per-read latency on a FUSE pass-through
    (queue depth kept) or a read-IOPS cap on the table's disk (only as a rated peak well above QD1)."""

    enabled: bool
    kind: str
    latencies_us: tuple[float, ...]
    threads: int
    max_readahead: int
    qd_reads: int
    read_iops: int
    budgets: tuple[float, ...]
    backends: tuple[str, ...]


@dataclass(frozen=True)
class Params:
    enabled: bool
    datasets: tuple[str, ...]
    encoder: str
    encoder_fallback: str | None
    empty_passages: str
    filler_passages: int
    filler_spread: float
    block_mode: str
    index: Index
    k: int
    nprobe: int
    nprobe_sweep: tuple[int, ...]
    hitrate_nprobe: tuple[int, ...]
    prefetch_steps: tuple[float, ...]
    prefetch_step: float
    prefetch_delta: int | None
    batch_prefetch_step: float
    rerank_counts: tuple[int, ...]
    partial_rerank: int
    bow_weight: float
    memory_budgets: tuple[float, ...]
    memory_budgets_mib: tuple[float, ...]
    budget_mechanism: str
    cgroup_headroom_mib: float
    cgroup_headroom_io_mib: float
    backends: tuple[str, ...]
    report_not_run: tuple[str, ...]
    e2e_queries: int
    repeats: int
    warmup: int
    warmup_queries: int | None
    batch_sizes: tuple[int, ...]
    batch_repeats: int
    io_depth: int
    iops_depths: tuple[int, ...]
    iops_reads: int
    fio_runtime_s: int
    device: str
    maxsim_threads: int
    io_engine: str
    emulated_ssd: EmulatedSsd
    prefetch_engine: str
    prefetch_chunk: int
    steady_tol: float
    steady_max_passes: int
    e2e_second_stage: bool

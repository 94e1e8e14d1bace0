"""The ``chameleon`` profile section as typed parameters (defaults: experiments/schema/chameleon.yaml only)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fpga:
    """One ChamVS memory node (section 4.1): DDR channels x AXI bytes per cycle, clock, network."""

    channels: int
    axi_bytes: int
    freq_mhz: float
    rtt_us: float
    link_gbps: float


@dataclass(frozen=True)
class Scan:
    """The torch PQ scan against faiss's scan of the same lists (section 3.2's GB/s per core)."""

    n_queries: int
    repeats: int
    threads: int


@dataclass(frozen=True)
class Queue:
    """The approximate hierarchical priority queue (section 4.2, Figures 7 and 8)."""

    k: int
    fig7_queues: int
    units: tuple[int, ...]
    sim_queries: int
    sim_max_vectors: int
    dataset: str


@dataclass(frozen=True)
class Nodes:
    """Disaggregated memory nodes over TCP (sections 3, 4.3): local processes or ``addresses``."""

    dataset: str
    n_nodes: int
    host: str
    addresses: tuple[str, ...]
    node_threads: int
    timeout_s: float
    batch_sizes: tuple[int, ...]
    n_batches: int
    late_delay_s: float
    late_timeout_s: float


@dataclass(frozen=True)
class LM:
    """One RALM model of Table 2 (layers scaled by small profiles); ``enc_layers`` 0 for decoder-only."""

    arch: str
    d_model: int
    layers: int
    enc_layers: int
    heads: int
    k: int
    intervals: tuple[int, ...]


@dataclass(frozen=True)
class Ralm:
    """RALM serving (section 6.3, Figures 10-12): model size (S, L) -> dataset, models, configurations."""

    enabled: bool
    datasets: dict[str, str]
    models: dict[str, LM]
    vocab: int
    retrieved_tokens: int
    seq_len: int
    throughput_batch: dict[str, int]
    repeats: int
    configs: tuple[str, ...]


@dataclass(frozen=True)
class Energy:
    batch_sizes: tuple[int, ...]


@dataclass(frozen=True)
class Params:
    enabled: bool
    datasets: tuple[str, ...]
    pq_m: dict[str, int]
    nlist: int | None
    train_size: int | None
    nprobe: int
    k: int
    configs: tuple[str, ...]
    batch_sizes: tuple[int, ...]
    warmup_batches: int
    n_batches: int
    throughput_runs: int
    fpga: Fpga
    scan: Scan
    queue: Queue
    nodes: Nodes
    ralm: Ralm
    energy: Energy

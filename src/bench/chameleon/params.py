"""The ``chameleon`` profile section as typed parameters: each key's type, default, bounds and description
(bench.core.declaring.keys), the one source of the section's schema."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..core.declaring.keys import key

# the search configurations of section 6 (exact-*: brute force in torch, the anchor an ANN engine must beat)
Config = Literal["cpu", "cpu-gpu", "gpu", "torch-cpu", "torch-cuda", "fpga-cpu", "fpga-gpu", "exact-cpu", "exact-cuda"]
RalmConfig = Literal["cpu", "cpu-gpu", "gpu", "torch-cpu", "torch-cuda", "fpga-cpu", "fpga-gpu"]
# Table 2's models
TABLE2 = {
    "Dec-S": {"arch": "dec", "d_model": 512, "layers": 24, "heads": 8, "k": 100, "intervals": [1]},
    "Dec-L": {"arch": "dec", "d_model": 1024, "layers": 96, "heads": 16, "k": 100, "intervals": [1]},
    "EncDec-S": {"arch": "encdec", "d_model": 512, "layers": 24, "enc_layers": 2, "heads": 8, "k": 10,
                 "intervals": [8, 64, 512]},
    "EncDec-L": {"arch": "encdec", "d_model": 1024, "layers": 96, "enc_layers": 2, "heads": 16, "k": 10,
                 "intervals": [8, 64, 512]},
}
_S_L = {"S": {"type": "string"}, "L": {"type": "string"}}


@dataclass(frozen=True)
class Fpga:
    """One ChamVS memory node (section 4.1): DDR channels x AXI bytes per cycle, clock, network. The first
    three left null are the paper's (4 channels, 64 B, 140 MHz: ``system.fpga_model.PAPER_INPUTS``)."""

    channels: int | None = key(None, minimum=1, description="DDR channels (null: the paper's 4)")
    axi_bytes: int | None = key(None, minimum=1, description="AXI bytes per cycle per channel (null: the paper's 64)")
    freq_mhz: float | None = key(None, exclusive_minimum=0, description="accelerator clock (null: the paper's 140 MHz)")
    rtt_us: float = key(20.0, minimum=0, description='assumed network round trip per batch')
    link_gbps: float = key(100.0, exclusive_minimum=0)


@dataclass(frozen=True)
class Scan:
    """The torch PQ scan against faiss's scan of the same lists (section 3.2's GB/s per core)."""

    n_queries: int = key(200, minimum=1)
    repeats: int = key(5, minimum=1)
    threads: int = key(1, minimum=1, description='1 = per-core throughput')


@dataclass(frozen=True)
class Queue:
    """The approximate hierarchical priority queue (section 4.2, Figures 7 and 8)."""

    k: int = key(100, minimum=1)
    fig7_queues: int = key(16, minimum=1)
    units: tuple[int, ...] = key([2, 4, 8, 16, 32, 64], items={'minimum': 1})
    sim_queries: int = key(500, minimum=1)
    sim_max_vectors: int = key(20000, minimum=100)
    dataset: str = key('sift-like', description='real PQ distances for the simulation')


@dataclass(frozen=True)
class Nodes:
    """Disaggregated memory nodes over TCP (sections 3, 4.3): local processes or ``addresses``."""

    dataset: str = key('sift-like')
    n_nodes: int = key(2, minimum=1)
    host: str = key('127.0.0.1')
    addresses: tuple[str, ...] = key([], items={"pattern": "^.+:[0-9]+$"}, description=(
        "host:port of running nodes (`python -m bench.chameleon.system.memory_node`); empty = start N local ones"))
    node_threads: int = key(1, minimum=1)
    timeout_s: float = key(10.0, exclusive_minimum=0)
    batch_sizes: tuple[int, ...] = key([1, 16, 128], items={'minimum': 1})
    n_batches: int = key(20, minimum=1)
    late_delay_s: float = key(2.0, minimum=0)
    late_timeout_s: float = key(0.5, exclusive_minimum=0)


@dataclass(frozen=True)
class LM:
    """One RALM model of Table 2 (layers scaled by small profiles); ``enc_layers`` 0 for decoder-only."""

    arch: Literal["dec", "encdec"] = key()
    d_model: int = key(minimum=8)
    layers: int = key(minimum=1)
    enc_layers: int = key(0, minimum=0, description='encoder layers (0: decoder-only)')
    heads: int = key(minimum=1)
    k: int = key(minimum=1)
    intervals: tuple[int, ...] = key(items={'minimum': 1}, min_items=1)


@dataclass(frozen=True)
class Ralm:
    """RALM serving (section 6.3, Figures 10-12): model size (S, L) -> dataset, models, configurations."""

    enabled: bool = key(True)
    datasets: dict[str, str] = key({"S": "syn-512", "L": "syn-1024"}, additionalProperties=False, properties=_S_L)
    models: dict[str, LM] = key(TABLE2, description="Table 2 (layers scaled down by small profiles)")
    vocab: int = key(50000, minimum=2)
    retrieved_tokens: int = key(64, minimum=1)
    seq_len: int = key(512, minimum=2)
    throughput_batch: dict[str, int] = key({"S": 64, "L": 8}, additionalProperties=False, properties={
        "S": {"type": "integer", "minimum": 1}, "L": {"type": "integer", "minimum": 1}})
    repeats: int = key(3, minimum=1)
    configs: tuple[RalmConfig, ...] = key(["cpu", "cpu-gpu", "fpga-cpu", "fpga-gpu"])


@dataclass(frozen=True)
class Energy:
    batch_sizes: tuple[int, ...] = key([1, 4, 16], items={'minimum': 1})


@dataclass(frozen=True)
class Params:
    """Chameleon study: IVF-PQ search on CPU / CPU+GPU / GPU / torch kernel / modelled FPGA memory nodes,
    disaggregated memory nodes over TCP, approximate priority queue, RALM serving (Figures 7-12, Table 5)."""

    enabled: bool = key(True)
    datasets: tuple[str, ...] = key(["sift-like", "deep-like", "syn-512", "syn-1024"], min_items=1, unique_items=True,
                                    description="the datasets searched (names from the profile's datasets "
                                                "section), each with a PQ m in pq_m")
    pq_m: dict[str, int] = key(
        {"sift-like": 16, "deep-like": 16, "syn-512": 32, "syn-1024": 64}, additionalProperties={"minimum": 1},
        description="dataset name -> PQ sub-quantizers m (the paper: SIFT and Deep m=16, SYN-512 m=32, SYN-1024 "
                    "m=64). Every dataset the study uses (datasets, queue.dataset, nodes.dataset, ralm.datasets) "
                    "needs one.\n")
    nlist: int | None = key(None, minimum=1, description='null: round(sqrt(N)) per dataset')
    train_size: int | None = key(
        None, minimum=256, description="training sample (null: faiss's 39 x max(nlist, 256))")
    nprobe: int = key(32, minimum=1)
    k: int = key(100, minimum=1)
    configs: tuple[Config, ...] = key(list(Config.__args__), min_items=1, description=(
        "exact-cpu / exact-cuda: exact brute force in torch (matmul + top-K), the anchor an ANN engine must beat"))
    batch_sizes: tuple[int, ...] = key([1, 2, 4, 8, 16, 32, 64, 128], items={'minimum': 1}, min_items=1)
    warmup_batches: int = key(1, minimum=0)
    n_batches: int = key(100, minimum=1, description='timed batches per batch size (authors 100)')
    throughput_runs: int = key(5, minimum=1)
    fpga: Fpga = key({})
    scan: Scan = key({})
    queue: Queue = key({})
    nodes: Nodes = key({})
    ralm: Ralm = key({})
    energy: Energy = key({})

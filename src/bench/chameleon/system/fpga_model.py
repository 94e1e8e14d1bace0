"""Performance model of one ChamVS near-memory accelerator node (paper sections 4.1, 4.3 and 6.2).

Nothing here is measured: every value this module produces is *modelled* and is labelled so.

One memory node (an FPGA with DDR channels) scans the PQ codes of the probed lists of each query:

- PQ decoding units: ``units = channels * axi_bytes / m`` (4 x 64 B / 32 = 8 for m = 32); each unit
  takes one m-byte code per clock cycle; a list's vectors are spread evenly over the channels, so a
  list of n vectors on the node takes ``ceil(n / units)`` cycles;
- per probed list, a distance lookup table of m x 256 entries is built and forwarded along the units:
  ``list_overhead_cycles_per_subspace * m`` cycles (the one calibrated parameter);
- per query, the K-selection drain: the L2 queue ingests the ``2 * units`` L1 queues of length
  ``l1_length`` at one element every two cycles (systolic queue, section 4.2.1) plus K outputs;
- per batch, the network: a round trip plus the bytes of queries, list ids and results at the link rate.

The queries of a batch are processed one after another (the accelerator pipeline is per query); the
end-to-end latency of a batch (host index scan, per-batch fixed cost, network, pipelined node scan) is
``batch_latency_seconds`` below. With
several nodes, each holds ``1 / n_nodes`` of every list (section 4.3) and the nodes work in parallel.

The model is driven by per-query list lengths: the real ones of our index, or, for the authors'
billion-scale points, the expected ones (``N * nprobe / nlist`` spread over the probed lists).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...core.base.errors import ConfigError
from . import priority_queue

# Assumptions (not calibrated): network of the U250's 100 Gb/s port and a software coordinator hop.
DEFAULT_RTT_S = 20e-6
DEFAULT_LINK_GBPS = 100.0


@dataclasses.dataclass(frozen=True)
class FPGANode:
    m: int
    freq_mhz: float = 140.0
    channels: int = 4
    axi_bytes: int = 64
    k: int = 100
    list_overhead_cycles_per_subspace: float = 16.0
    rtt_s: float = DEFAULT_RTT_S
    link_gbps: float = DEFAULT_LINK_GBPS

    def __post_init__(self):
        if self.m < 1 or (self.channels * self.axi_bytes) % self.m:
            raise ConfigError(f"m={self.m} must divide channels x AXI width = {self.channels * self.axi_bytes}")
        if self.freq_mhz <= 0:
            raise ConfigError(f"clock frequency must be positive, got {self.freq_mhz} MHz")

    @property
    def units(self) -> int:
        return self.channels * self.axi_bytes // self.m

    @property
    def l1_length(self) -> int:
        return priority_queue.analytic_l1_length(self.units, self.k)

    @property
    def hz(self) -> float:
        return self.freq_mhz * 1e6

    def query_cycles(self, node_list_sizes: np.ndarray) -> np.ndarray:
        """Cycles per query given the sizes (nq, nprobe) of the probed lists' shares on this node."""
        s = np.atleast_2d(np.asarray(node_list_sizes, dtype=np.float64))
        scan = np.ceil(s / self.units).sum(1)
        lut = s.shape[1] * self.list_overhead_cycles_per_subspace * self.m
        kselect = 2 * (2 * self.units * self.l1_length) + self.k
        return scan + lut + kselect

    def network_seconds(self, nq: int, dim: int, nprobe: int) -> float:
        bytes_ = nq * (dim * 4 + nprobe * 4) + nq * self.k * (8 + 4)
        return self.rtt_s + bytes_ * 8 / (self.link_gbps * 1e9)

    def batch_seconds(self, list_sizes: np.ndarray, dim: int, n_nodes: int = 1) -> dict[str, float]:
        """Modelled seconds of one batch (nq, nprobe list sizes of the whole index) on ``n_nodes`` nodes."""
        s = np.atleast_2d(np.asarray(list_sizes, dtype=np.float64))
        if n_nodes < 1:
            raise ConfigError(f"n_nodes must be >= 1, got {n_nodes}")
        per_node = np.ceil(s / n_nodes)
        scan_s = float(self.query_cycles(per_node).sum() / self.hz)
        net_s = self.network_seconds(s.shape[0], dim, s.shape[1])
        return {"fpga_s": scan_s, "network_s": net_s, "total_s": scan_s + net_s}

    def per_query_seconds(self, list_sizes: np.ndarray, n_nodes: int = 1) -> np.ndarray:
        s = np.atleast_2d(np.asarray(list_sizes, dtype=np.float64))
        return self.query_cycles(np.ceil(s / n_nodes)) / self.hz

    def scan_gbps(self) -> float:
        """Peak PQ-code bandwidth of the decoding units (GB/s)."""
        return self.units * self.m * self.hz / 1e9


def expected_list_sizes(n_vectors: float, nlist: int, nprobe: int, nq: int = 1, skew: float = 1.0) -> np.ndarray:
    """Probed-list sizes for an index we do not hold: ``skew * N / nlist`` per probed list."""
    return np.full((nq, nprobe), skew * n_vectors / nlist)


def calibrate(m: int, freq_mhz: float, n_vectors: float, nlist: int, nprobe: int, n_queries: int,
              measured_s: float, skew: float = 1.0, **node_kw) -> FPGANode:
    """Solve the per-list overhead so that the model reproduces one measured point exactly."""
    base = FPGANode(m=m, freq_mhz=freq_mhz, list_overhead_cycles_per_subspace=0.0, **node_kw)
    sizes = expected_list_sizes(n_vectors, nlist, nprobe, 1, skew)
    cycles0 = float(base.query_cycles(sizes)[0])
    target = measured_s / n_queries * base.hz
    per = (target - cycles0) / (nprobe * m)
    if per < 0 or not math.isfinite(per):
        raise ConfigError(f"calibration point is faster than the decoding units allow (overhead {per:.1f} < 0)")
    return dataclasses.replace(base, list_overhead_cycles_per_subspace=per)


# --------------------------------------------------------------------------- end-to-end batch latency
# What one measured latency of the authors' FPGA runs contains (paper section 3, steps 2-8; archived
# latency = wall clock around one batch's search call on the coordinator's client):
#   1. the IVF index scan (coarse quantizer) on the GPU (FPGA-GPU) or on the 8-core CPU (FPGA-CPU);
#   2. per-batch host work: client -> coordinator -> memory nodes over TCP, result aggregation, the
#      round trips and the pipeline fill/drain of the node (first LUT, last K-selection drain);
#   3. the node's scan of the B queries, pipelined: once full, the node is the bottleneck and each further
#      query costs its steady-state service time (the same per-query time as the throughput model).
# So latency(B) = fixed + index_scan(B) + network(B) + B x service; it is not B x latency(1).
# Assumption (not calibrated): the CPU's sgemm rate for the coarse quantizer of a batch, for the authors'
# 8-core EPYC 7313 (AVX2, 2 FMA x 8 fp32 lanes = 32 flop/cycle x 3.0 GHz x 8 cores = 768 GFLOP/s peak),
# at 50% of peak.
DEFAULT_CPU_GFLOPS = 384.0


@dataclasses.dataclass(frozen=True)
class HostPath:
    """The non-FPGA part of one batch's latency (per-batch fixed cost and the IVF index scan)."""
    fixed_s: float                 # calibrated: per-batch host, coordinator and pipeline fill/drain time
    cpu_centroid_gbps: float       # calibrated: the CPU streams the nlist x d fp32 centroids once per batch
    cpu_gflops: float = DEFAULT_CPU_GFLOPS

    def index_scan_seconds(self, on: str, nq: int, nlist: int, dim: int) -> float:
        """Coarse quantizer of a batch: ~0 on the GPU (folded into fixed_s); table read + sgemm on the CPU."""
        if on == "gpu":
            return 0.0
        if on != "cpu":
            raise ConfigError(f"index scan runs on 'cpu' or 'gpu', not {on!r}")
        return nlist * dim * 4 / (self.cpu_centroid_gbps * 1e9) + 2.0 * nq * nlist * dim / (self.cpu_gflops * 1e9)


def batch_latency_seconds(node: FPGANode, host: HostPath, list_sizes: np.ndarray, dim: int, nlist: int,
                          index_on: str, n_nodes: int = 1) -> dict[str, float]:
    """Modelled end-to-end latency of one batch: fixed + index scan + network + pipelined node scan."""
    s = np.atleast_2d(np.asarray(list_sizes, dtype=np.float64))
    nodes = node.batch_seconds(s, dim, n_nodes)
    idx = host.index_scan_seconds(index_on, s.shape[0], nlist, dim)
    return {"host_fixed_s": host.fixed_s, "index_scan_s": idx, "network_s": nodes["network_s"],
            "fpga_s": nodes["fpga_s"], "total_s": host.fixed_s + idx + nodes["total_s"]}


def calibrate_host(node: FPGANode, gpu_batch1_s: float, cpu_batch1_s: float, n_vectors: float, nlist: int,
                   nprobe: int, dim: int, n_nodes: int = 1, cpu_gflops: float = DEFAULT_CPU_GFLOPS) -> HostPath:
    """Solve the two host parameters from the batch-1 latency of one configuration, FPGA-GPU and FPGA-CPU.

    The GPU point gives the per-batch fixed cost (its index scan is folded into it); the CPU point of the
    same dataset then gives the CPU's centroid-streaming bandwidth (the only other difference).
    """
    sizes = expected_list_sizes(n_vectors, nlist, nprobe, 1)
    node_s = node.batch_seconds(sizes, dim, n_nodes)["total_s"]
    fixed = gpu_batch1_s - node_s
    cpu_idx = cpu_batch1_s - fixed - node_s - 2.0 * nlist * dim / (cpu_gflops * 1e9)
    if fixed < 0 or cpu_idx <= 0:
        raise ConfigError(f"host calibration impossible: fixed {fixed * 1e3:.3f} ms, CPU index scan "
                          f"{cpu_idx * 1e3:.3f} ms")
    return HostPath(fixed_s=fixed, cpu_centroid_gbps=nlist * dim * 4 / cpu_idx / 1e9, cpu_gflops=cpu_gflops)

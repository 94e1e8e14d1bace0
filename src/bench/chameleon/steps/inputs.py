"""What several Chameleon steps read (section 6.2): a dataset and its IVF-PQ index, the index's shape
(nlist, PQ m) for a dataset, the batch protocol, and the ChamVS node and host path the study uses, each
calibrated on the authors' archived points (``paper_values``) from the profile's ``fpga`` section.
Not a step: :class:`bench.core.declaring.study.Steps` skips this module."""
from __future__ import annotations

import dataclasses
import math

from ...ann import ivf as ivf_index
from ...core.base.errors import ConfigError
from ...core.measuring.step import Context
from ...data import prepared
from .. import paper_values
from ..params import Fpga, Params
from ..system import fpga_model

PROTOCOL = ("one warm-up batch (timed, recorded with phase=warmup) then n_batches timed batches per "
            "batch size, queries taken cyclically from the query set; wall-clock perf_counter around "
            "the search call, CUDA synchronised; explicit thread count")


def load(ctx: Context):
    """The dataset and its index (``--input manifest=`` and ``--input index=``)."""
    return prepared.load_vectors(ctx.input("manifest")), ivf_index.load(ctx.input("index"))


def auto_nlist(n: int) -> int:
    return max(1, int(round(math.sqrt(n))))


@dataclasses.dataclass(frozen=True)
class IndexShape:
    nlist: int
    m: int


def index_shape(p: Params, dataset: str, n_base: int) -> IndexShape:
    """nlist (the profile's, else round(sqrt(N))) and the dataset's PQ m (``pq_m``)."""
    if dataset not in p.datasets:
        raise ConfigError(f"chameleon: dataset {dataset!r} is not in chameleon.datasets {list(p.datasets)}")
    if dataset not in p.pq_m:
        raise ConfigError(f"chameleon.pq_m: no PQ m for dataset {dataset!r} (given: {sorted(p.pq_m)})")
    return IndexShape(nlist=int(p.nlist or auto_nlist(n_base)), m=int(p.pq_m[dataset]))


def fpga_node(f: Fpga, m: int, freq_mhz: float | None = None) -> fpga_model.FPGANode:
    """The node model for PQ ``m`` at ``freq_mhz`` (default: the profile's clock), its per-list overhead
    calibrated on the authors' reference point (SIFT m=32 build, 10,000 queries in 12.69 s at 117 MHz)."""
    ref = paper_values.FPGA_REFERENCE
    kw = dict(channels=f.channels, axi_bytes=f.axi_bytes, rtt_s=f.rtt_us * 1e-6, link_gbps=f.link_gbps)
    cal = fpga_model.calibrate(ref["m"], ref["freq_mhz"], ref["n_vectors"], ref["nlist"], ref["nprobe"],
                               ref["n_queries"], ref["seconds"], **kw)
    return fpga_model.FPGANode(m=m, freq_mhz=f.freq_mhz if freq_mhz is None else freq_mhz,
                               list_overhead_cycles_per_subspace=cal.list_overhead_cycles_per_subspace, **kw)


def paper_node(f: Fpga, index: str) -> fpga_model.FPGANode:
    """The node of one of the authors' builds (``IVF...,PQ<m>``), at that build's clock."""
    m = int(index.split("PQ")[1])
    return fpga_node(f, m, paper_values.BUILD_FREQ_MHZ.get(m, paper_values.PAPER_FREQ_MHZ))


def host_path(f: Fpga) -> fpga_model.HostPath:
    """The per-batch host cost of the authors' FPGA systems (their coordinator, host software and pipeline
    fill/drain), calibrated on their RALM-S batch-1 latencies (``LATENCY_CALIBRATION``). Added to our own
    fpga-* latencies so that they carry the same fixed cost as the paper's measurements (modelled)."""
    lat = paper_values.latency()
    lc = paper_values.LATENCY_CALIBRATION

    def point(arch):
        return lat[(lat.dataset == lc["dataset"]) & (lat.arch == arch) & (lat.batch_size == lc["batch_size"])].iloc[0]

    g1, c1 = point(lc["gpu_arch"]), point(lc["cpu_arch"])
    return fpga_model.calibrate_host(paper_node(f, g1["index"]), g1.median_ms / 1e3, c1.median_ms / 1e3,
                                     paper_values.paper_n_vectors(lc["dataset"]), paper_values.PAPER_NLIST,
                                     int(g1.nprobe), paper_values.paper_dim(lc["dataset"]), int(g1.n_fpga))

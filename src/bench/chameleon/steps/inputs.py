"""What several Chameleon steps read (section 6.2): a dataset and its IVF-PQ index, the index's shape
(nlist, PQ m) for a dataset, the batch protocol (with its watch for batches our threads were preempted in),
and the ChamVS node and host path the study uses, each calibrated on the authors' archived points
(``paper_values``) from the profile's ``fpga`` section.
Not a step: :class:`bench.core.declaring.study.Steps` skips this module."""
from __future__ import annotations

import dataclasses
import glob
import math
import time
from typing import Any, Callable

from ...ann import ivf as ivf_index
from ...core.base.errors import ConfigError
from ...core.judging import fidelity
from ...core.measuring.step import Context
from ...data import prepared
from .. import paper_values
from ..params import Fpga, Params
from ..system import fpga_model

PROTOCOL = ("one warm-up batch (timed, recorded with phase=warmup) then n_batches timed batches per "
            "batch size, queries taken cyclically from the query set; wall-clock perf_counter around "
            "the search call, CUDA synchronised; explicit thread count; a batch in which the scheduler "
            "preempted one of our threads (its involuntary context switches, /proc/self/task/*/status) "
            "is run again after a short pause, up to {reruns} times, and one still preempted is kept and "
            "flagged (preempted)")
BATCH_RERUNS = 3          # reruns of a preempted batch before it is kept and flagged
RERUN_PAUSE_S = 0.01      # the pause before each rerun: a burst of others' work passes


def preemptions() -> int:
    """Involuntary context switches of this process's threads so far: the scheduler took a core from one of
    them while it could run. A sub-millisecond batch cannot be watched through the machine's CPU share over
    its window (clock ticks are 10 ms), but one that never lost a core was not slowed by others."""
    total = 0
    for path in glob.glob("/proc/self/task/*/status"):
        try:
            with open(path) as fh:
                total += next((int(line.split()[1]) for line in fh if line.startswith("nonvoluntary")), 0)
        except OSError:   # a thread that ended meanwhile
            continue
    return total


@dataclasses.dataclass(frozen=True)
class Watched:
    """One timed call's result, how many times it was run again, and the preemptions of its last run."""

    out: Any
    reruns: int
    preempted: int


def watched(fn: Callable[[], Any], reruns: int = BATCH_RERUNS) -> Watched:
    """``fn()`` (which times itself) run until none of our threads was preempted during it, at most
    ``reruns`` more times; the last run is kept either way, with its preemption count (flagged, never hidden)."""
    for attempt in range(reruns + 1):
        before = preemptions()
        out = fn()
        n = preemptions() - before
        if n == 0 or attempt == reruns:
            return Watched(out, attempt, n)
        time.sleep(RERUN_PAUSE_S)
    raise AssertionError("unreachable")


def llc_bytes() -> int | None:
    """The size of this CPU's last-level cache (the highest cache level sysfs lists for cpu0), or None."""
    best = (0, None)
    for d in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        try:
            level = int(open(f"{d}/level").read())
            text = open(f"{d}/size").read().strip().upper()
        except (OSError, ValueError):
            continue
        mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(text[-1:], 1)
        size = int(text.rstrip("KMG") or 0) * mult
        if level > best[0] or (level == best[0] and size > (best[1] or 0)):
            best = (level, size)
    return best[1]


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
    """The node model for PQ ``m`` at ``freq_mhz`` (default: the profile's clock, else the paper's), its
    per-list overhead calibrated on the authors' reference point (SIFT m=32 build, 10,000 queries in 12.69 s
    at 117 MHz: ``paper_values.REF_SECONDS``, ``REF_CLOCK_MHZ``, paper inputs)."""
    ref = paper_values.FPGA_REFERENCE
    kw = dict(channels=f.channels, axi_bytes=f.axi_bytes, rtt_s=f.rtt_us * 1e-6, link_gbps=f.link_gbps)
    cal = fpga_model.calibrate(ref["m"], fidelity.value(paper_values.REF_CLOCK_MHZ), ref["n_vectors"], ref["nlist"],
                               ref["nprobe"], ref["n_queries"], fidelity.value(paper_values.REF_SECONDS), **kw)
    return fpga_model.FPGANode(m=m, freq_mhz=freq_mhz if freq_mhz is not None else f.freq_mhz,
                               list_overhead_cycles_per_subspace=cal.list_overhead_cycles_per_subspace, **kw)


def paper_node(f: Fpga, index: str) -> fpga_model.FPGANode:
    """The node of one of the authors' builds (``IVF...,PQ<m>``), at that build's clock."""
    m = int(index.split("PQ")[1])
    return fpga_node(f, m, paper_values.build_freq_mhz(m))


def host_path(f: Fpga) -> fpga_model.HostPath:
    """The per-batch host cost of the authors' FPGA systems (their coordinator, host software and pipeline
    fill/drain), calibrated on their RALM-S batch-1 latencies (``paper_values.HOST_GPU_MS``, ``HOST_CPU_MS``,
    paper inputs). Added to our own fpga-* latencies so that they carry the same fixed cost as the paper's
    measurements (modelled)."""
    lc = paper_values.LATENCY_CALIBRATION
    return fpga_model.calibrate_host(paper_node(f, lc["index"]), fidelity.value(paper_values.HOST_GPU_MS) / 1e3,
                                     fidelity.value(paper_values.HOST_CPU_MS) / 1e3,
                                     paper_values.paper_n_vectors(lc["dataset"]), paper_values.PAPER_NLIST,
                                     lc["nprobe"], paper_values.paper_dim(lc["dataset"]),
                                     paper_values.arch_nodes(lc["gpu_arch"]))

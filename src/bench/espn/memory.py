"""Memory budgets (paper section 5.1): run a configuration with only part of the embedding table able to
stay in memory.

Mechanisms, best first (each record names the one that enforced its budget):

- ``cgroup-v1`` / ``cgroup-v2``: as root with a cgroup memory controller (either hierarchy, see
  :mod:`bench.core.cgroups`), the measuring process moves itself into a child cgroup whose
  ``memory.limit_in_bytes`` (v1) or ``memory.max`` (v2) covers the page cache too (unlike the paper's
  setup, which needed an mlock'd balloon beside the cgroup). The process loads the ANN index, encoder
  and queries *before* joining, so the cap is the memory for embedding pages plus a small headroom for
  per-query buffers (recorded). Both are measured budgets.
- ``fadvise-evict``: elsewhere, the table's resident size is checked after every query (``mincore``)
  and the table is evicted from the page cache (``posix_fadvise(DONTNEED)``) when it exceeds the budget.
  This is an emulation (coarser than the kernel's LRU) and is labelled so.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..core import cgroups
from .errors import BackendUnavailable, BudgetError


MECHANISMS = ("cgroup-v1", "cgroup-v2")  # measured budgets; fadvise-evict is the emulation


def is_cgroup(mech: str) -> bool:
    """Whether ``mech`` is a kernel-enforced cgroup budget (either hierarchy)."""
    return mech in MECHANISMS


def cgroup_available(prepare: bool = False) -> tuple[bool, str]:
    """Whether a cgroup memory cap (v1 or v2) can be set here; ``prepare``: on v2 also enable the memory
    controller for children now (the parent does, before its workers)."""
    return cgroups.memory_available(prepare=prepare)


cgroup_v1_available = cgroup_available  # the name from before cgroup v2 support


def cgroup_mechanism() -> str:
    """``cgroup-v1`` or ``cgroup-v2``: the hierarchy a memory cap would use here."""
    return f"cgroup-{cgroups.version('memory') or 'v1'}"


def plan(table_bytes: int, ann_bytes: int, frac: float | None = None, total_bytes: int | None = None,
         headroom_bytes: int = 0) -> dict:
    """The budget of one configuration. ``frac``: embedding pages as a fraction of the table; or
    ``total_bytes``: a total budget, which must hold the ANN index (else :class:`BudgetError`)."""
    if (frac is None) == (total_bytes is None):
        raise ValueError("give exactly one of frac or total_bytes")
    if total_bytes is not None:
        if total_bytes <= ann_bytes + headroom_bytes:
            raise BudgetError(f"memory budget {total_bytes / 2**20:.1f} MiB is smaller than the ANN index "
                              f"needs ({ann_bytes / 2**20:.1f} MiB) plus {headroom_bytes / 2**20:.1f} MiB "
                              "headroom; the index must stay in memory")
        emb = total_bytes - ann_bytes - headroom_bytes
    else:
        if frac <= 0:
            raise BudgetError(f"memory budget fraction must be > 0, got {frac}")
        emb = int(frac * table_bytes)
        total_bytes = ann_bytes + emb + headroom_bytes
    return {"budget_total_bytes": int(total_bytes), "budget_embedding_bytes": int(emb),
            "budget_frac": emb / table_bytes if table_bytes else float("nan"),
            "ann_index_bytes": int(ann_bytes), "headroom_bytes": int(headroom_bytes)}


class CgroupCap(cgroups.MemoryCap):
    """Move this process into a fresh child memory cgroup capped at ``limit_bytes``; undo on exit
    (:class:`BackendUnavailable` where the cap cannot be set)."""

    def __init__(self, limit_bytes: int, name: str | None = None):
        try:
            super().__init__(limit_bytes, tag="espn", name=name)
        except cgroups.CgroupUnavailable as exc:
            raise BackendUnavailable(str(exc)) from None


# ----------------------------------------------------------------------------- emulated slower SSD

THROTTLE_V1 = "blkio.throttle.read_iops_device"


def block_device_of(path: str | os.PathLike) -> str:
    """``MAJ:MIN`` of the whole disk holding ``path`` (blkio and io.max throttle whole disks, not
    partitions); :class:`BudgetError` when the file is not on a block device (tmpfs, overlay)."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    sysd = Path("/sys/dev/block") / dev
    if not sysd.exists():
        raise BudgetError(f"{path} is on device {dev}, which is not a block device")
    if (sysd / "partition").exists():
        dev = (sysd.resolve().parent / "dev").read_text().strip()
    return dev


def blkio_available(path: str | os.PathLike, prepare: bool = False) -> tuple[bool, str]:
    """Whether a read throttle can be put on the disk holding ``path``: cgroup blkio (v1,
    ``blkio.throttle.read_iops_device``) or io.max (v2); (True, ``MAJ:MIN``) or (False, why).
    ``prepare``: on v2 also enable the io controller for children now."""
    ok, why = cgroups.available("io", THROTTLE_V1, prepare=prepare)
    if not ok:
        return False, why
    try:
        return True, block_device_of(path)
    except (OSError, BudgetError) as exc:
        return False, str(exc)


class BlkioThrottle(cgroups.ChildCgroup):
    """An emulated slower SSD: this process (all its threads) joins a child group that caps reads from
    the table's disk at ``iops`` (and ``bps`` bytes/s if given): v1 ``blkio.throttle.read_iops_device``
    (``read_bps_device``), v2 ``io.max`` ``MAJ:MIN riops=N rbps=M``. On v2, entered inside the worker's
    memory cap, it throttles that same group (a process has one v2 group). Undone on exit."""

    what = "cgroup read throttle (blkio v1 / io.max v2)"

    def __init__(self, path: str | os.PathLike, iops: int, name: str | None = None, bps: int | None = None):
        ok, why = blkio_available(path)
        if not ok:
            raise BackendUnavailable(f"{self.what} unavailable: {why}")
        if int(iops) < 1:
            raise BudgetError(f"emulated SSD read IOPS must be >= 1, got {iops}")
        self.device, self.iops, self.bps = why, int(iops), None if bps is None else int(bps)
        try:
            super().__init__("io", "espn-blkio", name, control_file=THROTTLE_V1)
        except cgroups.CgroupUnavailable as exc:
            raise BackendUnavailable(str(exc)) from None

    def _controls(self) -> dict[str, str]:
        if self.version == "v2":
            return {"io.max": cgroups.io_max_line(self.device, riops=self.iops, rbps=self.bps)}
        out = {THROTTLE_V1: f"{self.device} {self.iops}"}
        if self.bps is not None:
            out["blkio.throttle.read_bps_device"] = f"{self.device} {self.bps}"
        return out

    def _reset(self) -> dict[str, str]:
        return {"io.max": cgroups.io_max_line(self.device, riops="max", rbps="max")}

    def read_iops(self) -> int | None:
        """The read-IOPS limit on the disk as the kernel holds it (v1 or v2 file), for checks."""
        f = self.path / ("io.max" if self.version == "v2" else THROTTLE_V1)
        try:
            lines = f.read_text().splitlines()
        except OSError:
            return None
        for parts in (line.split() for line in lines):
            if len(parts) > 1 and parts[0] == self.device:
                val = dict(p.split("=", 1) for p in parts[1:] if "=" in p).get("riops") \
                    if self.version == "v2" else parts[1]
                return int(val) if val and val.isdigit() else None
        return None


def remove_worker_cgroups(pid: int | None = None) -> list[Path]:
    """Remove the cgroups a worker process ``pid`` made (memory cap, read throttle; either hierarchy)
    when it could not remove them itself (an OOM kill ends it inside its cap), or, with no pid, the
    ``bench-*`` cgroups of every dead process (a pipeline killed with ``kill -9``). Only empty cgroups
    are removed."""
    return cgroups.remove_stale(pid=pid)

"""Memory budgets (paper section 5.1): run a configuration with only part of the embedding table able to
stay in memory.

Mechanisms, best first (each record names the one that enforced its budget):

- ``cgroup-v1``: as root with the cgroup v1 memory controller, the measuring process moves itself into
  a child cgroup whose ``memory.limit_in_bytes`` covers the page cache too (unlike the paper's setup,
  which needed an mlock'd balloon beside the cgroup). The process loads the ANN index, encoder and
  queries *before* joining, so the cap is the memory for embedding pages plus a small headroom for
  per-query buffers (recorded).
- ``fadvise-evict``: elsewhere, the table's resident size is checked after every query (``mincore``)
  and the table is evicted from the page cache (``posix_fadvise(DONTNEED)``) when it exceeds the budget.
  This is an emulation (coarser than the kernel's LRU) and is labelled so.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..core import cgroups
from .errors import BackendUnavailable, BudgetError


def own_memory_cgroup() -> Path | None:
    return cgroups.memory_cgroup()


def cgroup_v1_available() -> tuple[bool, str]:
    return cgroups.memory_available()


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

def own_blkio_cgroup() -> Path | None:
    return cgroups.own_cgroup("blkio")


def block_device_of(path: str | os.PathLike) -> str:
    """``MAJ:MIN`` of the whole disk holding ``path`` (blkio throttles whole disks, not partitions);
    :class:`BudgetError` when the file is not on a block device (tmpfs, overlay)."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    sysd = Path("/sys/dev/block") / dev
    if not sysd.exists():
        raise BudgetError(f"{path} is on device {dev}, which is not a block device")
    if (sysd / "partition").exists():
        dev = (sysd.resolve().parent / "dev").read_text().strip()
    return dev


def blkio_available(path: str | os.PathLike) -> tuple[bool, str]:
    """Whether a cgroup v1 blkio read-IOPS throttle can be put on the device holding ``path``."""
    ok, why = cgroups.usable(own_blkio_cgroup(), "blkio.throttle.read_iops_device",
                            "blkio controller with throttling")
    if not ok:
        return False, why
    try:
        return True, block_device_of(path)
    except (OSError, BudgetError) as exc:
        return False, str(exc)


class BlkioThrottle(cgroups.ChildCgroup):
    """Move this process (all its threads) into a fresh child blkio cgroup whose
    ``blkio.throttle.read_iops_device`` caps reads from the table's disk at ``iops``: an emulated
    slower SSD. Undone on exit."""

    def __init__(self, path: str | os.PathLike, iops: int, name: str | None = None):
        ok, why = blkio_available(path)
        if not ok:
            raise BackendUnavailable(f"cgroup v1 blkio throttle unavailable: {why}")
        if int(iops) < 1:
            raise BudgetError(f"emulated SSD read IOPS must be >= 1, got {iops}")
        self.device, self.iops = why, int(iops)
        self.parent = own_blkio_cgroup()
        self.path = self.parent / (name or cgroups.child_name("espn-blkio"))

    def _controls(self) -> dict[str, str]:
        return {"blkio.throttle.read_iops_device": f"{self.device} {self.iops}"}


def remove_worker_cgroups(pid: int | None = None) -> list[Path]:
    """Remove the cgroups a worker process ``pid`` made (memory cap, blkio throttle) when it could not
    remove them itself (an OOM kill ends it inside its cap), or, with no pid, the ``bench-*`` cgroups
    of every dead process (a pipeline killed with ``kill -9``). Only empty cgroups are removed."""
    return cgroups.remove_stale({"memory": own_memory_cgroup(), "blkio": own_blkio_cgroup()}, pid=pid)

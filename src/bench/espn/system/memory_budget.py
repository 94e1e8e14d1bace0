"""Memory budgets (paper section 5.1, Tables 4/5): run a configuration with only part of the embedding table
able to stay in memory. (The emulated slower SSD, a read throttle, is :mod:`.slow_ssd`.)

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

from pathlib import Path

from ...core import cgroups
from ...core.errors import ConfigError
from .backends import BackendUnavailable


class BudgetError(ConfigError):
    """A memory budget that cannot hold what must stay in memory (the ANN index)."""


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


def remove_worker_cgroups(pid: int | None = None) -> list[Path]:
    """Remove the cgroups a worker process ``pid`` made (memory cap, read throttle; either hierarchy)
    when it could not remove them itself (an OOM kill ends it inside its cap), or, with no pid, the
    ``bench-*`` cgroups of every dead process (a pipeline killed with ``kill -9``). Only empty cgroups
    are removed."""
    return cgroups.remove_stale(pid=pid)

"""Memory budgets (paper section 5.1, Tables 4/5): run a configuration with only part of the embedding table
able to stay in memory. (The emulated slower SSD, a read throttle, is :mod:`.slow_ssd`.)

Mechanisms, best first (each record names the one that enforced its budget):

- ``cgroup-v1`` / ``cgroup-v2``: as root with a cgroup memory controller (either hierarchy, see
  :mod:`bench.core.machine.cgroups`), the measuring process moves itself into a child cgroup whose
  ``memory.limit_in_bytes`` (v1) or ``memory.max`` (v2) covers the page cache too (unlike the paper's
  setup, which needed an mlock'd balloon beside the cgroup). The cap is the ANN index plus the
  embedding pages plus a headroom for the back end's own per-query buffers (:func:`cap_bytes`,
  :func:`headroom_for`: the O_DIRECT back ends hold more); the worker loads the ANN index again after
  joining, and a balloon of touched memory makes up what the reload did not charge (reused heap stays
  charged outside), so the index's size is charged to the cap as the paper's cgroup charges the whole
  retrieval process (the encoder and queries, loaded before, are not). Both are measured budgets.
  Each pass records the cap's failcnt and reclaim over the pass (:func:`pressure`) and whether the
  budget bound (:func:`bound`).
- ``fadvise-evict``: elsewhere, the table's resident size is checked after every query (``mincore``)
  and the table is evicted from the page cache (``posix_fadvise(DONTNEED)``) when it exceeds the budget.
  This is an emulation (coarser than the kernel's LRU) and is labelled so.
"""
from __future__ import annotations

import os
from pathlib import Path

from ...core.machine import cgroups
from ...core.base.errors import ConfigError
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


def cap_bytes(budget: dict) -> int:
    """The cgroup limit of a budget: ANN index + embedding pages + headroom (``budget_total_bytes``)."""
    return int(budget.get("budget_total_bytes") or
               budget["ann_index_bytes"] + budget["budget_embedding_bytes"] + budget["headroom_bytes"])


def machine_bytes() -> int:
    """The machine's physical memory: the limit of a cap that only measures (it never binds)."""
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


# memory.stat's reclaim counter: v2 pgsteal (pages reclaimed); v1 has none, so its file refaults
# (pages reclaimed from the group and read back) stand for it (pgpgout also counts plain frees)
_RECLAIM = ("pgsteal", "workingset_refault_file")


def pressure(cap) -> dict:
    """Counters of the cap now: failcnt (v1 memory.failcnt / v2 memory.events max), memory.events
    high/max/oom (v2), and memory.stat's pgmajfault and reclaim counters; {} without a cap."""
    if cap is None:
        return {}
    out = {"failcnt": cap.stats().get("cgroup_failcnt")}
    st = cgroups.keyed(cap.path / "memory.stat")
    for k in ("pgmajfault", "pgpgout", *_RECLAIM):
        if k in st:
            out[k] = st[k]
    if cap.version == "v2":
        ev = cgroups.keyed(cap.path / "memory.events")
        out.update({f"events_{k}": ev.get(k) for k in ("high", "max", "oom")})
    return out


def bound(budget: dict | None, before: dict, after: dict, mech: str, kind: str, evictions: int = 0) -> dict:
    """Whether the budget bound during one pass: the cap was hit (failcnt rose) or reclaimed pages
    (memory.stat), or, for the fadvise emulation, the table was evicted. Columns ``failcnt_pass``,
    ``reclaim_pass`` (pages), ``pgmajfault_pass``, ``budget_bound`` and ``budget_bound_reason``."""
    if budget is None:
        return {"budget_bound": False, "budget_bound_reason": "no budget (unlimited)"}
    if not is_cgroup(mech):
        b = evictions > 0
        return {"budget_bound": b, "budget_bound_reason": f"fadvise-evict: {evictions} eviction(s) this pass"}

    def d(k):
        a, b = after.get(k), before.get(k)
        return None if a is None or b is None else int(a) - int(b)

    fail = d("failcnt")
    counter = next((k for k in _RECLAIM if d(k) is not None), None)
    reclaim = (d(counter) or 0) if counter else 0
    out = {"failcnt_pass": fail, "reclaim_pass": reclaim, "reclaim_counter": counter or "",
           "pgmajfault_pass": d("pgmajfault")}
    hit = bool((fail or 0) > 0 or reclaim > 0)
    why = (f"bound: failcnt +{fail or 0}, {counter} +{reclaim} this pass" if hit else
           f"did not bind: failcnt +{fail or 0} and nothing reclaimed this pass ({kind} stayed under the cap)")
    return {**out, "budget_bound": hit, "budget_bound_reason": why}


class CgroupCap(cgroups.MemoryCap):
    """Move this process into a fresh child memory cgroup capped at ``limit_bytes``; undo on exit
    (:class:`BackendUnavailable` where the cap cannot be set). :meth:`set_limit` changes the cap in place
    (a back end's own headroom)."""

    def __init__(self, limit_bytes: int, name: str | None = None):
        try:
            super().__init__(limit_bytes, tag="espn", name=name)
        except cgroups.CgroupUnavailable as exc:
            raise BackendUnavailable(str(exc)) from None

    def set_limit(self, limit_bytes: int) -> None:
        """The cap's new limit (a lower one makes the kernel reclaim page cache down to it)."""
        self.limit = int(limit_bytes)
        for f, v in self._controls().items():
            cgroups._write(self.path / f, v)


def headroom_for(kind: str, mmap_mib: float, io_mib: float) -> int:
    """A back end's headroom in bytes: the O_DIRECT ones (direct, direct_prefetch, gds) hold read, decode
    and prefetch buffers; mmap and memory few."""
    return int((io_mib if kind in ("direct", "direct_prefetch", "gds") else mmap_mib) * 2**20)


def remove_worker_cgroups(pid: int | None = None) -> list[Path]:
    """Remove the cgroups a worker process ``pid`` made (memory cap, read throttle; either hierarchy)
    when it could not remove them itself (an OOM kill ends it inside its cap), or, with no pid, the
    ``bench-*`` cgroups of every dead process (a pipeline killed with ``kill -9``). Only empty cgroups
    are removed."""
    return cgroups.remove_stale(pid=pid)

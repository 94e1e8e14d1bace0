"""The memory footprint of a training run's process tree (Moving Stuff Around, section 3.2 and Table 2),
measured the way the authors meant:

- PSS summed over the whole process tree (main process or DDP ranks, and their DataLoader workers):
  shared pages split between the processes that map them, so nothing is counted twice; USS (pages only
  one process maps) and RSS beside it; sampled during the run (peak and mean);
- the paper's method beside it: the main process's RSS (times the replica count for DDP);
- a second reading of PSS over the same tree from another file, ``/proc/<pid>/smaps`` (every mapping's
  ``Pss:`` summed here), to check psutil's PSS and our summation over the tree. psutil reads
  ``smaps_rollup`` itself, so that file would be the same source read twice; both files are the
  kernel's one PSS accounting, so the check is of the harness's reading, not of the kernel;
- a memory cap (as root: cgroup v1 ``memory.limit_in_bytes`` or cgroup v2 ``memory.max``, see
  :mod:`bench.core.machine.cgroups`) so that a run that needs more memory than the cap is OOM-killed alone (the
  paper's OOM cells) and never takes the machine down.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

import psutil

from ...core.machine import cgroups
from .errors import ConfigError


def tree(pids) -> list[psutil.Process]:
    """The processes ``pids`` and all their descendants (those still alive)."""
    out, seen = [], set()
    for pid in pids:
        try:
            p = psutil.Process(pid)
            for q in [p, *p.children(recursive=True)]:
                if q.pid not in seen:
                    seen.add(q.pid)
                    out.append(q)
        except psutil.NoSuchProcess:
            continue
    return out


def own_pss() -> int:
    """This process's PSS in bytes."""
    return psutil.Process().memory_full_info().pss


def smaps_rollup_pss(pid: int) -> int | None:
    """PSS in bytes read straight from ``/proc/<pid>/smaps_rollup`` (None if the process is gone). psutil's
    ``memory_full_info`` reads this same file: not an independent check of it (see :func:`smaps_pss`)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return None


def smaps_pss(pid: int) -> int | None:
    """PSS in bytes summed here over every mapping's ``Pss:`` line of ``/proc/<pid>/smaps`` (None if the
    process is gone): another file than the one psutil reads, summed by our code."""
    try:
        text = Path(f"/proc/{pid}/smaps").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return 1024 * sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:"))


def reading(pids, independent: bool = False, per_process: bool = False) -> dict:
    """One reading of the tree rooted at ``pids``: summed PSS, USS and RSS, the first root's RSS,
    (``independent``) the summed ``/proc/<pid>/smaps`` PSS of the same processes, read just before and just
    after each process's psutil reading (``pss_smaps_lo``/``_hi`` bracket it, ``pss_smaps_bytes`` is
    their midpoint: a process that allocates between the readings stays comparable), and (``per_process``) each process's (pid, role, pss, uss): role
    ``main``/``rank`` for a root, else ``worker`` (a DataLoader worker)."""
    procs = tree(pids)
    pss = uss = rss = lo = hi = 0
    main_rss, counted, each = 0, [], []
    for p in procs:
        before = smaps_pss(p.pid) if independent else 0
        try:
            m = p.memory_full_info()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if independent:
            after = smaps_pss(p.pid)
            if before is None or after is None:  # gone between the readings: left out of every sum
                continue
            lo, hi = lo + min(before, after), hi + max(before, after)
        pss, uss, rss = pss + m.pss, uss + m.uss, rss + m.rss
        counted.append(p.pid)
        if p.pid == pids[0]:
            main_rss = m.rss
        if per_process:
            each.append((p.pid, ("main" if p.pid == pids[0] else "rank") if p.pid in pids else "worker",
                         m.pss, m.uss))
    row = {"t": time.monotonic(), "n_procs": len(counted), "pss_bytes": pss, "uss_bytes": uss,
           "rss_bytes": rss, "main_rss_bytes": main_rss}
    if per_process:
        row["procs"] = each
    if independent:
        row.update(pss_smaps_bytes=(lo + hi) / 2, pss_smaps_lo=lo, pss_smaps_hi=hi)
    return row


def smaps_disagreement(row) -> float:
    """How far psutil's summed PSS lies outside the smaps_rollup bracket, relative to its midpoint."""
    out = max(0.0, row["pss_smaps_lo"] - row["pss_bytes"], row["pss_bytes"] - row["pss_smaps_hi"])
    return out / row["pss_smaps_bytes"] if row["pss_smaps_bytes"] else float("nan")


class Sampler:
    """Samples :func:`reading` every ``interval_s`` in a background thread of the launching process
    (outside the measured processes). Without ``check``, every ``independent_every``-th reading adds the
    ``/proc/<pid>/smaps`` check. With ``check`` (an object with ``started()``: every rank has begun its
    measured steps, ``ready()``: every rank holds the memory of its measured steps after the last one, and
    ``release()``: let them go on), the readings are plain, one is taken as the measured steps begin (so
    even a short measured phase has one), and the one reading with the check is taken as soon as
    ``ready()`` (marked ``check``), then ``release()``: the check reads the measured phase's memory and never
    slows a timed step."""

    POLL_S = 0.01   # how often the wait between readings looks at ``check.ready()``

    def __init__(self, pids, interval_s: float = 0.1, independent_every: int = 4, per_process: bool = False,
                 check=None):
        if interval_s <= 0:
            raise ConfigError(f"memory sampling interval must be > 0, got {interval_s}")
        self.pids, self.interval, self.every = list(pids), interval_s, max(1, independent_every)
        self.per_process, self.check, self.checked = per_process, check, False
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pss-sampler", daemon=True)

    def _due(self) -> bool:
        return self.check is not None and not self.checked and self.check.ready()

    def _checked_reading(self) -> dict:
        try:
            row = reading(self.pids, independent=True, per_process=self.per_process)
            row["check"] = True
            return row
        finally:
            self.checked = True
            self.check.release()

    def _loop(self):
        k = 0
        while not self._stop.is_set():
            if self._due():
                row = self._checked_reading()
            else:
                row = reading(self.pids, independent=self.check is None and k % self.every == 0,
                              per_process=self.per_process)
                k += 1
            if row["n_procs"]:
                self.samples.append(row)
            self._wait()

    def _wait(self) -> None:
        """One interval, or less: until the measured steps begin, or the ranks hold for the check."""
        if self.check is None or self.checked:
            self._stop.wait(self.interval)
            return
        started = self.check.started()
        end = time.monotonic() + self.interval
        while not self._stop.is_set() and (left := end - time.monotonic()) > 0:
            if self._due() or (not started and self.check.started()):
                return
            self._stop.wait(min(left, self.POLL_S))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        if self.check is not None and not self.checked:
            self.check.release()   # never leave a rank waiting


# ----------------------------------------------------------------------------- memory cap


def cap_available() -> tuple[bool, str]:
    """Whether a memory cap can be set here (cgroup v1 or v2, as root); else why, in one line."""
    return cgroups.memory_available()


class MemoryCap(cgroups.MemoryCap):
    """A child memory cgroup (bench.core.machine.cgroups; v1 or v2) capped at ``limit_bytes``, page cache
    included: the paper's OOM cells. Unlike the core class, the launching process stays outside: the run
    processes join it themselves (write their pid to its ``cgroup.procs``, first thing in a rank), so an
    OOM kill hits a rank, never the launcher. On v2, entering enables the memory controller in the
    launcher's group (its processes move into ``bench-leaf`` if the kernel requires it)."""

    _n = 0

    def __init__(self, limit_bytes: int):
        ok, why = cap_available()
        if not ok:
            raise ConfigError(f"memory cap requested but unavailable: {why}")
        if limit_bytes < (16 << 20):
            raise ConfigError(f"memory cap must be >= 16 MiB, got {limit_bytes} bytes")
        MemoryCap._n += 1
        super().__init__(limit_bytes, tag=f"loaders{MemoryCap._n}")

    def __enter__(self):
        cgroups.remove_stale(pid=None)
        try:
            self.create()
        except cgroups.CgroupUnavailable as exc:
            raise ConfigError(f"memory cap requested but unavailable: {exc}") from None
        return self

    def stats(self) -> dict:
        """``cap_bytes``, ``cap_max_usage_bytes`` (peak), ``cap_failcnt`` (times the usage hit the cap),
        ``cap_oom_kills`` and ``cap_cgroup_version`` ("v1"/"v2")."""
        s = super().stats()
        return {"cap_bytes": self.limit, "cap_max_usage_bytes": s["cgroup_max_usage_bytes"],
                "cap_failcnt": s["cgroup_failcnt"], "cap_oom_kills": s["cgroup_oom_kills"],
                "cap_cgroup_version": s["cgroup_version"]}

    def __exit__(self, *exc):
        self.close()
        for _ in range(50):  # processes killed by the OOM killer leave the cgroup asynchronously
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.05)

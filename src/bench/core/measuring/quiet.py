"""Is the machine quiet? Measured again, not flagged.

Before a timed step the skeleton (:mod:`bench.core.measuring.step`) waits, up to :data:`WAIT_BOUND_S`, until a short
sample shows the machine quiet (:func:`wait_until_quiet`). While the step (or each fresh process of it) runs,
:class:`Span` measures the share of the machine's CPU time spent by *other* processes: the machine's busy
time from /proc/stat minus the CPU time of this process and its reaped children (``os.times``), over the
wall time times the cores (descendants that are still alive, such as a forkserver and the ranks it reaped,
counted through psutil). A repeat that ran while others used more than :data:`BUSY_SHARE` of the machine
is run again after another wait, up to :data:`RERUNS` times; the waits and reruns are recorded. Only a
repeat that stays busy after the bound is flagged ``machine_busy`` and its claims read inconclusive.

The 1-minute load average lags (it still shows a job that just ended), so the quick sample reads /proc/stat
for a short window instead.

Tests that run a step without measuring anything (its wiring, its rows, its figures) turn the waits and reruns
off with ``BENCH_QUIET=off`` in the environment (:func:`checks_on`; ``tests/conftest.py`` sets it, and the
tests of this logic turn it back on): the skeleton then neither samples nor waits nor reruns, still records
others' share over each repeat, and says in the provenance that the checks were off. ``make run`` and
``make study`` set it on.
"""
from __future__ import annotations

import dataclasses
import os
import time

BUSY_SHARE = 0.25   # of all cores, spent by others during the sample window or the step
WINDOW_S = 0.3
WAIT_BOUND_S = 20.0   # the longest wait for a quiet machine before a step (or a rerun)
RERUNS = 1            # reruns of a busy repeat (a fresh process, or a short whole step)
RERUN_MAX_S = 90.0    # a whole step (not split over processes) is rerun only when it took at most this
REPEAT_WAIT_S = 5.0   # the longest wait for a quiet machine before one repeat is run again
SWITCH = "BENCH_QUIET"   # "off": no waits, no samples, no reruns (tests that measure nothing)


def checks_on() -> bool:
    """Whether the step skeleton waits for a quiet machine and reruns busy repeats: yes unless
    ``BENCH_QUIET=off`` (or ``0``) is in the environment."""
    return os.environ.get(SWITCH, "on").strip().lower() not in ("off", "0")


def off_record() -> dict:
    """What the skeleton records in place of a sample while the checks are off."""
    return {"waited_s": 0.0, "samples": 0, "quiet": None, "checks": f"off ({SWITCH}=off: a test, not a measurement)"}


def _cpu_times() -> tuple[float, float]:
    with open("/proc/stat") as fh:
        parts = [float(x) for x in fh.readline().split()[1:]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0.0)
    return sum(parts), idle


def sample(window_s: float = WINDOW_S) -> dict:
    """Load averages and the busy share of all cores over ``window_s`` while this process sleeps."""
    try:
        t0, i0 = _cpu_times()
        time.sleep(window_s)
        t1, i1 = _cpu_times()
        busy = 1.0 - (i1 - i0) / (t1 - t0) if t1 > t0 else 0.0
    except OSError:  # pragma: no cover - no /proc
        busy = float("nan")
    return {"loadavg": list(os.getloadavg()), "busy_share": round(max(0.0, busy), 4),
            "cores": os.cpu_count(), "window_s": window_s}


def is_busy(before: dict, after: dict, threshold: float = BUSY_SHARE) -> bool:
    return any(s.get("busy_share", 0.0) > threshold for s in (before, after))


def wait_until_quiet(bound_s: float | None = None, threshold: float = BUSY_SHARE,
                     sampler=sample) -> dict:
    """Sample until the machine is quiet or ``bound_s`` (default :data:`WAIT_BOUND_S`) has passed: the last
    sample, with ``waited_s`` (seconds spent waiting), ``samples`` and ``quiet`` (whether it ended quiet)."""
    bound_s = WAIT_BOUND_S if bound_s is None else bound_s
    t0 = time.perf_counter()
    n = 0
    while True:
        s = sampler()
        n += 1
        quiet = not s.get("busy_share", 0.0) > threshold
        waited = time.perf_counter() - t0
        if quiet or waited >= bound_s:
            return {**s, "waited_s": round(waited, 3), "samples": n, "quiet": quiet}


def _own_cpu_s() -> tuple[float, dict]:
    """CPU seconds of this process and the children it reaped (``os.times``), and of each live descendant
    (its own and its reaped children's: a forkserver's ranks, a server subprocess), keyed by (pid, start)."""
    t = os.times()
    tree = {}
    try:
        import psutil

        for p in psutil.Process().children(recursive=True):
            try:
                c = p.cpu_times()
                tree[(p.pid, p.create_time())] = c.user + c.system + c.children_user + c.children_system
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
    except ImportError:  # pragma: no cover
        pass
    return t.user + t.system + t.children_user + t.children_system, tree


def _tree_delta(before: tuple[float, dict], after: tuple[float, dict]) -> float:
    """Our tree's CPU seconds between two :func:`_own_cpu_s` readings: this process and its reaped children,
    plus each descendant alive at the end (from its value at the start, or 0 if it started since)."""
    (s0, t0), (s1, t1) = before, after
    return (s1 - s0) + sum(v - t0.get(k, 0.0) for k, v in t1.items())


@dataclasses.dataclass
class Span:
    """Others' share of the machine while a piece of work ran: ``with Span() as s: work()``, then
    ``s.others_share`` and ``s.busy``. Work done by this process, the children it has reaped and every live
    descendant (with what they reaped: ranks forked by a forkserver, a server subprocess) is ours."""

    threshold: float = BUSY_SHARE
    others_share: float = float("nan")
    wall_s: float = float("nan")

    def __enter__(self) -> "Span":
        self._tick = os.sysconf("SC_CLK_TCK")
        self._t = time.perf_counter()
        self._total, self._idle = _cpu_times()
        self._own = _own_cpu_s()
        return self

    def __exit__(self, *exc) -> None:
        total, idle = _cpu_times()
        self.wall_s = time.perf_counter() - self._t
        cores = os.cpu_count() or 1
        busy_s = ((total - self._total) - (idle - self._idle)) / self._tick
        own_s = _tree_delta(self._own, _own_cpu_s())
        cap = max(self.wall_s * cores, 1e-9)
        self.others_share = round(max(0.0, busy_s - own_s) / cap, 4)

    @property
    def busy(self) -> bool:
        return self.others_share > self.threshold

    def record(self) -> dict:
        return {"others_share": self.others_share, "wall_s": round(self.wall_s, 3), "busy": self.busy}

"""Is the machine quiet? A check taken before and after every timed step.

The 1-minute load average lags (it still shows a job that just ended), so the check also samples
/proc/stat for a short window and reports the share of the machine's CPU time that was busy while this
process was idle: work of other processes. A step is flagged busy when either sample exceeds
``BUSY_SHARE``; claims then mark their verdict inconclusive.
"""
from __future__ import annotations

import os
import time

BUSY_SHARE = 0.25   # of all cores, spent by others during the sample window
WINDOW_S = 0.3


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

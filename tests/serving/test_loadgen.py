"""Open-loop load generation: latency from the intended send time, and a run that always ends."""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

from bench.serving import loadgen
from bench.core.base.errors import ConfigError


def test_poisson_rate_and_bad_rate():
    s = loadgen.poisson_schedule(1000, 5000, seed=1)
    assert np.all(np.diff(s) >= 0) and 4.5 < s[-1] < 5.5
    with pytest.raises(ConfigError, match="rate must be > 0"):
        loadgen.poisson_schedule(0, 10, 1)
    b = loadgen.bursty_schedule(100, 2000, seed=1)
    assert 16 < b[-1] < 24   # the mean rate stays 100/s


def test_latency_counts_from_the_intended_time():
    """A server that serves one request at a time: the open loop keeps sending, so later requests
    queue and their latency (from the intended time) grows; nothing is lost."""
    lock = asyncio.Lock()

    async def call(i):
        async with lock:
            await asyncio.sleep(0.01)
        return i

    sched = np.arange(20) * 0.002   # 500/s offered against 100/s served
    out = asyncio.run(loadgen.run_open_loop(sched, call, timeout_s=5))
    lat = [o.latency_s for o in out]
    assert len(out) == 20 and all(o.ok for o in out)
    assert lat[-1] > 0.15 > lat[0]
    s = loadgen.latency_summary(lat, duration_s=max(o.done_s for o in out), slo_s=0.05)
    assert s["p99_s"] >= s["p50_s"] and s["within_slo"] < 20


def test_timeouts_and_errors_are_outcomes():
    async def call(i):
        if i == 0:
            await asyncio.sleep(1)
        raise RuntimeError("boom")

    out = asyncio.run(loadgen.run_open_loop([0.0, 0.0], call, timeout_s=0.05))
    assert out[0].error == "timeout" and "boom" in out[1].error and not any(o.ok for o in out)

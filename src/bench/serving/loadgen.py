"""Open-loop load generation shared by the service studies (WindVE's embedding service, Trinity's
retrieval workload).

A schedule is a sorted array of *intended* send times (seconds from the start of the run): Poisson
arrivals at a target rate, or bursts on top of a base rate. :func:`run_open_loop` sends each request at
its intended time whatever happened to earlier ones (an open loop: a slow server does not slow the
generator), and latency is measured from the intended send time, not from the moment the request
actually left, so a generator that falls behind does not hide queueing (no coordinated omission).
:func:`latency_summary` gives percentiles through an HDR histogram (the ``hdrhistogram`` package) and
goodput (answers within an SLO per second).
"""
from __future__ import annotations

import asyncio
import dataclasses
import os
import resource
import time
from typing import Any, Awaitable, Callable, Sequence

import numpy as np

from ..core.base.errors import ConfigError


def poisson_schedule(rate: float, n: int, seed: int) -> np.ndarray:
    """``n`` intended send times of a Poisson process at ``rate`` requests/s, starting near 0."""
    if not rate > 0:
        raise ConfigError(f"offered rate must be > 0 requests/s, got {rate}")
    if n < 1:
        raise ConfigError(f"a schedule needs at least one request, got n={n}")
    gaps = np.random.default_rng(seed).exponential(1.0 / rate, size=n)
    return np.cumsum(gaps) - gaps[0]


def bursty_schedule(rate: float, n: int, seed: int, burst_factor: float = 4.0,
                    burst_s: float = 0.5, period_s: float = 2.0) -> np.ndarray:
    """Poisson arrivals whose rate is ``burst_factor`` x ``rate`` for ``burst_s`` of every ``period_s``
    and lower between bursts, so the mean rate stays ``rate`` (a non-homogeneous Poisson process)."""
    if not rate > 0:
        raise ConfigError(f"offered rate must be > 0 requests/s, got {rate}")
    if not 0 < burst_s < period_s:
        raise ConfigError(f"burst_s must be in (0, period_s={period_s}), got {burst_s}")
    if burst_factor * burst_s > period_s:
        raise ConfigError(f"burst_factor x burst_s ({burst_factor * burst_s}) exceeds the period {period_s}: "
                          "the quiet rate would be negative")
    high = rate * burst_factor
    low = rate * (period_s - burst_factor * burst_s) / (period_s - burst_s)
    rng = np.random.default_rng(seed)
    # thinning of a homogeneous process at the peak rate
    out: list[float] = []
    t = 0.0
    while len(out) < n:
        t += rng.exponential(1.0 / high)
        r = high if (t % period_s) < burst_s else low
        if rng.random() < r / high:
            out.append(t)
    arr = np.asarray(out)
    return arr - arr[0]


@dataclasses.dataclass
class Outcome:
    """One request of an open-loop run; times are seconds from the run's start."""

    index: int
    intended_s: float
    sent_s: float
    done_s: float
    ok: bool
    status: Any = None
    error: str | None = None

    @property
    def latency_s(self) -> float:
        """Latency from the intended send time (includes any lateness of the generator)."""
        return self.done_s - self.intended_s


async def run_open_loop(schedule: Sequence[float], call: Callable[[int], Awaitable[Any]],
                        timeout_s: float, ok: Callable[[Any], bool] = lambda r: True) -> list[Outcome]:
    """Send request ``i`` (``await call(i)``) at ``schedule[i]`` seconds; never wait for earlier answers.

    A request that has not answered within ``timeout_s`` of its send time is an outcome with
    ``ok=False`` and ``error='timeout'``; an exception is recorded, never raised. The run ends when
    every request has an outcome, so it always stops.
    """
    sched = np.asarray(schedule, dtype=float)
    if sched.size and np.any(np.diff(sched) < 0):
        raise ConfigError("a schedule's intended send times must be sorted")
    loop = asyncio.get_running_loop()
    t0 = loop.time()

    async def one(i: int, at: float) -> Outcome:
        delay = t0 + at - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        sent = loop.time() - t0
        try:
            res = await asyncio.wait_for(call(i), timeout_s)
            return Outcome(i, at, sent, loop.time() - t0, bool(ok(res)), status=res)
        except asyncio.TimeoutError:
            return Outcome(i, at, sent, loop.time() - t0, False, error="timeout")
        except Exception as exc:  # noqa: BLE001  (recorded, the run goes on)
            return Outcome(i, at, sent, loop.time() - t0, False, error=f"{type(exc).__name__}: {exc}")

    return list(await asyncio.gather(*(one(i, float(at)) for i, at in enumerate(sched))))


def latency_summary(latencies_s: Sequence[float], duration_s: float, slo_s: float | None = None,
                    percentiles: Sequence[float] = (50, 90, 95, 99, 99.9)) -> dict[str, float]:
    """Percentiles (HDR histogram, 3 significant digits, microsecond units), throughput and goodput."""
    from hdrh.histogram import HdrHistogram

    lat = np.asarray(latencies_s, dtype=float)
    out: dict[str, float] = {"n": int(lat.size), "throughput_rps": float(lat.size / duration_s) if duration_s > 0 else 0.0}
    if lat.size:
        us = np.maximum(1, np.round(lat * 1e6)).astype(np.int64)
        h = HdrHistogram(1, max(int(us.max()) * 2, 1000), 3)
        for v in us:
            h.record_value(int(v))
        for p in percentiles:
            out[f"p{p:g}_s"] = h.get_value_at_percentile(p) / 1e6
        out["mean_s"] = float(lat.mean())
        out["max_s"] = float(lat.max())
    if slo_s is not None:
        good = int((lat <= slo_s).sum())
        out["within_slo"] = good
        out["goodput_rps"] = float(good / duration_s) if duration_s > 0 else 0.0
    return out


class CpuMeter:
    """CPU seconds this process (the load generator) used between ``start()`` and ``stop()``, and its
    share of one core over the wall time: recorded because the generator shares the machine."""

    def start(self) -> "CpuMeter":
        self._wall, self._cpu = time.perf_counter(), self._now()
        return self

    @staticmethod
    def _now() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    def stop(self) -> dict[str, float]:
        wall = time.perf_counter() - self._wall
        cpu = self._now() - self._cpu
        return {"loadgen_cpu_s": cpu, "loadgen_wall_s": wall,
                "loadgen_cores": cpu / wall if wall > 0 else 0.0, "loadgen_pid": os.getpid()}

"""Queue-depth estimation (Section IV-B2, Table III).

- :func:`fit`: t = alpha * C + beta with alpha, beta >= 0 (equation 12) by non-negative least squares;
- :func:`predict_depth`: the largest C whose predicted latency meets the SLO (equations 7-10), and
  equation 11: when one query alone misses the SLO the device cannot help (an error, never depth 0);
- :func:`stress_test`: concurrency raised in steps of 8 until the SLO fails, as the paper does;
- :func:`stress_again`: a repeat of a stress test's bracket, measured afresh from an earlier search's depth
  (Table III's interval);
- :func:`fine_tune`: depths adjusted with both devices running;
each counting the profiling runs (concurrency levels measured) it needed.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Awaitable, Callable

import numpy as np

from bench.core.base.errors import ConfigError


class DeviceCannotMeetSlo(ConfigError):
    """Equation 11: one query alone takes longer than the SLO on this device."""


@dataclasses.dataclass(frozen=True)
class LinearFit:
    alpha: float
    beta: float
    r2: float
    n_points: int

    def latency(self, c: float) -> float:
        return self.alpha * c + self.beta


def fit(concurrency, latency_s) -> LinearFit:
    """Least squares of latency on concurrency with alpha, beta >= 0 (scipy's NNLS)."""
    from scipy.optimize import nnls

    c = np.asarray(concurrency, dtype=float)
    t = np.asarray(latency_s, dtype=float)
    if c.size != t.size or c.size < 2 or np.unique(c).size < 2:
        raise ConfigError("a latency fit needs at least two distinct concurrency levels")
    (alpha, beta), _ = nnls(np.column_stack([c, np.ones_like(c)]), t)
    resid = t - (alpha * c + beta)
    ss = float(((t - t.mean()) ** 2).sum())
    r2 = 1.0 - float((resid ** 2).sum()) / ss if ss > 0 else 1.0
    return LinearFit(float(alpha), float(beta), r2, int(c.size))


def predict_depth(f: LinearFit, slo_s: float, device: str = "device", cap: int = 100_000) -> int:
    """Largest C with alpha * C + beta <= SLO; raises :class:`DeviceCannotMeetSlo` (equation 11)."""
    if not slo_s > 0:
        raise ConfigError(f"SLO must be > 0 s, got {slo_s}")
    one = f.latency(1)
    if one > slo_s:
        raise DeviceCannotMeetSlo(
            f"SLO {slo_s:g} s is shorter than one query's latency on the {device} ({one:.3f} s predicted): "
            f"the {device} cannot help at this SLO (equation 11); turn its queue off rather than set depth 0")
    if f.alpha <= 0:
        return cap
    return int(min(cap, math.floor((slo_s - f.beta) / f.alpha + 1e-9)))


@dataclasses.dataclass
class Search:
    """A depth found by measuring, the levels it measured and how many runs that took."""

    depth: int
    runs: int
    points: list[tuple[int, float, bool]]   # (concurrency, latency statistic, met SLO)
    depths: dict[str, int] | None = None    # per device (fine-tuning only)
    converged: bool = True                   # False: no configuration met the SLO within the runs
    bracketed: bool = False                  # every device's next step up was tried and failed (a bracketed search)


async def stress_test(measure: Callable[[int], Awaitable[float]], slo_s: float, step: int = 8,
                      max_level: int = 4096) -> Search:
    """Raise C by ``step`` (8, 16, ...) until the measured latency exceeds the SLO. When even ``step``
    fails, C goes 1, 2, ... below it so a slow device still gets a depth (0 when C=1 fails)."""
    if step < 1:
        raise ConfigError(f"stress step must be >= 1, got {step}")
    points: list[tuple[int, float, bool]] = []
    depth, c = 0, step
    while c <= max_level:
        t = await measure(c)
        ok = t <= slo_s
        points.append((c, t, ok))
        if not ok:
            break
        depth, c = c, c + step
    if depth == 0 and step > 1:
        for c in range(1, step):
            t = await measure(c)
            ok = t <= slo_s
            points.append((c, t, ok))
            if not ok:
                break
            depth = c
    passed = {c for c, _, ok in points if ok}
    failed = {c for c, _, ok in points if not ok}
    nxt = depth + step if depth >= step else depth + 1
    return Search(depth, len(points), points, bracketed=nxt in failed and (depth in passed or depth == 0))


async def stress_again(measure: Callable[[int], Awaitable[float]], slo_s: float, start: int, step: int = 8,
                       max_level: int = 4096) -> Search:
    """A repeat of a stress test, every level measured afresh, from an earlier search's depth ``start`` (a
    multiple of ``step``): down by ``step`` while the level fails, up by ``step`` while the next passes,
    until a passing level sits next to a failing one (bracketed) or the grid ends. The levels far below the
    boundary are not climbed again (the paper's climb passes them all; budget). Below ``step`` (or a
    ``start`` the grid does not hold) it is a whole :func:`stress_test` again."""
    if start < step or start % step:
        return await stress_test(measure, slo_s, step=step, max_level=max_level)
    points: list[tuple[int, float, bool]] = []
    met: dict[int, bool] = {}

    async def at(c: int) -> bool:   # each level measured once in this search
        if c not in met:
            t = await measure(c)
            points.append((c, t, t <= slo_s))
            met[c] = t <= slo_s
        return met[c]

    c = start
    while c >= step and not await at(c):
        c -= step
    if c < step:   # every level down to the first step failed: the climb below it, afresh
        return await _below_step(measure, slo_s, step, points)
    while c + step <= max_level and await at(c + step):
        c += step
    failed = {lv for lv, _, ok in points if not ok}
    return Search(c, len(points), points, bracketed=c + step in failed)


async def _below_step(measure, slo_s: float, step: int, points: list) -> Search:
    """Levels 1, 2, ... below the first step (every multiple of ``step`` failed), as :func:`stress_test`."""
    depth = 0
    for c in range(1, step):
        t = await measure(c)
        points.append((c, t, t <= slo_s))
        if t > slo_s:
            break
        depth = c
    failed = {lv for lv, _, ok in points if not ok}
    return Search(depth, len(points), points, bracketed=(depth + 1) in failed)


async def fine_tune(measure: Callable[[dict[str, int]], Awaitable[dict[str, float]]], start: dict[str, int],
                    slo_s: float, step: int = 1, max_runs: int = 12) -> Search:
    """Depths adjusted with all devices running at once (Section V-B): ``measure(depths)`` fills every
    queue and returns each device's latency statistic. A device over the SLO shrinks (by ``step``, or in
    proportion to its overshoot when that is more: latency grows about linearly with C); once every
    device meets the SLO, each in turn (accelerator first) grows by ``step`` while all still meet it.
    The result is the best configuration that met the SLO (``depths``), or the last tried when none did
    (then ``depth`` counts it and ``converged`` is False)."""
    depths = {d: max(1, v) for d, v in start.items()}
    points: list[tuple[int, float, bool]] = []
    best: dict[str, int] | None = None
    runs = 0

    async def run(ds) -> dict[str, float]:
        nonlocal runs, best
        runs += 1
        lat = await measure(ds)
        ok = all(v <= slo_s for v in lat.values())
        points.append((sum(ds.values()), max(lat.values()), ok))
        if ok and (best is None or sum(ds.values()) > sum(best.values())):
            best = dict(ds)
        return lat

    lat = await run(depths)
    while runs < max_runs and any(v > slo_s for v in lat.values()):
        bad = {d: v for d, v in lat.items() if v > slo_s and depths[d] > 1}
        if not bad:
            break
        for d, v in bad.items():
            shrink = int(depths[d] * slo_s / v) if np.isfinite(v) else depths[d] - step
            depths[d] = max(1, min(depths[d] - step, shrink))
        lat = await run(depths)
    failed_next = set()   # devices whose next step up was tried and failed: the search is bracketed there
    if best is not None:
        for dev in list(best):
            while runs < max_runs:
                trial = dict(best, **{dev: best[dev] + step})
                before = dict(best)
                await run(trial)
                if best == before:
                    failed_next.add(dev)
                    break
    final = best or depths
    return Search(sum(final.values()), runs, points, dict(final), converged=best is not None,
                  bracketed=best is not None and failed_next == set(best))

"""The event loop of Trinity's vector-search pool (paper section 3.2): arrivals, a policy and an engine on one clock.

The clock is virtual. Each extend advances it by that extend's duration; gaps with nothing to do are
skipped (never slept). Two engines plug in:

- :class:`LiveAdapter` runs the real :class:`~.engine.ExtendEngine`; the duration of each extend is its
  wall-clock time (``time.perf_counter``, CUDA synchronised) measured as it runs;
- :class:`ReplayAdapter` replays traces of real searches (extends and distance tasks of each request,
  recorded by the live engine; they do not depend on the batch, see the engine's docstring) and draws each
  extend's duration from the live engine's measured extend times with the same number of launches of the
  fixed-shape distance op (:class:`TimeModel`).

Latency is always ``done - arrival``, from the intended arrival time of the open-loop schedule.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Mapping, Sequence

import numpy as np

from ...core.machine import devices
from .workload import Request, Source


@dataclasses.dataclass
class ExtendLog:
    start: list[float] = dataclasses.field(default_factory=list)
    dur: list[float] = dataclasses.field(default_factory=list)
    fill: list[int] = dataclasses.field(default_factory=list)        # distance tasks
    launches: list[int] = dataclasses.field(default_factory=list)    # launches of the fixed-shape op
    active: list[int] = dataclasses.field(default_factory=list)


class LiveAdapter:
    """The real engine; each extend timed with perf_counter (CUDA synchronised)."""

    def __init__(self, engine, queries: np.ndarray):
        self.e, self.queries = engine, queries
        self.lanes = engine.lanes
        self.cuda = str(engine.dev).startswith("cuda")
        self.samples: list[tuple[int, int, float]] = []   # (tasks, launches, seconds) of every extend

    def n_active(self) -> int:
        return self.e.n_active()

    def n_free(self) -> int:
        return self.e.n_free()

    def admit(self, reqs: list[Request]) -> None:
        if reqs:
            self.e.admit(self.queries[[r.qidx for r in reqs]], [r.k for r in reqs], [r.top_m for r in reqs], reqs)

    def extend(self) -> tuple[float, list[tuple[Request, object]], int, int]:
        if self.cuda:
            devices.synchronize()
        t0 = time.perf_counter()
        fin = self.e.extend()
        if self.cuda:
            devices.synchronize()
        dt = time.perf_counter() - t0
        self.samples.append((self.e.last_fill, self.e.last_launches, dt))
        return dt, [(f.tag, f) for f in fin], self.e.last_fill, self.e.last_launches


class TimeModel:
    """Measured extend times of one engine shape, grouped by the number of launches of the fixed-shape
    distance op in that extend; draws a time for a given launch count (nearest measured count).

    ``shape``: where the trace timed every launch count in interleaved rounds, the median time of each
    count over that of the full count (``full``). A draw is then a measured time at the full count times
    the shape of the nearest calibrated count: the level (and the noise) of the full engine, which the
    capacity is sized by, and the cost of a partly full engine relative to it from the rounds. Without it,
    a slow stretch of the host that fell on the full extends but not on the few partial ones (a trace read
    0.60 ms at 5 launches and 1.29 ms at 8) makes a partly full engine serve more than a full one, and a
    load sized by the full engine is no longer that share of what the replay can serve."""

    def __init__(self, samples: list[tuple[int, int, float]], seed: int,
                 shape: dict[int, float] | None = None, full: int | None = None):
        if not samples:
            raise ValueError("a time model needs measured extend times")
        launches = np.array([s[1] for s in samples])
        dur = np.array([s[2] for s in samples], dtype=float)
        self.by = {int(k): dur[launches == k].tolist() for k in np.unique(launches)}
        self.keys = np.array(sorted(self.by))
        self.shape, self.full = (dict(shape), int(full)) if shape and full in self.by else (None, None)
        self.rng = np.random.default_rng(seed)
        self._near: dict[int, list[float]] = {}

    def with_seed(self, seed: int) -> "TimeModel":
        """The same measured times with a fresh random stream."""
        other = object.__new__(TimeModel)
        other.by, other.keys, other.shape, other.full = self.by, self.keys, self.shape, self.full
        other.rng, other._near = np.random.default_rng(seed), {}
        return other

    def _factor(self, launches: int) -> float:
        ks = np.array(sorted(self.shape))
        return self.shape[int(ks[np.abs(ks - launches).argmin()])]

    def _samples(self, launches: int) -> list[float]:
        arr = self._near.get(launches)
        if arr is None:
            if self.shape:
                f = self._factor(launches)
                arr = [t * f for t in self.by[self.full]]
            else:
                arr = self.by[int(self.keys[np.abs(self.keys - launches).argmin()])]
            self._near[launches] = arr
        return arr

    def draw(self, launches: int) -> float:
        arr = self._samples(launches)
        return arr[int(self.rng.random() * len(arr))]

    def median(self, launches: int) -> float:
        return float(np.median(self._samples(launches)))


def calibrated_shape(launches: Sequence[int], dur: Sequence[float], full: int) -> dict[int, float]:
    """Each launch count's median extend time over the full count's, from interleaved calibration rounds
    (:class:`TimeModel` ``shape``); empty where the rounds never reached the full count."""
    lch, t = np.asarray(launches, dtype=int), np.asarray(dur, dtype=float)
    med = {int(k): float(np.median(t[lch == k])) for k in np.unique(lch)}
    if not med.get(int(full), 0) > 0:
        return {}
    return {k: v / med[int(full)] for k, v in med.items()}


@dataclasses.dataclass
class Trace:
    """A real search of query ``qidx`` at top-M ``top_m``: distance tasks of each extend, and result ids."""

    steps: list[int]
    ids: np.ndarray

    def __post_init__(self):
        self.steps = [int(x) for x in self.steps]


def launches_for(busy: int, fill: int, lanes: int, slot_lanes: int | None, capacity: int, fixed: bool) -> int:
    """Launches of a ``lanes``-lane distance op in one extend of the live engine: every launch of the fixed
    shape (``fixed``: a replayed CUDA graph), the launches that cover the ``busy`` slots of ``slot_lanes``
    (p x D) lanes each, packed from slot 0 as the engine refills them (the CPU engine skips the rest; a
    fragmented engine may run one more), or, for traces without slot sizes, the launches the
    extend's ``fill`` distance tasks would fill in a compacted task array."""
    if not slot_lanes:
        return max(1, -(-fill // lanes))
    return max(1, -(-(capacity if fixed else busy) * slot_lanes // lanes))


class ReplayAdapter:
    """Replays traced searches in ``capacity`` slots; extend durations from a :class:`TimeModel`."""

    def __init__(self, traces: Mapping[tuple[int, int], Trace], capacity: int, lanes: int, times: TimeModel,
                 slot_lanes: int | None = None, fixed: bool = False):
        self.traces, self.capacity, self.lanes, self.times = traces, capacity, lanes, times
        self.slot_lanes, self.fixed = slot_lanes, fixed      # as the live engine launched (:func:`launches_for`)
        self.slots: list[list] = []      # [request, trace, next step]

    def n_active(self) -> int:
        return len(self.slots)

    def n_free(self) -> int:
        return self.capacity - len(self.slots)

    def admit(self, reqs: list[Request]) -> None:
        for r in reqs:
            self.slots.append([r, self.traces[(r.qidx, r.top_m)], 0])

    def extend(self) -> tuple[float, list[tuple[Request, object]], int, int]:
        fill, busy = 0, len(self.slots)
        done, keep = [], []
        for s in self.slots:
            steps = s[1].steps
            fill += steps[s[2]]
            s[2] += 1
            (done if s[2] >= len(steps) else keep).append(s)
        self.slots = keep
        launches = launches_for(busy, fill, self.lanes, self.slot_lanes, self.capacity, self.fixed)
        return self.times.draw(launches), [(s[0], s[1]) for s in done], fill, launches


def _result(req: Request, res, now: float) -> None:
    req.done = now
    if hasattr(res, "extends"):           # a live Finished
        req.extends, req.ids, req.steps = res.extends, res.ids, res.steps
    else:                                 # a replayed Trace
        req.extends, req.ids = len(res.steps), res.ids[:req.k]


def run(adapter, policy, source: Source, max_extends: int = 10_000_000) -> tuple[list[Request], ExtendLog]:
    """The event loop: run until no request is left; returns the finished requests and the log of extends."""
    now, done, log = 0.0, [], ExtendLog()
    for _ in range(max_extends):
        for r in source.pop_until(now):
            policy.push(r, now)
        at = policy.launch_at(now, adapter.n_active(), adapter.n_free())
        nxt = source.next_time()
        if at is None or at > now:
            if at is None and nxt is None:
                return done, log
            now = min(t for t in (at, nxt) if t is not None)
            continue
        batch = policy.take(now, adapter.n_free(), adapter.n_active())
        for r in batch:
            r.admitted = now
        adapter.admit(batch)
        active = adapter.n_active()
        if not active:
            raise RuntimeError(f"policy {type(policy).__name__} launched an extend with no request")
        dt, fin, fill, launches = adapter.extend()
        log.start.append(now)
        log.dur.append(dt)
        log.fill.append(fill)
        log.launches.append(launches)
        log.active.append(active)
        now += dt
        finished = []
        for req, res in fin:
            _result(req, res, now)
            done.append(req)
            finished.append(req)
            source.on_done(req, now)
        policy.on_extend(now, finished, adapter.n_active())
    raise RuntimeError(f"serving loop did not finish within {max_extends} extends")

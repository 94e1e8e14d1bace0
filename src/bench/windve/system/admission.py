"""Deadline-aware admission: Algorithm 1 (Section IV-B1) with the regression law of equation 12 used
online, so that the queries the queue manager accepts also meet the SLO when they do not arrive together.

The paper's depth C_max is the largest C with alpha * C + beta <= SLO (equations 7-10): it assumes the C
queries of a device arrive at once and run as one batch. Queries that arrive while a batch runs wait for
it and then run as the next batch, so a query admitted by depth alone can take the rest of the running
batch + the batching delay + alpha * C' + beta: up to about twice the SLO. With an SLO given, the queue
manager therefore also asks each device's instance for a :class:`Backlog` (the running batch, the queries
waiting for the next one) and admits a query to the device only when :func:`predict` says the batch it
would join completes within the SLO: of the query itself, and of every query already in that batch that
would have met its SLO without it. The depth stays the hard cap (the paper's C_max); the prediction only
refuses earlier.

:class:`LawTracker` keeps a device's law up to date from its own batches (batch size, compute seconds),
with the same non-negative least squares as the estimator (:func:`.estimator.fit`). :class:`Residuals`
keeps what the law does not see (the event loop busy parsing a burst, a batch started late, cores shared
with other work): when each recent request was answered minus when its batch was predicted to end (the
prediction of the batch's last member, which counts every member); its high quantile is the margin the
prediction must leave below the SLO.
"""
from __future__ import annotations

import bisect
import collections
import dataclasses
from typing import Callable

from .emulation import LinearLaw


@dataclasses.dataclass(frozen=True)
class Backlog:
    """What a device instance holds now (times on ``time.perf_counter``'s clock, seconds)."""

    running_n: int                                  # queries in the batch being computed (0: idle)
    running_start: float                            # when that batch started computing
    waiting: tuple[tuple, ...] = ()                 # (queries, arrival[, extra_s]) of requests not yet in a batch,
                                                    # oldest first
    running_extra_s: float = 0.0                    # the running batch's work beyond the law (see below)


@dataclasses.dataclass(frozen=True)
class Prediction:
    """When the batch a new request would join completes, and whether that batch meets the SLO."""

    finish: float       # predicted completion time of that batch
    latency: float      # finish - the new request's arrival
    ok: bool            # the new request and every member that met its SLO without it still meet it
    margin: float = 0.0  # seconds left below the SLO for what the law does not see (:class:`Residuals`)


def predict(backlog: Backlog, n: int, arrival: float, now: float, law: Callable[[int], float], slo_s: float,
            batch_delay_s: float = 0.0, max_batch: int | None = None, margin: float = 0.0,
            extra_s: float = 0.0) -> Prediction:
    """Completion of ``n`` new queries (arrived at ``arrival``) queued behind ``backlog`` on one instance.

    Mirrors the instance's worker (:class:`.instances.Instance`): the running batch ends at
    ``running_start + law(running_n)`` (or now, if it already overran the law); the worker then waits the
    batching delay from the moment it sees the first waiting request and takes the waiting requests, whole,
    until a batch holds ``max_batch`` queries; each batch takes ``law(C)`` and the next starts a batching
    delay after it. The new request goes last, into the last batch or a new one. A batch meets a member's SLO
    when it completes ``margin`` seconds before it.

    ``extra_s`` (per request) is work a batch must do before its law can hold, done first: the emulated
    accelerator computes the real embeddings of texts it has not seen on this CPU, so its batch takes
    max(law(C), the sum of its requests' extra) (0 for a real device)."""
    slo_s = slo_s - margin

    def took(c: int, extra: float) -> float:
        return max(law(c), extra) if c else 0.0

    running_end = now
    if backlog.running_n:
        running_end = max(now, backlog.running_start + took(backlog.running_n, backlog.running_extra_s))
    jobs = [(j[0], j[1], j[2] if len(j) > 2 else 0.0) for j in backlog.waiting] + [(n, arrival, extra_s)]
    seen = backlog.waiting[0][1] if backlog.waiting else now
    start = max(now, max(seen, running_end) + batch_delay_s)
    batches: list[list] = []                        # [queries, extra seconds, [arrival of each request]]
    for k, arr, x in jobs:
        if not batches or (max_batch is not None and batches[-1][0] >= max_batch):
            batches.append([0, 0.0, []])
        batches[-1][0] += k
        batches[-1][1] += x
        batches[-1][2].append(arr)
    for c, x, _ in batches[:-1]:
        start += took(c, x) + batch_delay_s
    c, x, arrivals = batches[-1]
    finish = start + took(c, x)
    ok = finish - arrival <= slo_s
    if ok and len(arrivals) > 1:
        without = start + took(c - n, x - extra_s)
        ok = all(finish - a <= slo_s for a in arrivals[:-1] if without - a <= slo_s)
    return Prediction(finish=finish, latency=finish - arrival, ok=ok, margin=margin)


class LawTracker:
    """Equation 12 fitted online to a device's last ``window`` batches (batch size, compute seconds)."""

    def __init__(self, window: int = 64):
        self.points: collections.deque[tuple[int, float]] = collections.deque(maxlen=window)
        self.law: LinearLaw | None = None

    def add(self, n: int, seconds: float) -> None:
        """Record one batch and refit (at batch completion, off the admission path)."""
        from .estimator import fit

        self.points.append((int(n), float(seconds)))
        if len({c for c, _ in self.points}) >= 2:
            f = fit([c for c, _ in self.points], [t for _, t in self.points])
            self.law = LinearLaw(f.alpha, f.beta)

    def reset(self) -> None:
        self.points.clear()
        self.law = None


class Residuals:
    """Answered minus predicted completion of a device's requests of the last ``horizon_s`` seconds;
    :meth:`margin` is their ``q`` quantile (>= 0, at most ``cap`` seconds; linear interpolation, as
    ``numpy.quantile``), 0 with none that recent. The residuals are also kept sorted (an insertion and a
    removal each, by bisection), so the admission path reads the quantile by index instead of sorting the
    window on each ask (that cost 0.3 ms of CPU with a full window, in the queue manager's decision)."""

    def __init__(self, horizon_s: float = 10.0, q: float = 0.95, maxlen: int = 4096):
        self.values: collections.deque[tuple[float, float]] = collections.deque(maxlen=maxlen)   # (when, residual)
        self.horizon_s, self.q = horizon_s, q
        self._sorted: list[float] = []

    def add(self, answered: float, predicted: float) -> None:
        if len(self.values) == self.values.maxlen:   # the deque drops its oldest: so does the sorted copy
            self._drop(self.values[0][1])
        r = answered - predicted
        self.values.append((answered, r))
        bisect.insort(self._sorted, r)

    def _drop(self, r: float) -> None:
        del self._sorted[bisect.bisect_left(self._sorted, r)]

    def margin(self, cap: float = float("inf"), now: float | None = None) -> float:
        import time

        now = time.perf_counter() if now is None else now
        while self.values and self.values[0][0] < now - self.horizon_s:
            self._drop(self.values.popleft()[1])
        return min(max(0.0, self._quantile()), cap)

    def _quantile(self) -> float:
        n = len(self._sorted)
        if not n:
            return 0.0
        pos = self.q * (n - 1)
        lo = int(pos)
        hi = min(lo + 1, n - 1)
        return self._sorted[lo] + (self._sorted[hi] - self._sorted[lo]) * (pos - lo)

    def reset(self) -> None:
        self.values.clear()
        self._sorted.clear()

"""The emulated LLM workload that issues Trinity's retrievals (paper sections 2 and 3.3), labelled emulated.

- Prefill requests arrive open-loop (Poisson or bursty, from :mod:`bench.serving.loadgen`); each needs one
  retrieval before its first token, with a deadline ``arrival + L_pre,max`` (the TTFT budget).
- Decode streams issue a retrieval every ``delta`` tokens: a stream generates ``delta`` tokens at
  ``token_s`` each, issues a retrieval, stalls until it returns, and goes on (a closed loop per stream).
- Requests are heterogeneous: each draws a class (k, top-M) by weight, so extend counts differ.

No language model runs here: the stages are emulated by their timing; the retrievals are real searches
(or replays of real searches, see :mod:`.event_loop`).
"""
from __future__ import annotations

import dataclasses
import heapq
import itertools
from typing import Iterable, Sequence

import numpy as np

from ...serving import loadgen
from ...core.base.errors import ConfigError


@dataclasses.dataclass
class Request:
    """One retrieval. Times are seconds on the run's clock; ``arrival`` is the intended send time."""

    rid: int
    qidx: int
    k: int
    top_m: int
    arrival: float
    kind: str = "query"              # query | prefill | decode
    deadline: float | None = None
    stream: int | None = None
    admitted: float | None = None
    done: float | None = None
    extends: int | None = None
    ids: np.ndarray | None = None
    steps: list[int] | None = None   # distance tasks of each extend (live engine with trace=True)

    @property
    def latency(self) -> float:
        return self.done - self.arrival

    @property
    def missed(self) -> bool:
        return self.deadline is not None and self.done > self.deadline


@dataclasses.dataclass(frozen=True)
class RequestClass:
    k: int
    top_m: int
    weight: float = 1.0


def parse_classes(spec: Sequence[dict], what: str) -> list[RequestClass]:
    if not spec:
        raise ConfigError(f"{what}: at least one request class (k, top_m) is needed")
    out = [RequestClass(int(c["k"]), int(c["top_m"]), float(c.get("weight", 1.0))) for c in spec]
    for c in out:
        if c.k < 1 or c.k > c.top_m:
            raise ConfigError(f"{what}: k={c.k} must be in [1, top-M={c.top_m}]")
        if c.weight <= 0:
            raise ConfigError(f"{what}: class weights must be > 0, got {c.weight}")
    return out


def schedule(arrival: str, rate: float, n: int, seed: int, burst: dict | None = None) -> np.ndarray:
    """Intended arrival times (s) from the shared open-loop load generator."""
    if not rate > 0:
        raise ConfigError(f"offered rate must be > 0 requests/s, got {rate}")
    if arrival == "poisson":
        return loadgen.poisson_schedule(rate, n, seed)
    if arrival == "bursty":
        return loadgen.bursty_schedule(rate, n, seed, **(burst or {}))
    raise ConfigError(f"arrival must be poisson or bursty, got {arrival!r}")


class Source:
    """Future requests on a heap; open-loop arrivals are pushed up front, decode streams push on completion."""

    def __init__(self, classes: Sequence[RequestClass], n_queries: int, seed: int):
        self.heap: list[tuple[float, int, Request]] = []
        self.rng = np.random.default_rng(seed)
        self.classes = list(classes)
        w = np.array([c.weight for c in self.classes])
        self.p = w / w.sum()
        self.nq = n_queries
        self.ids = itertools.count()
        self.streams: dict[int, "DecodeStream"] = {}

    def make(self, at: float, kind: str, classes: Sequence[RequestClass] | None = None,
             deadline_s: float | None = None, stream: int | None = None) -> Request:
        cls = classes or self.classes
        w = np.array([c.weight for c in cls])
        c = cls[int(self.rng.choice(len(cls), p=w / w.sum()))]
        r = Request(next(self.ids), int(self.rng.integers(self.nq)), c.k, c.top_m, float(at), kind,
                    None if deadline_s is None else at + deadline_s, stream)
        heapq.heappush(self.heap, (r.arrival, r.rid, r))
        return r

    def add_open_loop(self, times: Iterable[float], kind: str = "query", deadline_s: float | None = None,
                      classes: Sequence[RequestClass] | None = None) -> None:
        cls = list(classes or self.classes)
        times = np.asarray(list(times), dtype=float)
        w = np.array([c.weight for c in cls])
        pick = self.rng.choice(len(cls), size=times.size, p=w / w.sum())
        qidx = self.rng.integers(self.nq, size=times.size)
        for t, ci, q in zip(times.tolist(), pick.tolist(), qidx.tolist()):
            c = cls[ci]
            r = Request(next(self.ids), q, c.k, c.top_m, t, kind, None if deadline_s is None else t + deadline_s)
            self.heap.append((t, r.rid, r))
        heapq.heapify(self.heap)

    def next_time(self) -> float | None:
        return self.heap[0][0] if self.heap else None

    def pop_until(self, now: float) -> list[Request]:
        out = []
        while self.heap and self.heap[0][0] <= now:
            out.append(heapq.heappop(self.heap)[2])
        return out

    def on_done(self, req: Request, now: float) -> None:
        if req.stream is not None:
            self.streams[req.stream].on_done(req, now)


@dataclasses.dataclass
class DecodeStream:
    """A decode sequence: ``delta`` tokens at ``token_s`` each, then a retrieval it stalls on; stops at ``until``."""

    sid: int
    source: Source
    classes: Sequence[RequestClass]
    delta: int
    token_s: float
    until: float
    tokens: int = 0
    stall_s: float = 0.0

    def start(self, phase: float) -> None:
        self.source.streams[self.sid] = self
        self._issue(phase)

    def _issue(self, t: float) -> None:
        if t < self.until:
            self.source.make(t, "decode", self.classes, stream=self.sid)

    def on_done(self, req: Request, now: float) -> None:
        self.stall_s += now - req.arrival
        gen = self.delta * self.token_s
        if now + gen <= self.until:
            self.tokens += self.delta
        self._issue(now + gen)


def add_decode_streams(source: Source, n: int, classes: Sequence[RequestClass], delta: int, token_s: float,
                       until: float, seed: int) -> list[DecodeStream]:
    """``n`` decode streams started at random phases within one retrieval interval."""
    if delta < 1:
        raise ConfigError(f"retrieval interval delta={delta} tokens must be >= 1")
    if not token_s > 0:
        raise ConfigError(f"per-token time must be > 0 s, got {token_s}")
    rng = np.random.default_rng(seed)
    streams = [DecodeStream(i, source, classes, delta, token_s, until) for i in range(n)]
    for s, ph in zip(streams, rng.uniform(0, delta * token_s, size=n)):
        s.start(float(ph))
    return streams

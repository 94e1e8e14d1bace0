"""Batching policies on the extend engine (paper section 3.2): static (per-request batching, as CAGRA
runs batches) against Trinity's continuous batching.

- static: a batch forms from up to B waiting requests, or after a flush timeout counted from the oldest
  waiting request; it runs until every member finishes; arrivals wait for the next batch;
- continuous: free slots are refilled at every extend; when the engine is idle a flush timeout bounds how
  long the first waiting request waits for company.

A policy answers two questions of the serving loop (:mod:`.event_loop`): when should the next extend start
(:meth:`launch_at`), and which waiting requests join it (:meth:`take`).
"""
from __future__ import annotations

import collections

from ...core.base.errors import ConfigError
from .workload import Request


class _Queue:
    def __init__(self, capacity: int, flush_s: float):
        if capacity < 1:
            raise ConfigError(f"batch size B={capacity} must be >= 1")
        if flush_s < 0:
            raise ConfigError(f"flush timeout must be >= 0 s, got {flush_s}")
        self.capacity, self.flush_s = capacity, flush_s
        self.q: collections.deque[Request] = collections.deque()

    def push(self, req: Request, now: float) -> None:
        self.q.append(req)

    def waiting(self) -> int:
        return len(self.q)

    def on_extend(self, now: float, finished: list[Request], n_active: int) -> None:
        """Feedback hook (the stage-aware scheduler's control loop uses it)."""


class Continuous(_Queue):
    name = "continuous"

    def launch_at(self, now: float, n_active: int, n_free: int) -> float | None:
        if n_active:
            return now
        if not self.q:
            return None
        if len(self.q) >= n_free:
            return now
        return self.q[0].arrival + self.flush_s

    def take(self, now: float, n_free: int, n_active: int) -> list[Request]:
        return [self.q.popleft() for _ in range(min(n_free, len(self.q)))]


class Static(_Queue):
    name = "static"

    def launch_at(self, now: float, n_active: int, n_free: int) -> float | None:
        if n_active:
            return now                      # the running batch goes on
        if not self.q:
            return None
        if len(self.q) >= self.capacity:
            return now
        return self.q[0].arrival + self.flush_s

    def take(self, now: float, n_free: int, n_active: int) -> list[Request]:
        if n_active:
            return []                       # arrivals wait for the next batch
        return [self.q.popleft() for _ in range(min(self.capacity, n_free, len(self.q)))]


POLICIES = {"static": Static, "continuous": Continuous}


def make(name: str, capacity: int, flush_s: float):
    if name not in POLICIES:
        raise ConfigError(f"batching policy must be one of {sorted(POLICIES)}, got {name!r}")
    return POLICIES[name](capacity, flush_s)

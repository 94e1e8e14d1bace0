"""Trinity's extend engine (paper section 3.2) on one Triton kernel: the same slots, admissions, finish flags
and stage accounting as :class:`.engine.ExtendEngine`, with every extend of every slot run on chip by
:mod:`bench.ann.graph_search` (one program per slot, its top-M list and a visited table in registers).

One :meth:`KernelEngine.extend` is one launch of ``extends_per_launch`` (R) extends of every active slot:
R = 1 is the paper's engine step for step (a slot freed by a finished request is refilled before the next
extend), with one launch where the torch engine runs some 170 operators; R > 1 runs several extends per
launch and refills between launches (continuous batching at R-extend granularity). The host reads the
finish flags every ``sync_every`` launches (:meth:`sync`), as the torch engine does; between reads nothing
waits for the host.

Stage accounting stays per extend: each finished request carries its extends, its distance tasks and, when
tracing, the tasks of each of its extends (written by the kernel), so the replay of the serving steps
works from these traces as from the torch engine's. ``last_fill`` is the distance tasks of the latest
launch, ``last_launches`` is 1 (one kernel launch carries the extends), ``lanes`` the lanes of one extend of
one slot (p x D).

Results equal :func:`bench.ann.graph_search.reference`; against the torch engine the lists can differ only
where two distances differ in their last bits (the kernel sums in a fixed pairwise order, ties by id) and
where the torch engine's bounded hash forgets: recall is the same to the tests' tolerance.
"""
from __future__ import annotations

import heapq
from typing import Sequence

import numpy as np

from ...ann import graph_search, kernels
from ...core.base.errors import ConfigError
from .engine import Finished, validate_queries


class KernelEngine:
    """Slots of concurrent graph searches advanced ``extends_per_launch`` extends per kernel launch."""

    def __init__(self, vectors: np.ndarray, graph: np.ndarray, *, capacity: int, p: int = 1,
                 top_m_max: int = 64, max_iters: int = 256, device: str = "cpu", seed: int = 0,
                 trace: bool = False, extends_per_launch: int = 1, sync_every: int | None = None,
                 visited_size: int | None = None):
        import torch

        how, why = kernels.mode(device)
        if how is None:
            raise ConfigError(f"the graph search kernel cannot run here: {why}")
        if capacity < 1 or extends_per_launch < 1:
            raise ConfigError(f"capacity {capacity} and extends per launch {extends_per_launch} must be >= 1")
        self.torch, self.how = torch, how
        self.g = graph_search.Graph.build(vectors, graph, p=p, seed=seed, device=device)
        self.dev, self.n, self.D, self.p, self.S, self.M = self.g.device, graph.shape[0], graph.shape[1], p, capacity, top_m_max
        if not 1 <= top_m_max <= self.n:
            raise ConfigError(f"top_m_max={top_m_max} must be in [1, N={self.n}]")
        self.R, self.max_iters, self.trace = int(extends_per_launch), max_iters, trace
        self.slots = graph_search.Slots.new(self.g, capacity, top_m_max, max_iters, trace, visited_size)
        self.sync_every = int(sync_every if sync_every is not None else 1 if self.dev.type == "cpu" else 4)
        self.clear()
        self._fill = torch.zeros((), dtype=torch.int64, device=self.dev)
        self._since_sync = 0

    @property
    def lanes(self) -> int:
        return self.p * self.D

    @property
    def mode(self) -> str:
        return f"{self.how} ({self.R} extends per launch)"

    @property
    def last_fill(self) -> int:
        return int(self._fill)

    @property
    def last_launches(self) -> int:
        return 1

    def clear(self) -> None:
        self.slots.active.zero_()
        self.tags: list[object] = [None] * self.S
        self.k = [0] * self.S
        self.used = np.zeros(self.S, dtype=bool)
        self.free = list(range(self.S))

    def n_active(self) -> int:
        return self.S - len(self.free)

    def n_free(self) -> int:
        return len(self.free)

    def admit(self, queries: np.ndarray, ks: Sequence[int], top_ms: Sequence[int], tags: Sequence[object]) -> list[int]:
        """Put requests in free slots (lowest first); they start at the next launch."""
        if len(ks) > len(self.free):
            raise ConfigError(f"{len(ks)} requests for {len(self.free)} free slots")
        if not len(ks):
            return []
        validate_queries(queries, self.g.x.shape[1], ks, top_ms, self.n, self.M)
        slots = [heapq.heappop(self.free) for _ in ks]
        self.slots.reset(slots, np.asarray(queries, np.float32), np.asarray(top_ms))
        for s, k, tag in zip(slots, ks, tags):
            self.k[s], self.tags[s], self.used[s] = int(k), tag, True
        return slots

    def extend(self) -> list[Finished]:
        """One launch (R extends of every active slot); every ``sync_every`` launches the finished."""
        before = self.slots.tasks.sum()
        graph_search.run(self.g, self.slots, self.R)
        self._fill = self.slots.tasks.sum() - before
        self._since_sync += 1
        if self._since_sync < self.sync_every:
            return []
        return self.sync()

    def sync(self) -> list[Finished]:
        """Read the finish flags (one host synchronisation); free the finished slots, ascending."""
        self._since_sync = 0
        fin = np.flatnonzero(self.used & (self.slots.active.cpu().numpy() == 0))
        if not len(fin):
            return []
        kmax = max(self.k[s] for s in fin)
        idx = self.torch.as_tensor(fin, device=self.dev)
        ids, dists = self.slots.results(kmax)
        rows = [a[idx].cpu().numpy() for a in (ids, dists, self.slots.iters, self.slots.tasks, self.slots.steps
                                               if self.trace else self.slots.iters)]
        return [self._finish(int(s), *(r[j] for r in rows)) for j, s in enumerate(fin)]

    def _finish(self, s: int, ids, dists, iters, tasks, steps) -> Finished:
        k = self.k[s]
        f = Finished(s, self.tags[s], ids[:k].astype(np.int64), dists[:k].copy(), int(iters), int(tasks),
                     steps[:int(iters)].tolist() if self.trace else None)
        self.tags[s] = None
        self.used[s] = False
        heapq.heappush(self.free, s)
        return f

    def visited_bytes_per_slot(self) -> int:
        return 4 * self.slots.vis.shape[1]

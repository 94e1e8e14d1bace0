"""Frozen reference: the extend engine as it was before issue 17 (S x (N + 1) visited bitmap, nonzero compaction,
host reads every extend). The tests compare the static-shape engine against it: same ids, extends and distance
tasks. (The graph build's numpy reference is tests/ann/graph_reference.py.)"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from bench.core.base.errors import ConfigError


@dataclasses.dataclass
class Finished:
    """A request that left the engine: its slot, result ids/distances (k), extends used, tasks evaluated."""

    slot: int
    tag: object
    ids: np.ndarray
    dists: np.ndarray
    extends: int
    tasks: int
    steps: list[int] | None = None   # distance tasks of each of its extends (when the engine traces)


def validate_queries(queries: np.ndarray, dim: int, ks: Sequence[int], top_ms: Sequence[int], n: int,
                     top_m_max: int | None = None) -> None:
    """Bad queries or search sizes, before any work."""
    q = np.asarray(queries)
    if q.ndim != 2 or q.shape[1] != dim:
        raise ConfigError(f"query dimension {q.shape[-1] if q.ndim else '?'} does not match the index dimension {dim}")
    if np.issubdtype(q.dtype, np.floating) and not np.isfinite(q).all():
        raise ConfigError(f"queries contain NaN or infinite values ({int((~np.isfinite(q)).any(1).sum())} rows)")
    for k, m in zip(ks, top_ms):
        if k < 1:
            raise ConfigError(f"k={k} must be >= 1")
        if k > m:
            raise ConfigError(f"k={k} is larger than top-M={m}")
        if k > n or m > n:
            raise ConfigError(f"k={k} / top-M={m} larger than the N={n} indexed vectors")
        if top_m_max is not None and m > top_m_max:
            raise ConfigError(f"top-M={m} exceeds the engine's top_m_max={top_m_max}")


class ExtendEngine:
    """Slots of concurrent graph searches advanced one extend at a time by a fixed-shape distance op."""

    def __init__(self, vectors: np.ndarray, graph: np.ndarray, *, capacity: int, p: int = 1,
                 top_m_max: int = 64, max_iters: int = 256, device: str = "cpu", seed: int = 0,
                 trace: bool = False, chunk: int | None = None):
        import torch

        n, dgr = graph.shape
        if p <= 0:
            raise ConfigError(f"parents per extend p={p} must be > 0")
        if capacity < 1:
            raise ConfigError(f"engine capacity (captured batch size) {capacity} must be >= 1")
        if dgr >= n:
            raise ConfigError(f"graph degree D={dgr} must be < N={n}")
        if vectors.shape[0] != n:
            raise ConfigError(f"graph has {n} rows, vectors {vectors.shape[0]}: the graph does not match its vectors")
        if top_m_max < 1 or top_m_max > n:
            raise ConfigError(f"top_m_max={top_m_max} must be in [1, N={n}]")
        if max_iters < 1:
            raise ConfigError(f"max_iters={max_iters} must be >= 1")
        self.torch, self.dev = torch, torch.device(device)
        self.n, self.D, self.p, self.S, self.M = n, dgr, p, capacity, top_m_max
        self.P = p * dgr
        self.chunk = int(chunk or capacity * self.P)
        if not 1 <= self.chunk <= capacity * self.P:
            raise ConfigError(f"distance-op size {self.chunk} lanes must be in "
                              f"[1, capacity x p x D = {capacity * self.P}]")
        self.max_iters = max_iters
        self.trace = trace
        self.X = torch.as_tensor(np.ascontiguousarray(vectors, dtype=np.float32), device=self.dev)
        self.G = torch.as_tensor(np.ascontiguousarray(graph, dtype=np.int64), device=self.dev)
        srt = np.sort(graph, axis=1)
        rows_repeat = bool((srt[:, 1:] == srt[:, :-1]).any())
        self.dedupe = p > 1 or rows_repeat or n < self.P
        rng = np.random.default_rng(seed)
        self.seeds = torch.as_tensor(rng.choice(n, size=self.P, replace=n < self.P), device=self.dev)  # entry points
        self._alloc()

    @property
    def lanes(self) -> int:
        """The captured size of one launch of the distance operation."""
        return self.chunk

    def _alloc(self) -> None:
        t, S, M, dev = self.torch, self.S, self.M, self.dev
        self.q = t.zeros(S, self.X.shape[1], device=dev)
        self.ids = t.full((S, M), -1, dtype=t.int64, device=dev)
        self.dist = t.full((S, M), float("inf"), device=dev)
        self.exp = t.zeros(S, M, dtype=t.bool, device=dev)
        self.mlim = t.zeros(S, dtype=t.int64, device=dev)
        self.visited = t.zeros(S, self.n + 1, dtype=t.bool, device=dev)   # column n: dump for masked lanes
        self.active = t.zeros(S, dtype=t.bool, device=dev)
        self.fresh = t.zeros(S, dtype=t.bool, device=dev)
        self.iters = t.zeros(S, dtype=t.int64, device=dev)
        self.tasks = t.zeros(S, dtype=t.int64, device=dev)
        self.ar_m = t.arange(M, device=dev)
        self.ar_p = t.arange(self.P, device=dev)
        self.tags: list[object] = [None] * S
        self.k = [0] * S
        self.steps: list[list[int]] = [[] for _ in range(S)]
        self.free = list(range(S - 1, -1, -1))
        self.last_fill = 0
        self.last_launches = 0

    def n_active(self) -> int:
        return self.S - len(self.free)

    def n_free(self) -> int:
        return len(self.free)

    def admit(self, queries: np.ndarray, ks: Sequence[int], top_ms: Sequence[int], tags: Sequence[object]) -> list[int]:
        """Put requests in free slots; they start at the next extend. Returns their slots."""
        t = self.torch
        if len(ks) > len(self.free):
            raise ConfigError(f"{len(ks)} requests for {len(self.free)} free slots")
        if not len(ks):
            return []
        validate_queries(queries, self.X.shape[1], ks, top_ms, self.n, self.M)
        slots = [self.free.pop() for _ in ks]
        sl = t.as_tensor(slots, device=self.dev)
        self.q[sl] = t.as_tensor(np.asarray(queries, dtype=np.float32), device=self.dev)
        self.ids[sl] = -1
        self.dist[sl] = float("inf")
        self.exp[sl] = False
        self.visited[sl] = False
        self.mlim[sl] = t.as_tensor(list(top_ms), device=self.dev)
        self.iters[sl] = 0
        self.tasks[sl] = 0
        self.active[sl] = True
        self.fresh[sl] = True
        for s, k, tag in zip(slots, ks, tags):
            self.k[s], self.tags[s], self.steps[s] = int(k), tag, []
        return slots

    def _candidates(self):
        """(S, P) candidate ids and lane mask of this extend; marks the chosen parents expanded."""
        t, S, M = self.torch, self.S, self.M
        open_ = (self.ids >= 0) & ~self.exp & (self.ar_m[None] < self.mlim[:, None])
        key = t.where(open_, self.ar_m[None].expand(S, M), M)
        pos = t.topk(key, self.p, dim=1, largest=False, sorted=True).values        # (S, p), M = none
        pvalid = (pos < M) & (self.active & ~self.fresh)[:, None]
        parents = self.ids.gather(1, pos.clamp(max=M - 1)).clamp(min=0)
        mark = t.zeros(S, M + 1, dtype=t.bool, device=self.dev)
        mark.scatter_(1, t.where(pvalid, pos, M), True)
        self.exp |= mark[:, :M]
        nbr = self.G[parents].reshape(S, self.P)
        ok = pvalid.repeat_interleave(self.D, dim=1)
        fresh = self.fresh[:, None]
        nbr = t.where(fresh, self.seeds[None].expand(S, -1), nbr)
        ok = ok | fresh
        return nbr, ok

    def _filter(self, nbr, ok):
        """Drop visited lanes and repeated ids within a row; mark the survivors visited."""
        t = self.torch
        ok = ok & ~self.visited.gather(1, nbr)
        if self.dedupe:
            ok = self._drop_repeats(nbr, ok)
        self.visited.scatter_(1, t.where(ok, nbr, self.n), True)
        return ok

    def _drop_repeats(self, nbr, ok):
        """Keep the first lane of each id within a row (only needed when p > 1 or rows repeat ids)."""
        t = self.torch
        uniq = t.where(ok, nbr, self.n + self.ar_p[None])          # masked lanes get distinct sentinels
        srt, order = t.sort(uniq, dim=1, stable=True)
        dup = t.zeros_like(ok)
        dup[:, 1:] = srt[:, 1:] == srt[:, :-1]
        return ok & ~t.zeros_like(ok).scatter_(1, order, dup)

    def _merge(self, nbr, ok, d) -> None:
        t, M = self.torch, self.M
        all_ids = t.cat([self.ids, t.where(ok, nbr, -1)], dim=1)
        all_d = t.cat([self.dist, d], dim=1)
        all_e = t.cat([self.exp, t.zeros_like(ok)], dim=1)
        # stable sort: ties keep list-then-lane order, which depends on the request's own state only
        order = t.sort(all_d, dim=1, stable=True).indices[:, :M]
        keep = self.ar_m[None] < self.mlim[:, None]
        self.ids = t.where(keep, all_ids.gather(1, order), -1)
        self.dist = t.where(keep, all_d.gather(1, order), float("inf"))
        self.exp = keep & all_e.gather(1, order)

    def _distances(self, nbr, ok):
        """Compact the (S, P) lanes' real tasks into one task array and evaluate it with a fixed-shape op of
        ``chunk`` lanes, launched ceil(tasks / chunk) times (at least once); the tail is padded with masked
        dummies. Returns (S, P) squared L2 distances (inf on dropped lanes) and the number of launches."""
        t = self.torch
        rows, cols = ok.nonzero(as_tuple=True)
        n_t = rows.numel()
        launches = max(1, -(-n_t // self.chunk))
        ids = t.zeros(launches * self.chunk, dtype=t.int64, device=self.dev)
        qrow = t.zeros_like(ids)
        ids[:n_t], qrow[:n_t] = nbr[rows, cols], rows
        out = t.empty_like(ids, dtype=self.X.dtype)
        for i in range(launches):
            sl = slice(i * self.chunk, (i + 1) * self.chunk)
            out[sl] = ((self.X[ids[sl]] - self.q[qrow[sl]]) ** 2).sum(1)
        d = t.full((self.S, self.P), float("inf"), device=self.dev)
        d[rows, cols] = out[:n_t]
        return d, launches

    def extend(self) -> list[Finished]:
        """One extend of every active request; returns the requests that finished."""
        t = self.torch
        with t.no_grad():
            nbr, ok = self._candidates()
            ok = self._filter(nbr, ok & self.active[:, None])
            d, self.last_launches = self._distances(nbr, ok)
            self._merge(nbr, ok, d)
            nt = ok.sum(1)
            self.tasks += nt
            if self.trace:
                for s, n_t in zip(t.nonzero(self.active).flatten().tolist(), nt[self.active].tolist()):
                    self.steps[s].append(n_t)
            self.iters += self.active.long()
            self.fresh &= False
            open_ = ((self.ids >= 0) & ~self.exp).any(1)
            done = self.active & (~open_ | (self.iters >= self.max_iters))
            self.active &= ~done
            self.last_fill = int(nt.sum())
            done_slots = t.nonzero(done).flatten().tolist()
        return [self._finish(s) for s in done_slots]

    def _finish(self, s: int) -> Finished:
        k = self.k[s]
        f = Finished(s, self.tags[s], self.ids[s, :k].cpu().numpy().copy(), self.dist[s, :k].cpu().numpy().copy(),
                     int(self.iters[s]), int(self.tasks[s]), self.steps[s] if self.trace else None)
        self.tags[s] = None
        self.free.append(s)
        return f


"""Trinity's extend-step graph search engine (paper section 3.2, Figure 3), in torch, CPU or CUDA.

The engine holds ``capacity`` request slots. Each slot keeps a top-M list (ids, distances, expanded flags),
a bounded visited table (:mod:`.visited`) and an iteration count, all on the device. One
:meth:`ExtendEngine.extend` advances every active request by one extend (the paper's steps (1)-(5)):

1. select up to ``p`` unexpanded parents from each top-M (nearest first) and mark them expanded;
2. gather the ``D`` graph neighbours of each parent (a new request instead evaluates the fixed entry points);
3. drop neighbours already visited, in the request's own top-M, or repeated within the step; record the
   rest as visited;
4. evaluate the capacity x p x D lanes with a fixed-shape distance operation of ``chunk`` lanes (the
   captured size), launched ceil(capacity x p x D / chunk) times; dropped lanes and idle slots are masked
   dummies (lane utilisation = real distance tasks / launched lanes);
5. merge the distances into each top-M (stable sort: ties keep list-then-lane order, deterministic).

Every shape is static and nothing in an extend waits for the host: masks replace compaction, finishing is
a device-side flag, and the host reads the flags every ``sync_every`` extends (:meth:`ExtendEngine.sync`).
On CUDA the whole extend is captured once as a CUDA graph and replayed (:mod:`.capture`), eager otherwise.
On the CPU, where no graph is replayed, an eager extend skips the launches whose slots all are free (the
host knows which it filled); free slots are refilled lowest first, so a lightly loaded engine runs few.
Admissions go straight into free slots' device state between extends (continuous batching refills slots
between replays); a slot is free again once a sync has read its result.

A request finishes on its own when its top-M has no unexpanded entry left (after which no extend can change
it: its top-M has stopped changing) or at ``max_iters`` extends. A request's trajectory depends only on its
own state, so every batching policy returns the same ids (tested). Heterogeneous requests (different k and
top-M) share the engine: a slot's list is masked beyond its own M.
"""
from __future__ import annotations

import dataclasses
import heapq
from typing import Sequence

import numpy as np

from ...core.base.errors import ConfigError
from .capture import Captured
from .visited import BitmapVisited, HashVisited, default_size, hash_bytes_per_slot


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


def _check_sizes(n: int, dgr: int, nvec: int, capacity: int, p: int, top_m_max: int, max_iters: int) -> None:
    if p <= 0:
        raise ConfigError(f"parents per extend p={p} must be > 0")
    if capacity < 1:
        raise ConfigError(f"engine capacity (captured batch size) {capacity} must be >= 1")
    if dgr >= n:
        raise ConfigError(f"graph degree D={dgr} must be < N={n}")
    if nvec != n:
        raise ConfigError(f"graph has {n} rows, vectors {nvec}: the graph does not match its vectors")
    if top_m_max < 1 or top_m_max > n:
        raise ConfigError(f"top_m_max={top_m_max} must be in [1, N={n}]")
    if max_iters < 1:
        raise ConfigError(f"max_iters={max_iters} must be >= 1")
    if n >= 2 ** 31:
        raise ConfigError(f"N={n} vectors: ids must fit in 31 bits")


class ExtendEngine:
    """Slots of concurrent graph searches advanced one extend at a time by a fixed-shape distance op.

    - ``sync_every``: extends between host reads of the finish flags (default 1 on CPU, where a read
      costs no device wait; 4 on CUDA); a finished request is returned, and its slot freed, at the next read;
    - ``visited``: "hash" (bounded per slot, CAGRA's small hash), "bitmap" (exact, bit-packed: N / 8 bytes
      per slot) or "auto" (the bitmap where it is no larger than the hash); ``visited_size``: hash entries
      per slot (default from top-M and D), ``visited_ways``: entries per bucket;
    - ``cuda_graph``: capture the extend on CUDA (eager when capture fails: see ``mode``);
    - ``skip_idle``: an eager extend skips the launches of the distance op whose slots all are free (the host
      knows which slots it has filled, so this costs no synchronisation); default on the CPU, where the fixed
      shape is not needed and masked lanes cost as much as real ones. Off, every extend has the same shapes
      (what a CUDA graph replays). Free slots are refilled lowest first, so a lightly loaded engine keeps its
      requests in the first launches."""

    def __init__(self, vectors: np.ndarray, graph: np.ndarray, *, capacity: int, p: int = 1,
                 top_m_max: int = 64, max_iters: int = 256, device: str = "cpu", seed: int = 0,
                 trace: bool = False, chunk: int | None = None, sync_every: int | None = None,
                 visited: str = "auto", visited_size: int | None = None, visited_ways: int = 16,
                 cuda_graph: bool = True, skip_idle: bool | None = None):
        import torch

        n, dgr = graph.shape
        _check_sizes(n, dgr, vectors.shape[0], capacity, p, top_m_max, max_iters)
        self.torch, self.dev = torch, torch.device(device)
        self.n, self.D, self.p, self.S, self.M = n, dgr, p, capacity, top_m_max
        self.P = p * dgr
        self._shape(chunk, sync_every)
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
        self.vis = self._visited(visited, visited_size, visited_ways)
        # a captured graph replays its launches whatever the slots hold: no skipping where one is captured
        # (set before the capture below, which runs the step and reads it)
        want = (self.dev.type == "cpu") if skip_idle is None else bool(skip_idle)
        self.skip_idle = want and not (self.dev.type == "cuda" and cuda_graph)
        self._run = Captured(torch, self._step, self.dev, enabled=cuda_graph)

    def _shape(self, chunk: int | None, sync_every: int | None) -> None:
        """The captured size (chunk lanes, launches per extend) and the host read interval."""
        self.chunk = int(chunk or self.S * self.P)
        if not 1 <= self.chunk <= self.S * self.P:
            raise ConfigError(f"distance-op size {self.chunk} lanes must be in "
                              f"[1, capacity x p x D = {self.S * self.P}]")
        self.launches = -(-self.S * self.P // self.chunk)
        self.sync_every = int(sync_every if sync_every is not None else 4 if self.dev.type == "cuda" else 1)
        if self.sync_every < 1:
            raise ConfigError(f"sync_every={sync_every} must be >= 1")

    @property
    def lanes(self) -> int:
        """The captured size of one launch of the distance operation."""
        return self.chunk

    @property
    def mode(self) -> str:
        """How an extend runs: "cuda-graph" (captured, replayed) or "eager"."""
        return self._run.mode

    @property
    def last_fill(self) -> int:
        """Real distance tasks of the latest extend (reading it waits for that extend on CUDA)."""
        return int(self._fill)

    @property
    def last_launches(self) -> int:
        """Launches of the fixed-shape distance op in the latest extend: ceil(capacity x p x D / chunk) in the
        fixed shape (always, where a CUDA graph replays); fewer where ``skip_idle`` skipped launches whose
        slots all were free."""
        return self._launched

    def _visited(self, kind: str, size: int | None, ways: int):
        """The per-slot visited set; "auto" takes the exact bitmap only where it is no larger than the
        bounded hash table (small N), so a slot never holds more than the hash's bytes."""
        t = self.torch
        if kind not in ("auto", "hash", "bitmap"):
            raise ConfigError(f"visited set must be 'auto', 'hash' or 'bitmap', got {kind!r}")
        size = int(size or default_size(self.M, self.D, self.P))
        ways = min(ways, size)
        bitmap_bytes = 8 * ((self.n + 63) // 64 + 1)
        if kind == "bitmap" or (kind == "auto" and bitmap_bytes <= hash_bytes_per_slot(size, ways)):
            return BitmapVisited(t, self.S, self.P, self.n, self.dedupe, self.dev)
        try:
            return HashVisited(t, self.S, self.M, self.P, size, ways, self.dev)
        except ValueError as e:
            raise ConfigError(str(e)) from None

    def _alloc(self) -> None:
        t, S, M, dev = self.torch, self.S, self.M, self.dev
        self.q = t.zeros(self.launches * self.chunk // self.P + 1, self.X.shape[1], device=dev)  # + dummies
        self.ids = t.full((S, M), -1, dtype=t.int64, device=dev)
        self.dist = t.full((S, M), float("inf"), device=dev)
        self.exp = t.zeros(S, M, dtype=t.bool, device=dev)
        self.mlim = t.zeros(S, dtype=t.int64, device=dev)
        self.active = t.zeros(S, dtype=t.bool, device=dev)
        self.fresh = t.zeros(S, dtype=t.bool, device=dev)
        self.iters = t.zeros(S, dtype=t.int64, device=dev)
        self.tasks = t.zeros(S, dtype=t.int64, device=dev)
        self._fill = t.zeros((), dtype=t.int64, device=dev)
        self.steps_buf = t.zeros(S, self.max_iters + 1, dtype=t.int64, device=dev) if self.trace else None
        self.ar_m = t.arange(M, device=dev)
        width = self.launches * self.chunk
        self.qrow = (t.arange(width, device=dev) // self.P).clamp(max=S - 1)   # lane -> its slot's query
        self.pad = t.zeros(width - S * self.P, dtype=t.int64, device=dev) if width > S * self.P else None
        self.tags: list[object] = [None] * S
        self.k = [0] * S
        self.used = np.zeros(S, dtype=bool)
        self.free = list(range(S))                        # a heap: the lowest free slot is filled first
        rows = np.arange(self.launches) * self.chunk // self.P   # launch i covers slots [first[i], last[i]]
        self._launch_slots = list(zip(rows, np.minimum((np.arange(1, self.launches + 1) * self.chunk - 1)
                                                         // self.P, S - 1)))
        self._idle_out = t.full((self.chunk,), float("inf"), device=dev)
        self._launched = self.launches
        self._since_sync = 0

    def clear(self) -> None:
        """Drop every request, results unread, and free all slots (a benchmark starts the same engine afresh
        on new queries: :meth:`admit` resets each slot it fills)."""
        with self.torch.no_grad():
            self.active[:] = False
            self.fresh[:] = False
        self.tags, self.k = [None] * self.S, [0] * self.S
        self.used[:] = False
        self.free = list(range(self.S))

    def n_active(self) -> int:
        """Slots holding a request whose result the host has not read yet."""
        return self.S - len(self.free)

    def n_free(self) -> int:
        return len(self.free)

    def _h2d(self, a: np.ndarray):
        x = self.torch.from_numpy(np.ascontiguousarray(a))
        if self.dev.type == "cuda":
            return x.pin_memory().to(self.dev, non_blocking=True)   # no wait for queued extends
        return x

    def admit(self, queries: np.ndarray, ks: Sequence[int], top_ms: Sequence[int], tags: Sequence[object]) -> list[int]:
        """Put requests in free slots; they start at the next extend. Returns their slots."""
        if len(ks) > len(self.free):
            raise ConfigError(f"{len(ks)} requests for {len(self.free)} free slots")
        if not len(ks):
            return []
        validate_queries(queries, self.X.shape[1], ks, top_ms, self.n, self.M)
        slots = [heapq.heappop(self.free) for _ in ks]
        with self.torch.no_grad():
            self._reset_slots(self._h2d(np.asarray(slots, dtype=np.int64)), queries, top_ms)
        for s, k, tag in zip(slots, ks, tags):
            self.k[s], self.tags[s], self.used[s] = int(k), tag, True
        return slots

    def _reset_slots(self, sl, queries, top_ms) -> None:
        self.q[sl] = self._h2d(np.asarray(queries, dtype=np.float32))
        self.ids[sl] = -1
        self.dist[sl] = float("inf")
        self.exp[sl] = False
        self.mlim[sl] = self._h2d(np.asarray(top_ms, dtype=np.int64))
        self.iters[sl] = 0
        self.tasks[sl] = 0
        self.active[sl] = True
        self.fresh[sl] = True
        self.vis.clear(sl)

    def extend(self) -> list[Finished]:
        """One extend of every active request (replayed graph or eager); every ``sync_every`` extends the
        host reads the finish flags and returns the requests that finished since the last read."""
        self._run()
        self._since_sync += 1
        if self._since_sync < self.sync_every:
            return []
        return self.sync()

    def _step(self) -> None:
        """The fixed-shape extend: device work only, state updated in place (what the CUDA graph holds)."""
        with self.torch.no_grad():
            nbr, ok = self._candidates()
            ok = self._filter(nbr, ok)
            self._merge(nbr, ok, self._distances(nbr, ok))
            self._account(ok)

    def _candidates(self):
        """(S, P) candidate ids and lane mask of this extend (steps 1-2); marks the chosen parents expanded."""
        t, S, M = self.torch, self.S, self.M
        open_ = (self.ids >= 0) & ~self.exp & (self.ar_m < self.mlim[:, None])
        key = t.where(open_, self.ar_m, M)
        pos = t.topk(key, self.p, dim=1, largest=False, sorted=True).values        # (S, p), M = none
        pvalid = (pos < M) & (self.active & ~self.fresh)[:, None]
        parents = self.ids.gather(1, pos.clamp(max=M - 1)).clamp(min=0)
        mark = t.zeros(S, M + 1, dtype=t.bool, device=self.dev)
        mark.scatter_(1, t.where(pvalid, pos, M), True)
        self.exp |= mark[:, :M]
        nbr = self.G.index_select(0, parents.view(-1)).view(S, self.P)
        ok = pvalid[:, :, None].expand(S, self.p, self.D).reshape(S, self.P)
        fresh = self.fresh[:, None]
        nbr = t.where(fresh, self.seeds, nbr)
        return nbr, (ok | fresh) & self.active[:, None]

    def _filter(self, nbr, ok):
        """Step 3. A bounded table may forget a visit; it also drops ids in the request's own top-M, so such
        a revisit costs one distance, never a duplicate in the list (see :mod:`.visited`)."""
        return self.vis.admit(nbr, ok, self.ids)

    def _distances(self, nbr, ok):
        """Step 4: (S, P) squared L2 distances (inf on masked lanes): ``launches`` launches of the
        ``chunk``-lane op over the lane array padded to launches x chunk; masked lanes read vector 0."""
        t, c = self.torch, self.chunk
        lanes = t.where(ok, nbr, 0).view(-1)
        if self.pad is not None:
            lanes = t.cat([lanes, self.pad])
        busy = [self._busy(i) for i in range(self.launches)]
        self._launched = sum(busy)
        out = t.cat([self._op(lanes[i * c:(i + 1) * c], i) if b else self._idle_out for i, b in enumerate(busy)])
        return t.where(ok, out[:self.S * self.P].view(self.S, self.P), float("inf"))

    def _busy(self, i: int) -> bool:
        """Whether launch ``i`` must run: always in the fixed shape or where it is the only launch; with
        ``skip_idle``, when one of its slots holds a request the host has not read back (a host-side array:
        no synchronisation)."""
        if not self.skip_idle or self.launches == 1:
            return True
        lo, hi = self._launch_slots[i]
        return bool(self.used[lo:hi + 1].any())

    def _op(self, ids, i: int):
        """The fixed-shape distance operation of ``chunk`` lanes (launch ``i``): each lane's vector against
        its slot's query (broadcast per slot when ``chunk`` is a multiple of p x D)."""
        x = self.X.index_select(0, ids)
        if self.chunk % self.P:
            q = self.q.index_select(0, self.qrow[i * self.chunk:(i + 1) * self.chunk])
            return x.sub_(q).pow_(2).sum(1)
        rows = self.chunk // self.P
        q = self.q[i * rows:(i + 1) * rows, None]
        return x.view(rows, self.P, -1).sub_(q).pow_(2).sum(2).view(-1)

    def _merge(self, nbr, ok, d) -> None:
        """Step 5: the best top-M of list + lanes, in place."""
        t, M = self.torch, self.M
        all_ids = t.cat([self.ids, t.where(ok, nbr, -1)], dim=1)
        all_d = t.cat([self.dist, d], dim=1)
        all_e = t.cat([self.exp, t.zeros_like(ok)], dim=1)
        # stable sort: ties keep list-then-lane order, which depends on the request's own state only
        order = t.sort(all_d, dim=1, stable=True).indices[:, :M]
        keep = self.ar_m < self.mlim[:, None]
        self.ids.copy_(t.where(keep, all_ids.gather(1, order), -1))
        self.dist.copy_(t.where(keep, all_d.gather(1, order), float("inf")))
        self.exp.copy_(keep & all_e.gather(1, order))

    def _account(self, ok) -> None:
        """Counters, the per-extend trace, and the device-side finish flag (active cleared)."""
        t = self.torch
        nt = ok.sum(1)
        self.tasks += nt
        if self.steps_buf is not None:
            col = t.where(self.active, self.iters, self.max_iters)   # idle slots write the dump column
            self.steps_buf.scatter_(1, col[:, None], nt[:, None])
        self.iters += self.active.long()
        self.fresh.zero_()
        open_ = ((self.ids >= 0) & ~self.exp).any(1)
        self.active &= open_ & (self.iters < self.max_iters)
        self._fill.copy_(nt.sum())

    def sync(self) -> list[Finished]:
        """Read the finish flags now (one host synchronisation); free the finished slots, ascending."""
        self._since_sync = 0
        fin = np.flatnonzero(self.used & ~self.active.cpu().numpy())
        if not len(fin):
            return []
        rows = self._read_rows(fin)
        return [self._finish(int(s), *(r[j] for r in rows)) for j, s in enumerate(fin)]

    def _read_rows(self, fin: np.ndarray) -> tuple:
        idx = self.torch.as_tensor(fin, device=self.dev)
        kmax = max(self.k[s] for s in fin)
        out = (self.ids[idx, :kmax], self.dist[idx, :kmax], self.iters[idx], self.tasks[idx])
        out += (self.steps_buf[idx],) if self.trace else (self.iters[idx],)
        return tuple(x.cpu().numpy() for x in out)

    def _finish(self, s: int, ids, dists, iters, tasks, steps) -> Finished:
        k = self.k[s]
        f = Finished(s, self.tags[s], ids[:k].copy(), dists[:k].copy(), int(iters), int(tasks),
                     steps[:iters].tolist() if self.trace else None)
        self.tags[s] = None
        self.used[s] = False
        heapq.heappush(self.free, s)
        return f

    def visited_bytes_per_slot(self) -> int:
        """Device bytes of one slot's visited set (independent of N for the hash table)."""
        return self.vis.bytes_per_slot()

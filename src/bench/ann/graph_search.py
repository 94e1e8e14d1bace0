"""Beam search over a fixed-degree graph run on the device by one Triton kernel (shared by the studies; it
serves Trinity, section 3.2, as the search engine of its vector pool, and is CAGRA's single-CTA search in
kind: Ootomo et al., ICDE 2024).

:class:`Slots` holds the state of ``S`` searches on the device (query, candidate list of int64 keys,
visited table, top-M, extends, distances computed, active flag, and optionally the distances of each
extend); :func:`run` advances every active slot by up to ``R`` extends in one launch (one program per
slot: :mod:`bench.ann.graph_kernel`), without a host round trip between extends. A host that refills
finished slots between launches batches continuously (Trinity's engine, ``bench.trinity.system``);
:func:`search` runs a whole batch to the end in one launch.

:func:`reference` is the same search written plainly in numpy and torch, one query at a time: the
kernel's ids, distances, extends and distance counts equal it.

Without a way to run the kernel (:func:`bench.ann.kernels.mode`) there is no torch path here: callers
keep their own engine (Trinity's extend engine in torch) and record why.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..core.base.errors import ConfigError
from . import kernels

KERNEL = "bench.ann.graph_kernel"
KEY_NONE = 0x7FFFFFFFFFFFFFFF
HASH = 2654435761


@dataclasses.dataclass
class Graph:
    """Vectors (N, dim) fp32, the graph (N, D) int32 and the entry points (p x D) on one device."""

    x: "object"
    g: "object"
    seeds: "object"
    p: int

    @classmethod
    def build(cls, vectors, graph, p: int = 1, seed: int = 0, device: str = "cpu") -> "Graph":
        import torch

        n, dgr = np.asarray(graph).shape
        if p < 1:
            raise ConfigError(f"parents per extend p={p} must be >= 1")
        if len(vectors) != n:
            raise ConfigError(f"graph has {n} rows, vectors {len(vectors)}: the graph does not match its vectors")
        if n >= 2 ** 31:
            raise ConfigError(f"N={n} vectors: ids must fit in 31 bits")
        rng = np.random.default_rng(seed)
        seeds = rng.choice(n, size=p * dgr, replace=n < p * dgr)       # the extend engine's entry points
        t = [torch.from_numpy(np.ascontiguousarray(a)) for a in
             (np.asarray(vectors, np.float32), np.asarray(graph, np.int32), seeds.astype(np.int32))]
        return cls(*(a.to(device) for a in t), p=p)

    @property
    def degree(self) -> int:
        return self.g.shape[1]

    @property
    def device(self):
        return self.x.device


def shape(graph: Graph, top_m: int, visited: int | None = None) -> dict:
    """The kernel's static sizes: T (list and lanes, a power of two >= top-M and p x D), H (visited
    table entries, a power of two), DP (dimensions padded to a power of two)."""
    t = max(16, kernels.next_pow2(max(top_m, graph.p * graph.degree)))
    h = kernels.next_pow2(visited or min(512, 4 * t))
    dp = max(16, kernels.next_pow2(graph.x.shape[1]))
    return {"T": t, "LOG_T": t.bit_length() - 1, "H": h, "DP": dp, "LOG_DP": dp.bit_length() - 1}


@dataclasses.dataclass
class Slots:
    """Device state of ``S`` searches (see the module text)."""

    q: "object"
    keys: "object"
    vis: "object"
    mlim: "object"
    iters: "object"
    tasks: "object"
    active: "object"
    steps: "object"
    shape: dict
    max_iters: int

    @classmethod
    def new(cls, graph: Graph, slots: int, top_m_max: int, max_iters: int, trace: bool = False,
            visited: int | None = None) -> "Slots":
        import torch

        if max_iters < 1:
            raise ConfigError(f"max_iters={max_iters} must be >= 1")
        sh = shape(graph, top_m_max, visited)
        dev, i64 = graph.device, torch.int64
        return cls(q=torch.zeros(slots, graph.x.shape[1], device=dev),
                   keys=torch.full((slots, sh["T"]), KEY_NONE, dtype=i64, device=dev),
                   vis=torch.full((slots, sh["H"]), -1, dtype=torch.int32, device=dev),
                   mlim=torch.zeros(slots, dtype=torch.int32, device=dev),
                   iters=torch.zeros(slots, dtype=torch.int32, device=dev),
                   tasks=torch.zeros(slots, dtype=i64, device=dev),
                   active=torch.zeros(slots, dtype=torch.int32, device=dev),
                   steps=torch.zeros((slots, max_iters + 1) if trace else (1, 1), dtype=i64, device=dev),
                   shape=sh, max_iters=max_iters)

    def reset(self, slots, queries, top_ms) -> None:
        """Start new searches in ``slots`` (device writes only; ``queries`` and ``top_ms`` host or device)."""
        import torch

        dev = self.keys.device
        sl = torch.as_tensor(slots, dtype=torch.int64, device=dev)
        self.q[sl] = torch.as_tensor(queries, dtype=torch.float32, device=dev)
        self.mlim[sl] = torch.as_tensor(top_ms, dtype=torch.int32, device=dev)
        self.keys[sl] = KEY_NONE
        self.vis[sl] = -1
        self.iters[sl] = 0
        self.tasks[sl] = 0
        self.active[sl] = 1
        if self.steps.shape[1] > 1:
            self.steps[sl] = 0

    def results(self, k: int):
        """(ids, squared distances) (S, k) of every slot's list, nearest first (device tensors)."""
        import torch

        keys = self.keys[:, :k]
        hi = (keys >> 32).to(torch.int32)
        d = (hi ^ ((hi >> 31) & 0x7FFFFFFF)).view(torch.float32)
        none = keys == KEY_NONE
        return torch.where(none, -1, (keys >> 1) & 0x7FFFFFFF), torch.where(none, float("inf"), d)


def run(graph: Graph, slots: Slots, extends: int) -> None:
    """Up to ``extends`` extends of every active slot, one launch (no host synchronisation)."""
    how, why = kernels.mode(graph.device)
    if how is None:
        raise ConfigError(f"the graph search kernel cannot run here: {why}")
    mod = kernels.module(KERNEL)
    sh = slots.shape
    kernels.launch(mod.graph_search, (slots.keys.shape[0],), graph.x, graph.g, graph.seeds, slots.q, slots.keys,
                   slots.vis, slots.mlim, slots.iters, slots.tasks, slots.active, slots.steps, extends,
                   slots.max_iters, DIM=graph.x.shape[1], DP=sh["DP"], LOG_DP=sh["LOG_DP"], DEG=graph.degree,
                   P=graph.p, T=sh["T"], LOG_T=sh["LOG_T"], H=sh["H"], TRACE=slots.steps.shape[1] > 1,
                   enable_fp_fusion=False)


def search(graph: Graph, queries, k: int, top_m: int, max_iters: int = 256, trace: bool = False,
           visited: int | None = None):
    """Every query searched to the end by one launch (one program per query): (ids, dists, slots)."""
    q = np.asarray(queries)
    check(graph, q, k, top_m)
    slots = Slots.new(graph, len(q), top_m, max_iters, trace, visited)
    slots.reset(np.arange(len(q)), q, np.full(len(q), top_m))
    run(graph, slots, max_iters)
    ids, d = slots.results(k)
    return ids, d, slots


def check(graph: Graph, queries: np.ndarray, k: int, top_m: int) -> None:
    """Bad queries or sizes, before any work."""
    n, dim = graph.x.shape
    if queries.ndim != 2 or queries.shape[1] != dim:
        raise ConfigError(f"queries must be (n, {dim}), got {queries.shape}")
    if not 1 <= k <= top_m <= n:
        raise ConfigError(f"need 1 <= k={k} <= top-M={top_m} <= N={n}")


def _sortable(d: np.ndarray, ids: np.ndarray) -> np.ndarray:
    bits = (d.astype(np.float32) + np.float32(0.0)).view(np.int32)
    key32 = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    return (key32.astype(np.int64) << 32) | (ids.astype(np.int64) << 1)


def reference(graph: Graph, query, k: int, top_m: int, max_iters: int = 256, visited: int | None = None):
    """One query's search written plainly (numpy; distances by torch's :func:`bench.ann.knn.tree_sum`):
    (ids, dists, extends, distances per extend)."""
    sh = shape(graph, top_m, visited)
    t, h, dgr, p = sh["T"], sh["H"], graph.degree, graph.p
    x, g, seeds = graph.x.cpu(), graph.g.cpu().numpy(), graph.seeds.cpu().numpy()
    keys, vis, steps = np.full(t, KEY_NONE, np.int64), np.full(h, -1, np.int64), []
    while True:
        cand, ok = _lanes(keys, g, seeds, top_m, t, p, dgr, first=not steps)
        ok = _admit_ref(cand, ok, keys, vis, h)
        d = _dist_ref(x, query, cand, ok)
        new = np.where(ok, _sortable(d, cand), KEY_NONE)
        keys = np.sort(np.concatenate([keys, new]))[:t]
        keys[top_m:] = KEY_NONE
        steps.append(int(ok.sum()))
        if not ((keys != KEY_NONE) & (keys & 1 == 0)).any() or len(steps) >= max_iters:
            break
    hi = (keys[:k] >> 32).astype(np.int32)
    d = (hi ^ ((hi >> 31) & 0x7FFFFFFF)).view(np.float32)
    return (keys[:k] >> 1) & 0x7FFFFFFF, d, len(steps), steps


def _lanes(keys, g, seeds, top_m, t, p, dgr, first: bool):
    """Steps 1-2 (marks the parents in ``keys``): the candidate of each of the T lanes and its mask."""
    cand, ok = np.zeros(t, np.int64), np.zeros(t, bool)
    if first:
        cand[:p * dgr], ok[:p * dgr] = seeds, True
        return cand, ok
    for i in range(p):
        unexp = np.flatnonzero((keys != KEY_NONE) & (keys & 1 == 0) & (np.arange(t) < top_m))
        if len(unexp):
            keys[unexp[0]] |= 1
            cand[i * dgr:(i + 1) * dgr], ok[i * dgr:(i + 1) * dgr] = g[(keys[unexp[0]] >> 1) & 0x7FFFFFFF], True
    return cand, ok


def _admit_ref(cand, ok, keys, vis, h: int):
    """Step 3 (updates ``vis``): not listed, not in the visited table, not on an earlier lane."""
    listed = np.isin(cand, (keys[keys != KEY_NONE] >> 1) & 0x7FFFFFFF)
    slot = ((cand * HASH) >> 16) & (h - 1)
    seen = vis[slot] == cand
    twin = np.array([ok[:i][cand[:i] == c].any() for i, c in enumerate(cand)])
    ok = ok & ~listed & ~seen & ~twin
    for s in np.unique(slot[ok]):
        vis[s] = cand[ok & (slot == s)].max()
    return ok


def _dist_ref(x, query, cand, ok):
    import torch

    from .knn import tree_sum

    q = torch.as_tensor(np.asarray(query, np.float32))
    diff = x[torch.from_numpy(np.where(ok, cand, 0))] - q
    return np.where(ok, tree_sum(diff * diff).numpy(), np.inf).astype(np.float32)

"""Frozen reference: the numpy pruning and reverse-edge steps of the CAGRA-style graph build (bench.ann.graph,
Trinity section 3.2), written plainly in numpy with a loop over nodes. The tests compare the vectorised torch build against it:
same detour counts, same pruned lists, same graph."""
from __future__ import annotations

import numpy as np


def detour_counts(knn: np.ndarray, chunk: int) -> np.ndarray:
    """(N, K) number of detourable routes of each kNN edge (CAGRA's rank-based criterion)."""
    n, k = knn.shape
    counts = np.zeros((n, k), dtype=np.int32)
    ar = np.arange(k)
    chunk = max(16, min(chunk, (1 << 26) // max(n, 1)))
    table = np.full((chunk, n), -1, dtype=np.int16)      # rank of each id in X's list, -1 if absent
    for s in range(0, n, chunk):
        lst = knn[s:s + chunk]                          # (c, K): X's list
        c = lst.shape[0]
        rows = np.arange(c)[:, None]
        table[rows, lst] = ar
        b = table[rows[:, :, None], knn[lst]]           # (c, K, K): rank b of Z's c-th neighbour in X's list
        ok = (b > ar[None, :, None]) & (b > ar[None, None, :])   # max(a, c) < b (absent: b = -1)
        idx = (np.broadcast_to(rows[:, :, None], b.shape) * k + b)[ok]
        counts[s:s + c] = np.bincount(idx, minlength=c * k).reshape(c, k)
        table[rows, lst] = -1
    return counts


def prune(knn: np.ndarray, degree: int, chunk: int) -> np.ndarray:
    """(N, D) the D edges with the fewest detours, ties broken by rank (stable sort)."""
    counts = detour_counts(knn, chunk)
    order = np.argsort(counts, axis=1, kind="stable")[:, :degree]
    return np.take_along_axis(knn, order, axis=1)


def add_reverse_edges(pruned: np.ndarray) -> np.ndarray:
    """(N, D): best D/2 pruned edges, then reverse edges by source rank, then the rest of the pruned list."""
    n, dgr = pruned.shape
    src = np.repeat(np.arange(n), dgr)
    rank = np.tile(np.arange(dgr), n)
    dst = pruned.ravel()
    order = np.lexsort((rank, dst))
    rev_src, rev_dst = src[order], dst[order]
    starts = np.searchsorted(rev_dst, np.arange(n + 1))
    half = dgr // 2
    out = np.empty_like(pruned)
    for i in range(n):
        cand = np.concatenate([pruned[i, :half], rev_src[starts[i]:starts[i + 1]], pruned[i, half:]])
        _, first = np.unique(cand, return_index=True)
        keep = cand[np.sort(first)]
        out[i] = keep[:dgr]
    return out

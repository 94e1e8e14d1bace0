"""kNN-graph candidates by an inverted file built and searched on the device in torch (stage 1 of
:func:`bench.ann.knn.knn_graph` past the exact limit on a GPU; it serves Trinity's graph build, section 3.2,
the way CAGRA builds its initial kNN graph from an IVF index: Ootomo et al., ICDE 2024, section IV-A).

1. k-means on the device: ``nlist`` centroids from a seeded sample, ``iters`` rounds of assignment (one
   matmul + argmin per tile of vectors) and update (``index_add_``), empty lists keeping their centroid;
2. every vector assigned to its nearest centroid; the vectors sorted by list (one host read of the list
   sizes: a build, not a search);
3. per list, its members are the queries and the members of the ``nprobe`` lists nearest its centroid the
   candidates: one matmul and one top-(c) per list, so the work is N x nprobe x N / nlist x d instead of
   N^2 x d (at 1M vectors, nlist 1,000, nprobe 16: 64x less).

The candidates then go through the same exact re-rank as every other stage 1 (:func:`bench.ann.knn.rerank`),
so the lists are the exact K nearest among the candidates, ties by id.
"""
from __future__ import annotations

import numpy as np


def kmeans(xt, nlist: int, iters: int, seed: int, budget: int):
    """(nlist, d) centroids of ``xt`` (N, d) on its device."""
    import torch

    n = xt.shape[0]
    rng = np.random.default_rng(seed)
    cent = xt[torch.as_tensor(np.sort(rng.choice(n, size=nlist, replace=False)), device=xt.device)].clone()
    for _ in range(iters):
        assign = nearest(xt, cent, budget)
        sums = torch.zeros_like(cent).index_add_(0, assign, xt)
        counts = torch.bincount(assign, minlength=nlist).to(xt.dtype)
        cent = torch.where(counts[:, None] > 0, sums / counts.clamp(min=1)[:, None], cent)
    return cent


def nearest(xt, cent, budget: int):
    """(N,) index of each row's nearest centroid (tiles of rows: one matmul + argmin each)."""
    import torch

    cn = (cent * cent).sum(1)
    tile = max(1, budget // max(1, cent.shape[0]))
    out = torch.empty(xt.shape[0], dtype=torch.int64, device=xt.device)
    for s in range(0, xt.shape[0], tile):
        out[s:s + tile] = torch.addmm(cn[None], xt[s:s + tile], cent.T, alpha=-2.0).argmin(1)
    return out


def candidates(xt, c: int, nlist: int, nprobe: int, seed: int, budget: int, iters: int = 8):
    """(N, c) candidate ids of each row (self possibly among them, -1 where fewer than c were probed)."""
    import torch

    n = xt.shape[0]
    nlist = max(1, min(nlist, n))
    cent = kmeans(xt, nlist, iters, seed, budget)
    assign = nearest(xt, cent, budget)
    order = torch.argsort(assign, stable=True)
    sizes = torch.bincount(assign, minlength=nlist).cpu().numpy()
    starts = np.concatenate([[0], np.cumsum(sizes)])
    cc = (cent * cent).sum(1)
    probes = torch.addmm(cc[None], cent, cent.T, alpha=-2.0).topk(min(nprobe, nlist), 1, largest=False).indices.cpu().numpy()
    sq = (xt * xt).sum(1)
    out = torch.full((n, c), -1, dtype=torch.int64, device=xt.device)
    for lst in np.flatnonzero(sizes):
        members = order[starts[lst]:starts[lst + 1]]
        cand = torch.cat([order[starts[p]:starts[p + 1]] for p in probes[lst]])
        d = torch.addmm(sq[cand][None], xt[members], xt[cand].T, alpha=-2.0)
        w = min(c, cand.numel())
        out[members, :w] = cand[d.topk(w, dim=1, largest=False, sorted=False).indices]
    return out


def method(nlist: int, nprobe: int) -> str:
    return f"IVF on the device (torch k-means, {nlist} lists, {nprobe} probed per list)"

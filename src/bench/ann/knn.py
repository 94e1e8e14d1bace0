"""Exact kNN graphs, shared by the studies (not a study itself): each vector's K nearest other vectors,
nearest first, ties broken by id. It serves Trinity (Liu and Qian, 2025), section 3.2: step 1 of its
fixed-degree search graph, built the CAGRA way (Ootomo et al., ICDE 2024: its initial kNN graph), through
:mod:`bench.ann.graph`; any study needing a kNN graph imports it from here.

Two stages, so that every device gives the same lists:

1. candidates: the K + 1 + ``MARGIN`` nearest by a fast, rounding-prone search: on CUDA a tiled matmul
   (||x||^2 - 2 x.y + ||y||^2) and topk in torch; on CPU faiss's flat index, which is faster there than
   torch's matmul + topk; beyond ``exact_max_n`` vectors an inverted file (approximate): on CUDA built and
   searched on the device (:mod:`bench.ann.knn_ivf`, sqrt(N) lists), on the CPU faiss IVF-flat;
2. exact re-rank: each candidate's squared L2 distance by elementwise float32 ops and a fixed pairwise
   sum (:func:`tree_sum`; bitwise the same on every device), self removed, the K best by (distance, id).

The margin absorbs the float32 rounding of stage 1: lists differ between devices only if a true K-nearest
neighbour falls outside another device's K + 1 + MARGIN candidates.
"""
from __future__ import annotations

import numpy as np

from ..core.base.errors import DataFormatError
from . import knn_ivf

MARGIN = 16


def ivf_lists(n: int) -> int:
    """Lists of the device-side inverted file: about sqrt(N) (1,000 lists of 1,000 vectors at 1M)."""
    return max(1, int(round(np.sqrt(n))))


def tree_sum(v):
    """Sum over the last dimension in a fixed pairwise order (halves added elementwise, zero-padded to a
    power of two): the same float32 bits on CPU and CUDA, unlike torch's reductions."""
    import torch

    d = v.shape[-1]
    width = 1 << max(0, (d - 1).bit_length())
    if width != d:
        v = torch.nn.functional.pad(v, (0, width - d))
    while v.shape[-1] > 1:
        h = v.shape[-1] // 2
        v = v[..., :h] + v[..., h:]
    return v[..., 0]


def _rows(budget: int, per_row: int, cap: int = 1 << 16) -> int:
    """Rows of a tile whose temporaries hold about ``budget`` elements."""
    return max(1, min(cap, budget // max(per_row, 1)))


def matmul_candidates(xt, c: int, budget: int):
    """(N, c) ids of each row's c nearest other rows by a tiled float32 matmul and topk (self excluded)."""
    import torch

    n = xt.shape[0]
    sq = (xt * xt).sum(1)
    out = torch.empty(n, c, dtype=torch.int64, device=xt.device)
    tile = _rows(budget, n)
    for s in range(0, n, tile):
        e = min(n, s + tile)
        d = torch.addmm(sq[None], xt[s:e], xt.T, alpha=-2).add_(sq[s:e, None])
        d[torch.arange(e - s, device=xt.device), torch.arange(s, e, device=xt.device)] = float("inf")
        out[s:e] = d.topk(c, dim=1, largest=False, sorted=False).indices
    return out


def faiss_candidates(x: np.ndarray, c: int, exact: bool, nprobe: int, seed: int) -> np.ndarray:
    """(N, c) faiss neighbours (self usually among them; -1 where IVF found too few)."""
    import faiss

    n, d = x.shape
    if exact:
        index = faiss.IndexFlatL2(d)
    else:
        nlist = int(4 * np.sqrt(n))
        index = faiss.IndexIVFFlat(faiss.IndexFlatL2(d), d, nlist)
        rng = np.random.default_rng(seed)
        index.train(x[np.sort(rng.choice(n, size=min(n, nlist * 39), replace=False))])
        index.nprobe = nprobe
    index.add(x)
    return index.search(x, c)[1]


def rerank(xt, cand, k: int, budget: int):
    """(N, k) the k best candidates of each row by exact distance, ties by id; self and -1 never chosen."""
    import torch

    n, c = cand.shape
    out = torch.empty(n, k, dtype=torch.int64, device=xt.device)
    tile = _rows(budget, c * xt.shape[1], cap=256 if xt.device.type == "cpu" else 1 << 14)  # CPU: cache-sized
    for s in range(0, n, tile):
        e = min(n, s + tile)
        ids, order = cand[s:e].sort(dim=1)                          # id order first: ties by id
        v = xt.index_select(0, ids.clamp(min=0).reshape(-1)).view(e - s, c, -1).sub_(xt[s:e, None])
        d = tree_sum(v.mul_(v))
        own = torch.arange(s, e, device=xt.device)[:, None]
        d = torch.where((ids == own) | (ids < 0), float("inf"), d)
        best = d.sort(dim=1, stable=True).indices[:, :k]
        out[s:e] = torch.where(d.gather(1, best).isinf(), -1, ids.gather(1, best))
    return out


def knn_graph(x: np.ndarray, k: int, exact_max_n: int, nprobe: int, seed: int, device: str = "cpu",
              budget: int | None = None) -> np.ndarray:
    """(N, k) ids of each vector's k nearest other vectors, nearest first, ties by id. ``budget``: elements
    of a tile's temporaries (default 2^25 on CPU, 2^28 on CUDA)."""
    import torch

    n = x.shape[0]
    xt = torch.as_tensor(np.ascontiguousarray(x, dtype=np.float32), device=device)
    budget = budget or (1 << 25 if xt.device.type == "cpu" else 1 << 28)
    c = min(n - 1, k + MARGIN)
    if n <= exact_max_n and xt.device.type != "cpu":
        cand = matmul_candidates(xt, c, budget)
    elif xt.device.type != "cpu":
        cand = knn_ivf.candidates(xt, c + 1, ivf_lists(n), nprobe, seed, budget)
    else:
        cand = torch.as_tensor(faiss_candidates(np.asarray(x, np.float32), c + 1, n <= exact_max_n, nprobe, seed),
                               device=xt.device)
    out = rerank(xt, cand, k, budget).cpu().numpy()
    if (out < 0).any():
        raise DataFormatError("the kNN graph has missing neighbours (too few vectors reachable by IVF)")
    return out


def method(n: int, exact_max_n: int, nprobe: int, device: str) -> str:
    """Provenance text of the kNN stage for a build of ``n`` vectors on ``device``."""
    if n > exact_max_n and device.startswith("cuda"):
        first = knn_ivf.method(ivf_lists(n), nprobe)
    elif n > exact_max_n:
        first = f"faiss IVF-flat, nprobe {nprobe}"
    elif device.startswith("cuda"):
        first = "exact: tiled float32 matmul + topk (torch, CUDA)"
    else:
        first = "exact: faiss flat"
    return f"{first}; K + 1 + {MARGIN} candidates re-ranked by exact float32 distance, ties by id"

"""The fixed-degree search graph of Trinity's vector pool (paper section 3.2: "a fixed-degree neighbor list
G in N^{N x D}" kept resident beside the vectors), built the CAGRA way (Ootomo et al., ICDE 2024):

1. a kNN graph of degree K (faiss: exact flat search at small N, IVF-flat beyond);
2. rank-based pruning: an edge X->Y at rank b is "detourable" through Z at rank a < b when Y is in Z's
   list at a rank c < b (max(a, c) < b); each node keeps the D edges with the fewest detours (ties by rank);
3. reverse edges: the final list takes the best D/2 pruned edges, then reverse edges (ordered by their rank
   in the source's pruned list), then the remaining pruned edges, up to D distinct neighbours.

The graph is stored as an ``ibin`` file (N x D int32) with a JSON sidecar holding the fingerprint of the
vectors it was built on; :func:`load_graph` refuses a graph that does not match its vectors.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from ..core.atomic import write_text
from ..core.errors import ConfigError, DataFormatError
from ..data import formats


@dataclasses.dataclass(frozen=True)
class GraphParams:
    degree: int = 32              # D, the fixed out-degree
    knn_degree: int = 64          # K, the intermediate kNN graph's degree (CAGRA: 2 x D)
    exact_max_n: int = 200_000    # exact kNN graph up to this N, IVF-flat beyond
    ivf_nprobe: int = 16
    chunk: int = 2048


def check_params(n: int, params: GraphParams) -> None:
    """Bad graph parameters, before any work."""
    if params.degree < 2:
        raise ConfigError(f"graph degree D={params.degree} must be >= 2")
    if params.degree >= n:
        raise ConfigError(f"graph degree D={params.degree} must be < N={n} (the number of base vectors)")
    if params.knn_degree < params.degree:
        raise ConfigError(f"knn_degree K={params.knn_degree} must be >= the degree D={params.degree}")
    if params.knn_degree >= n:
        raise ConfigError(f"knn_degree K={params.knn_degree} must be < N={n}")


def fingerprint(vectors: np.ndarray) -> str:
    """sha256 of the vectors' shape, dtype and bytes: ties a graph to the exact vectors it was built on."""
    x = np.ascontiguousarray(vectors)
    h = hashlib.sha256(f"{x.shape}|{x.dtype}".encode())
    h.update(memoryview(x).cast("B"))
    return h.hexdigest()


def knn_graph(x: np.ndarray, k: int, exact_max_n: int, nprobe: int, seed: int) -> np.ndarray:
    """(N, k) ids of each vector's k nearest other vectors (self removed), nearest first."""
    n, d = x.shape
    if n <= exact_max_n:
        index = faiss.IndexFlatL2(d)
    else:
        nlist = int(4 * np.sqrt(n))
        index = faiss.IndexIVFFlat(faiss.IndexFlatL2(d), d, nlist)
        rng = np.random.default_rng(seed)
        index.train(x[np.sort(rng.choice(n, size=min(n, nlist * 39), replace=False))])
        index.nprobe = nprobe
    index.add(x)
    _, ids = index.search(x, k + 1)
    self_col = ids == np.arange(n)[:, None]
    keep = ~self_col
    keep[:, -1] &= self_col.any(1)  # rows without self (duplicates) drop their last column instead
    out = ids[keep].reshape(n, k)
    if (out < 0).any():
        raise DataFormatError("the kNN graph has missing neighbours (too few vectors reachable by IVF)")
    return out.astype(np.int64)


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


def build_graph(x: np.ndarray, params: GraphParams, seed: int = 0) -> np.ndarray:
    """The (N, D) int32 fixed-degree graph of ``x``."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    check_params(x.shape[0], params)
    knn = knn_graph(x, params.knn_degree, params.exact_max_n, params.ivf_nprobe, seed)
    pruned = prune(knn, params.degree, params.chunk)
    return add_reverse_edges(pruned).astype(np.int32)


def save_graph(path: str | Path, graph: np.ndarray, vectors: np.ndarray, meta: dict[str, Any]) -> Path:
    """Write ``graph`` (ibin) and its sidecar ``<path>.json`` (fingerprint of ``vectors``, build meta)."""
    path = Path(path)
    side = {"n": int(graph.shape[0]), "degree": int(graph.shape[1]), "dim": int(vectors.shape[1]),
            "vectors_sha256": fingerprint(vectors), **meta}
    formats.write_bin(path, graph.astype(np.int32), "ibin")
    write_text(Path(str(path) + ".json"), json.dumps(side, indent=2, sort_keys=True) + "\n")
    return path


def check_graph(graph: np.ndarray, vectors: np.ndarray, side: dict | None = None, where: str = "graph") -> None:
    """Raise DataFormatError when ``graph`` does not belong to ``vectors``."""
    n = vectors.shape[0]
    if graph.ndim != 2 or graph.shape[0] != n:
        raise DataFormatError(f"{where}: {graph.shape[0]} rows but the vectors have {n}: "
                              "the graph does not match its vectors")
    if graph.shape[1] >= n:
        raise ConfigError(f"{where}: degree D={graph.shape[1]} must be < N={n}")
    if graph.size and (graph.min() < 0 or graph.max() >= n):
        raise DataFormatError(f"{where}: neighbour ids outside [0, {n}): the graph does not match its vectors")
    if side is not None and side.get("vectors_sha256") != fingerprint(vectors):
        raise DataFormatError(f"{where}: built on other vectors (fingerprint differs): "
                              "the graph does not match its vectors")


def load_graph(path: str | Path, vectors: np.ndarray) -> tuple[np.ndarray, dict]:
    """Read a graph and its sidecar; check both against ``vectors``."""
    path = Path(path)
    side_p = Path(str(path) + ".json")
    if not path.exists() or not side_p.exists():
        raise DataFormatError(f"{path}: graph file or its sidecar {side_p.name} is missing")
    side = json.loads(side_p.read_text())
    graph = np.asarray(formats.read_bin(path, "ibin", mmap=False))
    check_graph(graph, vectors, side, where=str(path))
    return graph, side

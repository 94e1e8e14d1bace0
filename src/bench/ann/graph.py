"""CAGRA-style fixed-degree graphs, shared by the studies (not a study itself). It serves Trinity (Liu and
Qian, 2025), section 3.2: the search graph of its vector pool, "a fixed-degree neighbor list G in N^{N x D}"
kept resident beside the vectors, built the CAGRA way (Ootomo et al., ICDE 2024); Trinity's search engine
over it stays in ``bench.trinity.system``. Any study needing such a graph imports it from here:

1. a kNN graph of degree K (:mod:`bench.ann.knn`: exact by a tiled matmul + topk on CUDA up to ``exact_max_n_cuda``
   vectors, an inverted file built and searched on the GPU beyond (:mod:`bench.ann.knn_ivf`); by faiss flat
   on CPU up to ``exact_max_n``, faiss IVF-flat beyond; candidates re-ranked exactly, ties by id);
2. rank-based pruning: an edge X->Y at rank b is "detourable" through Z at rank a < b when Y is in Z's
   list at a rank c < b (max(a, c) < b); each node keeps the D edges with the fewest detours (ties by rank);
3. reverse edges: the final list takes the best D/2 pruned edges, then reverse edges (ordered by their rank
   in the source's pruned list), then the remaining pruned edges, up to D distinct neighbours.

Steps 2-3 are vectorised torch (tiles of rows, no Python loop over nodes) and run on the build device
(CUDA when present); every step gives the same result on every device, so a GPU build equals a CPU build.

The graph is stored as an ``ibin`` file (N x D int32) with a JSON sidecar holding the fingerprint of the
vectors it was built on; :func:`load_graph` refuses a graph that does not match its vectors.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..core.base.atomic import write_text
from ..core.base.errors import ConfigError, DataFormatError
from ..data import formats
from . import knn


@dataclasses.dataclass(frozen=True)
class GraphParams:
    degree: int = 32              # D, the fixed out-degree
    knn_degree: int = 64          # K, the intermediate kNN graph's degree (CAGRA: 2 x D)
    exact_max_n: int = 200_000    # exact kNN graph up to this N on the CPU (faiss flat), IVF-flat beyond
    exact_max_n_cuda: int = 200_000     # ... on CUDA (tiled matmul + topk); beyond, an IVF on the device
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


def build_device(device: str | None = None) -> str:
    """Where the graph is built: ``device``, or CUDA when torch sees one, else the CPU."""
    if device:
        return device
    from ..core.machine import devices

    return "cuda" if devices.cuda_available() else "cpu"


def knn_graph(x: np.ndarray, k: int, exact_max_n: int, nprobe: int, seed: int, device: str = "cpu") -> np.ndarray:
    """(N, k) ids of each vector's k nearest other vectors (self removed), nearest first, ties by id."""
    return knn.knn_graph(x, k, exact_max_n, nprobe, seed, device)


def detour_counts(knn_ids: np.ndarray, chunk: int, device: str = "cpu") -> np.ndarray:
    """(N, K) number of detourable routes of each kNN edge (CAGRA's rank-based criterion)."""
    return _detour_counts(knn_ids, chunk, device).cpu().numpy().astype(np.int32)


def _detour_counts(knn_ids: np.ndarray, chunk: int, device: str):
    """Device tensor of :func:`detour_counts`, in tiles of at most ``chunk`` rows, each with an int16
    table of the rank of every id in its row's list."""
    import torch

    kn = torch.as_tensor(np.ascontiguousarray(knn_ids), dtype=torch.int64, device=device)
    n, k = kn.shape
    rows = max(1, min(chunk, (1 << 22 if kn.device.type == "cpu" else 1 << 30) // n))   # CPU: cache-sized
    table = torch.full((min(rows, n), n), -1, dtype=torch.int16, device=kn.device)
    counts = torch.empty(n, k, dtype=torch.int64, device=kn.device)
    for s in range(0, n, rows):
        counts[s:s + rows] = _detours(kn, kn[s:s + rows], table)
    return counts


def _detours(kn, lst, table):
    """Detour counts of the rows whose lists are ``lst`` (c, K): an edge X->Y at rank b is detourable
    through Z at rank a when Y is Z's c-th neighbour with max(a, c) < b."""
    import torch

    c, k = lst.shape
    ar = torch.arange(k, device=kn.device)
    tb = table[:c]
    tb.scatter_(1, lst, ar.to(torch.int16).expand(c, k))         # rank of each id in X's list
    b = tb.gather(1, kn.index_select(0, lst.reshape(-1)).view(c, k * k)).long()   # of Z's c-th neighbour
    tb.scatter_(1, lst, -1)
    ok = b > torch.maximum(ar[:, None], ar[None, :]).view(-1)     # max(a, c) < b (absent: b = -1)
    idx = torch.where(ok, b, k) + torch.arange(c, device=kn.device)[:, None] * (k + 1)
    return torch.bincount(idx.view(-1), minlength=c * (k + 1)).view(c, k + 1)[:, :k]


def prune(knn_ids: np.ndarray, degree: int, chunk: int, device: str = "cpu") -> np.ndarray:
    """(N, D) the D edges with the fewest detours, ties broken by rank (stable sort)."""
    order = _detour_counts(knn_ids, chunk, device).sort(dim=1, stable=True).indices[:, :degree]
    return np.take_along_axis(np.asarray(knn_ids), order.cpu().numpy(), axis=1)


def add_reverse_edges(pruned: np.ndarray, device: str = "cpu") -> np.ndarray:
    """(N, D): best D/2 pruned edges, then reverse edges by source rank (then source id), then the rest of
    the pruned list, the first D distinct neighbours."""
    import torch

    p = torch.as_tensor(np.ascontiguousarray(pruned), dtype=torch.int64, device=device)
    half = p.shape[1] // 2
    cand = torch.cat([p[:, :half], _reverse_lists(p), p[:, half:]], dim=1)
    return _first_distinct(cand, p.shape[1]).cpu().numpy().astype(pruned.dtype)


def _reverse_lists(p):
    """(N, D) the first D sources of edges into each node, by (rank in the source's list, source id); -1 pads."""
    import torch

    n, dgr = p.shape
    if n * n * dgr >= 1 << 63:
        raise ConfigError(f"N={n} too large for the reverse-edge sort key")
    dev = p.device
    src = torch.arange(n, device=dev).repeat_interleave(dgr)
    rank = torch.arange(dgr, device=dev).repeat(n)
    dst = p.reshape(-1)
    order = ((dst * dgr + rank) * n + src).argsort()
    rs, rd = src[order], dst[order]
    pos = torch.arange(n * dgr, device=dev) - torch.searchsorted(rd, torch.arange(n, device=dev))[rd]
    rev = torch.full((n, dgr + 1), -1, dtype=torch.int64, device=dev)
    rev[rd, pos.clamp(max=dgr)] = torch.where(pos < dgr, rs, -1)
    return rev[:, :dgr]


def _first_distinct(cand, width: int):
    """(N, width) the first ``width`` distinct non-negative entries of each row, in row order."""
    import torch

    srt, order = cand.sort(dim=1, stable=True)
    dup = torch.zeros_like(srt, dtype=torch.bool)
    dup[:, 1:] = srt[:, 1:] == srt[:, :-1]
    valid = (cand >= 0) & ~torch.zeros_like(dup).scatter_(1, order, dup)
    pos = valid.long().cumsum(1) - 1
    out = torch.full((cand.shape[0], width + 1), -1, dtype=torch.int64, device=cand.device)
    out.scatter_(1, torch.where(valid & (pos < width), pos, width), cand)
    return out[:, :width]


def build_graph(x: np.ndarray, params: GraphParams, seed: int = 0, device: str | None = None) -> np.ndarray:
    """The (N, D) int32 fixed-degree graph of ``x``, built on ``device`` (default: CUDA when present);
    every device gives the same graph (tested)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    check_params(x.shape[0], params)
    dev = build_device(device)
    knn_ids = knn_graph(x, params.knn_degree, exact_limit(params, dev), params.ivf_nprobe, seed, dev)
    pruned = prune(knn_ids, params.degree, params.chunk, dev)
    return add_reverse_edges(pruned, dev).astype(np.int32)


def build_method(n: int, params: GraphParams, device: str | None = None) -> str:
    """Provenance text of :func:`build_graph` for ``n`` vectors (the kNN stage and the device)."""
    dev = build_device(device)
    return f"{knn.method(n, exact_limit(params, dev), params.ivf_nprobe, dev)}; pruning and reverse edges in torch on {dev}"


def exact_limit(params: GraphParams, device: str) -> int:
    """The largest N whose kNN graph is exact on ``device`` (a GPU's matmul reaches 10x the CPU's)."""
    return params.exact_max_n_cuda if str(device).startswith("cuda") else params.exact_max_n


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

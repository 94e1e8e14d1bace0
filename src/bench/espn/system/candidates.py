"""Candidate generation over CLS vectors with a faiss IVF index (paper sections 4.2 and 5.1).

IVF-Flat (MS MARCO v1 in the paper) or IVF-PQ (v2), inner product, built through :mod:`bench.ann.ivf`
(the metric a parameter). The search is split as the prefetcher needs it: coarse quantisation for
eta = nprobe lists once, ``search_preassigned`` on the first delta lists (the approximate top-K the
prefetcher reads), then on the remaining lambda = eta - delta lists; the two partial top-K lists are
merged (the lists are disjoint, so the merge is exact: identical to one search with nprobe = eta).
"""
from __future__ import annotations

import faiss
import numpy as np

from ...ann import ivf
from ...core.base.errors import ConfigError

METRIC = "ip"              # the CLS score is an inner product
MIN_POINTS_PER_LIST = 39   # faiss wants >= 39 training points per list

load = ivf.load
save = ivf.save


class PrefetchConfigError(ConfigError):
    """Prefetch step out of range: delta > eta, delta < 1, ..."""


def build(cls: np.ndarray, kind: str, nlist: int, m: int = 16, nbits: int = 8, seed: int = 0,
          train_size: int | None = None, metric: str = METRIC) -> faiss.Index:
    """The IVF index over ``cls``: ``nlist`` cut to the lists the vectors can train, trained on all of
    them unless ``train_size`` says otherwise (a seeded sample)."""
    x = np.ascontiguousarray(cls, dtype=np.float32)
    nlist = min(nlist, max(1, x.shape[0] // MIN_POINTS_PER_LIST))
    train = train_size if train_size and train_size < len(x) else len(x)
    encoding = {"ivfpq": "PQ", "ivfflat": "Flat"}.get(kind)
    if encoding is None:
        raise ValueError(f"index kind must be ivfflat or ivfpq, got {kind!r}")
    return ivf.build(x, nlist, m, nbits, metric, train_size=train, seed=seed, encoding=encoding)


def index_bytes(index: faiss.Index) -> int:
    """Memory the ANN index needs (its serialised size: vectors/codes, ids, centroids)."""
    return int(faiss.serialize_index(index).nbytes)


def delta_for(nprobe: int, step: float) -> int:
    """Equation 3: delta = PrefetchStep x eta (at least one list)."""
    return max(1, int(round(nprobe * step)))


def check_delta(delta: int, eta: int) -> None:
    if delta < 1:
        raise PrefetchConfigError(f"prefetch delta must be >= 1 cluster, got {delta}")
    if delta > eta:
        raise PrefetchConfigError(f"prefetch delta ({delta} clusters) exceeds eta = nprobe ({eta}): the "
                                  "prefetcher cannot start after more clusters than the search visits")


def coarse(index, q: np.ndarray, nprobe: int):
    return index.quantizer.search(np.ascontiguousarray(q, dtype=np.float32), nprobe)


def scan(index, q: np.ndarray, k: int, Iq: np.ndarray, Dq: np.ndarray):
    """``search_preassigned`` over the given lists (a slice of the coarse assignment), its queries over
    faiss's threads as ``index.search`` would (``parallel_mode`` 3 for the call: at the default 0 faiss
    runs ``search_preassigned`` on one thread whatever ``omp_set_num_threads`` says)."""
    Iq = np.ascontiguousarray(Iq)
    Dq = np.ascontiguousarray(Dq)
    index.nprobe = Iq.shape[1]
    mode, index.parallel_mode = index.parallel_mode, 3
    try:
        return index.search_preassigned(np.ascontiguousarray(q, dtype=np.float32), k, Iq, Dq)
    finally:
        index.parallel_mode = mode


def merge(D1, I1, D2, I2, k: int):
    """Merge two top-k lists over disjoint ids (inner product: larger is better); -1 ids last."""
    D = np.concatenate([D1, D2], axis=1)
    I = np.concatenate([I1, I2], axis=1)
    D = np.where(I < 0, -np.inf, D)
    o = np.argsort(-D, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(D, o, 1), np.take_along_axis(I, o, 1)


def search(index, q: np.ndarray, nprobe: int, k: int):
    Dq, Iq = coarse(index, q, nprobe)
    return scan(index, q, k, Iq, Dq)


def staged(index, q: np.ndarray, nprobe: int, delta: int, k: int):
    """(approx D, I after delta lists), (final D, I after all eta lists)."""
    check_delta(delta, nprobe)
    Dq, Iq = coarse(index, q, nprobe)
    Da, Ia = scan(index, q, k, Iq[:, :delta], Dq[:, :delta])
    if delta == nprobe:
        return (Da, Ia), (Da, Ia)
    Db, Ib = scan(index, q, k, Iq[:, delta:], Dq[:, delta:])
    return (Da, Ia), merge(Da, Ia, Db, Ib, k)


def scanned(index, q: np.ndarray, nprobe: int) -> np.ndarray:
    """Per query: the records in the ``nprobe`` lists the search visits (the candidates the top K is
    chosen from): exact given the index."""
    _, Iq = coarse(index, q, nprobe)
    sizes = np.array([index.invlists.list_size(int(lst)) for lst in range(index.nlist)], dtype=np.int64)
    return np.where(Iq >= 0, sizes[np.maximum(Iq, 0)], 0).sum(axis=1)


def hit_rate(approx_ids: np.ndarray, final_ids: np.ndarray) -> np.ndarray:
    """Per query: the fraction of the final candidates (ids >= 0) that the prefetcher had read."""
    out = np.empty(len(final_ids))
    for i, (a, f) in enumerate(zip(approx_ids, final_ids)):
        f = f[f >= 0]
        out[i] = np.isin(f, a[a >= 0]).mean() if len(f) else 1.0
    return out

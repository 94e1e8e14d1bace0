"""faiss HNSW (``IndexHNSWFlat``), shared by the studies (not a study itself): the baseline graph index of
Trinity's recall/QPS comparison (Liu and Qian, 2025: section 1 names HNSW among production ANN indexes;
the study's ``recall`` step sets it beside the section 3.2 extend engine, same data and threads, in the
ann-benchmarks style). faiss is used as it ships; any study needing an HNSW curve imports it from here.
A built graph is saved and loaded whole (:func:`save`, :func:`load`), as :mod:`bench.ann.ivf` does, so a
build step writes it once and each measurement step reads it.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import faiss
import numpy as np

from ..core.base.atomic import atomic_path
from ..core.base.errors import ConfigError, DataFormatError


def check_params(m: int, ef_construction: int) -> None:
    """Bad HNSW build parameters, before any work."""
    if m < 2:
        raise ConfigError(f"HNSW M={m} must be >= 2")
    if ef_construction < 1:
        raise ConfigError(f"HNSW efConstruction={ef_construction} must be >= 1")


def build(base: np.ndarray, m: int, ef_construction: int) -> tuple[faiss.IndexHNSWFlat, float]:
    """The ``IndexHNSWFlat(M=m)`` of ``base`` (as float32, L2) with ``efConstruction``, and the seconds its
    ``add`` took (the build; faiss's OpenMP threads as set by the caller)."""
    check_params(m, ef_construction)
    x = np.ascontiguousarray(base, dtype=np.float32)
    index = faiss.IndexHNSWFlat(x.shape[1], m)
    index.hnsw.efConstruction = ef_construction
    t0 = time.perf_counter()
    index.add(x)
    return index, time.perf_counter() - t0


def set_ef_search(index: faiss.IndexHNSWFlat, ef: int) -> None:
    """Set the search-time candidate list size ``efSearch`` (the knob an HNSW recall/QPS curve sweeps)."""
    if ef < 1:
        raise ConfigError(f"HNSW efSearch={ef} must be >= 1")
    index.hnsw.efSearch = ef


def search(index: faiss.IndexHNSWFlat, queries: np.ndarray, k: int, ef: int | None = None) -> np.ndarray:
    """(nq, k) ids of each query's k nearest found, one batched call (at ``efSearch`` ``ef`` when given)."""
    if ef is not None:
        set_ef_search(index, ef)
    return index.search(np.ascontiguousarray(queries, dtype=np.float32), k)[1]


def save(index: faiss.IndexHNSWFlat, path: str | os.PathLike) -> Path:
    """Write ``index`` (graph, vectors, efConstruction and efSearch) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        faiss.write_index(index, str(tmp))
    return Path(path)


def load(path: str | os.PathLike) -> faiss.IndexHNSWFlat:
    """The HNSW index saved at ``path``; a file that is not a whole faiss ``IndexHNSWFlat`` (truncated, another
    index type) is refused with :class:`DataFormatError` naming it."""
    try:
        index = faiss.read_index(str(path))
    except RuntimeError as exc:
        raise DataFormatError(f"{path}: not a readable faiss index ({str(exc).strip().splitlines()[0]})") from None
    if not isinstance(index, faiss.IndexHNSWFlat):
        raise DataFormatError(f"{path}: a faiss {type(index).__name__}, not an HNSW (IndexHNSWFlat) index")
    return index

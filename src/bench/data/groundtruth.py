"""Exact k-NN ground truth for a base set and its queries, computed by blocks with faiss.

Used for prefix crops: a crop gets its own exact ground truth (a crop is never paired with the full
set's ground truth) unless the matching published file exists.
"""
from __future__ import annotations

from typing import Iterator

import faiss
import numpy as np
from faiss.contrib.exhaustive_search import knn_ground_truth

METRICS = {"l2": faiss.METRIC_L2, "ip": faiss.METRIC_INNER_PRODUCT}


def _blocks(base: np.ndarray, block: int) -> Iterator[np.ndarray]:
    for i in range(0, base.shape[0], block):
        yield np.ascontiguousarray(base[i:i + block], dtype=np.float32)


def exact_knn(base: np.ndarray, queries: np.ndarray, k: int, metric: str = "l2",
              block: int = 262_144) -> tuple[np.ndarray, np.ndarray]:
    """(ids (nq, k) int64, distances (nq, k) float32): exact neighbours of ``queries`` in ``base``.

    ``base`` may be a memory map larger than RAM: it is read ``block`` rows at a time.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; one of {sorted(METRICS)}")
    if k > base.shape[0]:
        raise ValueError(f"k={k} exceeds the base size {base.shape[0]}")
    xq = np.ascontiguousarray(queries, dtype=np.float32)
    D, I = knn_ground_truth(xq, _blocks(base, block), k, metric_type=METRICS[metric], ngpu=0)
    return I.astype(np.int64), D.astype(np.float32)

"""ANN quality: k-recall@k, the intersection of the top-k found with the exact top-k, divided by k
(the big-ann-benchmarks definition), computed with faiss.contrib.evaluation."""
from __future__ import annotations

import numpy as np
from faiss.contrib.evaluation import knn_intersection_measure


def recall_at_k(found: np.ndarray, gt_ids: np.ndarray, k: int) -> float:
    if k > found.shape[1] or k > gt_ids.shape[1]:
        raise ValueError(f"recall@{k} needs {k} results and {k} ground-truth neighbours, "
                         f"got {found.shape[1]} and {gt_ids.shape[1]}")
    return float(knn_intersection_measure(found[:, :k], gt_ids[:, :k]))

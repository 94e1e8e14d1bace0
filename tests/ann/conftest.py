"""Small sift-like data and its CAGRA-style graph for the bench.ann tests (built once per session, in memory)."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def small():
    from bench.ann import graph
    from bench.data import groundtruth, synthetic

    xb, xq = synthetic.sift_like(2000, seed=7, n_queries=40, n_clusters=20)
    gt, _ = groundtruth.exact_knn(xb, xq, 10)
    g = graph.build_graph(xb, graph.GraphParams(degree=16, knn_degree=32), seed=0)
    return {"base": xb, "queries": xq.astype(np.float32), "gt": gt, "graph": g}

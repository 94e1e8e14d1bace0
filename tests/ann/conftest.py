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


@pytest.fixture
def interpreter(monkeypatch):
    """Triton's interpreter on for the test (the kernels run on the CPU, a program at a time). Triton must
    have been imported with it on (tests/conftest.py switches it on where there is no CUDA)."""
    pytest.importorskip("triton", reason="Triton not installed (the dev extra installs it)")
    from bench.ann import kernels

    if not kernels.triton_interprets():
        pytest.skip("Triton was imported without its interpreter (a CUDA host runs the kernels compiled)")
    monkeypatch.setenv("TRITON_INTERPRET", "1")

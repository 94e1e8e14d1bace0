"""Trinity extend-engine microbenchmark: one extend at a captured batch size; recall recorded beside it."""
from __future__ import annotations

import numpy as np
import pytest

from bench.core.measuring import measure
from bench.data import groundtruth, synthetic


@pytest.fixture(scope="module")
def setup():
    from bench.ann import graph

    measure.set_threads(1)
    xb, xq = synthetic.sift_like(5_000, 0, 64)
    gt, _ = groundtruth.exact_knn(xb, xq, 10)
    return xb, xq.astype(np.float32), gt, graph.build_graph(xb, graph.GraphParams(degree=24, knn_degree=48))


@pytest.mark.parametrize("capacity", [1, 64])
def test_extend(benchmark, setup, capacity):
    from bench.trinity.system.engine import ExtendEngine

    xb, xq, gt, g = setup
    eng = ExtendEngine(xb, g, capacity=capacity, top_m_max=64, max_iters=10_000, chunk=min(256, capacity * 24))
    eng.admit(xq[:capacity], [10] * capacity, [64] * capacity, [None] * capacity)
    benchmark(eng.extend)
    benchmark.extra_info["threads"] = 1
    assert eng.lanes >= 1

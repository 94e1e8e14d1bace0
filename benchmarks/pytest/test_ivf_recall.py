"""IVF-PQ search microbenchmark; recall@10 recorded beside the timing."""
from __future__ import annotations

import numpy as np
import pytest

from bench.core.measuring import measure
from bench.data import groundtruth, synthetic
from bench.ann import ivf
from bench.ann.metrics import recall_at_k


@pytest.fixture(scope="module")
def setup():
    measure.set_threads(1)
    xb, xq = synthetic.sift_like(10_000, 0, 100)
    xb, xq = xb.astype(np.float32), xq.astype(np.float32)
    gt, _ = groundtruth.exact_knn(xb, xq, 10)
    return ivf.build(xb, 64, 16, seed=0), xq, gt


@pytest.mark.parametrize("nprobe", [1, 16])
def test_ivfpq_search(benchmark, setup, nprobe):
    index, xq, gt = setup
    ivf.set_nprobe(index, nprobe)
    _, found = benchmark(index.search, xq, 10)
    benchmark.extra_info["recall_at_10"] = recall_at_k(found, gt, 10)
    benchmark.extra_info["threads"] = 1
    assert benchmark.extra_info["recall_at_10"] > 0.2

"""Chameleon microbenchmarks: faiss scan vs the torch PQ scan of the same lists (1 thread), with the
GB/s per core and the identical-top-100 fraction recorded in extra_info."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bench.chameleon.system import pqscan
from bench.core.measuring import measure
from bench.data import synthetic
from bench.ann import ivf

K, NPROBE = 100, 32


@pytest.fixture(scope="module")
def setup():
    measure.set_threads(1)
    xb, xq = synthetic.sift_like(10_000, 0, 100)
    index = ivf.build(xb.astype(np.float32), 100, 16, seed=0)
    xq = xq.astype(np.float32)
    Dq, Iq = pqscan.ivfpq_of(index).quantizer.search(xq, NPROBE)
    layout = pqscan.IVFPQLayout.from_faiss(index)
    return index, layout, xq, Dq, Iq


def test_faiss_scan(benchmark, setup):
    index, layout, xq, Dq, Iq = setup
    benchmark(pqscan.faiss_scan, index, xq, Iq, Dq, K)
    if benchmark.stats:
        benchmark.extra_info["gbps_per_core"] = layout.code_bytes(Iq) / benchmark.stats["median"] / 1e9


def test_torch_scan(benchmark, setup):
    index, layout, xq, Dq, Iq = setup
    _, It = benchmark(pqscan.scan, layout, xq, Iq, K, torch.from_numpy(Dq))
    _, If = pqscan.faiss_scan(index, xq, Iq, Dq, K)
    benchmark.extra_info["identical_top100"] = float(pqscan.overlap(If, It.numpy()).mean())
    if benchmark.stats:
        benchmark.extra_info["gbps_per_core"] = layout.code_bytes(Iq) / benchmark.stats["median"] / 1e9
    assert benchmark.extra_info["identical_top100"] >= 0.99

"""Small deterministic inputs shared by the ASV benchmarks (built once per process and cached)."""
from __future__ import annotations

import functools

import numpy as np

from bench.core.measuring import measure
from bench.data import groundtruth, synthetic

THREADS = 1  # benchmarks run single-threaded so numbers compare across machines of any size


@functools.lru_cache(maxsize=None)
def sift_like(n: int = 20_000, nq: int = 200, seed: int = 0):
    measure.set_threads(THREADS)
    xb, xq = synthetic.sift_like(n, seed, nq)
    xb, xq = xb.astype(np.float32), xq.astype(np.float32)
    gt, _ = groundtruth.exact_knn(xb, xq, 100)
    return xb, xq, gt


@functools.lru_cache(maxsize=None)
def ivfpq(nlist: int = 128, m: int = 16):
    from bench.ann import ivf as index

    xb, _, _ = sift_like()
    return index.build(xb, nlist, m, seed=0)

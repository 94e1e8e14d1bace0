"""Small IVF-PQ indexes for the Chameleon tests (built in a second or two, offline)."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def small_index():
    import faiss

    from bench.data import synthetic

    faiss.omp_set_num_threads(1)
    xb, xq = synthetic.sift_like(4000, 7, 50, n_clusters=16, dim=32)
    xb, xq = xb.astype(np.float32), xq.astype(np.float32)
    index = faiss.index_factory(32, "IVF16,PQ8")
    index.cp.seed = 1
    faiss.extract_index_ivf(index).cp.seed = 1
    index.train(xb)
    index.add(xb)
    return index, xb, xq

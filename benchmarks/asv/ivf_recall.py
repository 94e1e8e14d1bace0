"""IVF-PQ search: speed, memory, recall, and speed-up over exact search measured in the same run."""
from __future__ import annotations

import time

import faiss
import numpy as np

from bench.ann import ivf
from bench.ann.metrics import recall_at_k

from ._fixtures import ivfpq, sift_like


class IVFPQSearch:
    params = [1, 8, 32]
    param_names = ["nprobe"]

    def setup(self, nprobe):
        self.xb, self.xq, self.gt = sift_like()
        self.index = ivfpq()
        ivf.set_nprobe(self.index, nprobe)

    def time_search(self, nprobe):
        self.index.search(self.xq, 100)

    def track_recall_at_10(self, nprobe):
        return recall_at_k(self.index.search(self.xq, 10)[1], self.gt, 10)

    track_recall_at_10.unit = "recall"

    def track_speedup_over_flat(self, nprobe):
        """Queries/s of IVF-PQ over exact flat search, both timed here (median of 5)."""
        flat = faiss.IndexFlatL2(self.xb.shape[1])
        flat.add(self.xb)

        def med(fn):
            ts = []
            for _ in range(5):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            return float(np.median(ts))
        return med(lambda: flat.search(self.xq, 100)) / med(lambda: self.index.search(self.xq, 100))

    track_speedup_over_flat.unit = "x"


def peakmem_build_ivfpq():
    xb, _, _ = sift_like()
    ivf.build(xb, 128, 16, seed=0)

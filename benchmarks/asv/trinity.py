"""Trinity's extend engine: time of one extend at a captured batch size, and the recall of a search."""
from __future__ import annotations

import functools

import numpy as np

from ._fixtures import sift_like


@functools.lru_cache(maxsize=None)
def _graph():
    from bench.ann import graph

    xb, _, _ = sift_like()
    return graph.build_graph(xb, graph.GraphParams(degree=32, knn_degree=64), seed=0)


def _engine(capacity: int, top_m: int = 64):
    from bench.trinity.system.engine import ExtendEngine

    xb, _, _ = sift_like()
    return ExtendEngine(xb, _graph(), capacity=capacity, top_m_max=top_m, chunk=min(256, capacity * 32))


class Extend:
    params = [1, 16, 64]
    param_names = ["capacity"]

    def setup(self, capacity):
        _, xq, _ = sift_like()
        self.eng = _engine(capacity)
        self.eng.admit(xq[:capacity], [10] * capacity, [64] * capacity, [None] * capacity)
        self.eng.extend()          # seeds evaluated: later extends expand parents

    def time_extend(self, capacity):
        self.eng.extend()


def track_recall_at_10_top_m_32():
    from bench.ann.metrics import recall_at_k

    _, xq, gt = sift_like()
    eng = _engine(64, 32)
    found, nxt = {}, 0
    while len(found) < len(xq):
        n = min(eng.n_free(), len(xq) - nxt)
        if n:
            eng.admit(xq[nxt:nxt + n], [10] * n, [32] * n, list(range(nxt, nxt + n)))
            nxt += n
        for f in eng.extend():
            found[f.tag] = f.ids
    return recall_at_k(np.stack([found[i] for i in range(len(xq))]), gt, 10)


track_recall_at_10_top_m_32.unit = "recall"

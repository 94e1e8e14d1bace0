"""Build step ``graph``: the CAGRA-style fixed-degree graph of one dataset (Trinity section 3.2), written as
an ``ibin`` file with a JSON sidecar fingerprinting the vectors it was built on (:mod:`bench.ann.graph`)."""
from __future__ import annotations

import time

import numpy as np

from ...ann import graph
from ...core.declaring.params import as_dict
from ...core.measuring.step import Context
from ...core.declaring.study import step
from ...data import prepared
from ..params import Params


@step("graph", needs=("manifest",), kind="build",
      out={"graph": "{dataset}.graph.ibin", "side": "{dataset}.graph.ibin.json"},
      keys=("graph",))
def build(ctx: Context) -> None:
    p: Params = ctx.params
    ds = prepared.load_vectors(ctx.input("manifest"))
    gp = graph.GraphParams(degree=p.graph.degree, knn_degree=p.graph.knn_degree, exact_max_n=p.graph.exact_max_n,
                           exact_max_n_cuda=p.graph.exact_max_n_cuda, ivf_nprobe=p.graph.ivf_nprobe)
    base = np.ascontiguousarray(ds.base)
    t0 = time.perf_counter()
    g = graph.build_graph(base, gp, seed=ctx.seed)
    graph.save_graph(ctx.out, g, base, {"dataset": ds.name, "dataset_id": ds.id, "build_s": time.perf_counter() - t0,
                                        "params": as_dict(p.graph), "seed": ctx.seed, "threads": ctx.threads,
                                        "knn": graph.build_method(base.shape[0], gp), "device": graph.build_device()})

"""``bench trinity ...``: build (the fixed-degree graph), measure a step, draw a figure, write the claims."""
from __future__ import annotations

import argparse
import time

from ..core import studycli
from ..core.step import reads
from ..core.errors import ConfigError
from . import claims, runner

NAME = "trinity"


@reads("manifest")
def _build(a: argparse.Namespace) -> None:
    import numpy as np

    from ..core import measure
    from ..data import prepared
    from . import graph

    measure.set_threads(a.threads)
    inputs = studycli.pairs(a.input, "--input")
    if not inputs.get("manifest"):
        raise ConfigError("trinity build: needs --input manifest=PATH")
    ds = prepared.load_vectors(inputs["manifest"][0])
    gp = a.params["graph"]
    params = graph.GraphParams(degree=gp["degree"], knn_degree=gp["knn_degree"], exact_max_n=gp["exact_max_n"],
                               ivf_nprobe=gp["ivf_nprobe"])
    base = np.ascontiguousarray(ds.base)
    t0 = time.perf_counter()
    g = graph.build_graph(base, params, seed=a.seed)
    graph.save_graph(a.out, g, base, {"dataset": ds.name, "dataset_id": ds.id, "build_s": time.perf_counter() - t0,
                                      "params": gp, "seed": a.seed, "threads": a.threads,
                                      "knn": graph.build_method(base.shape[0], params),
                                      "device": graph.build_device()})


def register(sub: argparse._SubParsersAction) -> None:
    studycli.register_study(sub, NAME, "Trinity: continuous batching and stage-aware scheduling of graph search",
                            steps=runner.STEPS, figures=f"{__package__}.figures", claims=claims, build=_build)

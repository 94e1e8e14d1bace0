"""cuVS CAGRA as the reference curve of Trinity's recall/QPS figure (section 3.2: Trinity's search engine
follows CAGRA's fixed-degree graph and its top-M extend). Where CUDA and ``cuvs`` are present, CAGRA is
built on the same vectors with the same graph degrees (D, and K = the kNN degree as CAGRA's intermediate
degree) and searched with ``itopk_size`` swept over the engine's top-M values; elsewhere one not-run row
says why. The library is used as it ships (``cuvs.neighbors.cagra``); nothing of it is copied here."""
from __future__ import annotations

import time

import numpy as np

from ...ann.metrics import recall_at_k
from ...core.machine import devices
from ...core.measuring import measure

SYSTEM = "cuvs-cagra"


def why_not() -> str | None:
    """Why the CAGRA reference cannot run here (None when it can)."""
    if not devices.cuda_available():
        return "cuVS CAGRA reference needs CUDA (none on this machine)"
    try:
        from cuvs.neighbors import cagra  # noqa: F401
    except ImportError:
        return "cuVS CAGRA reference: cuvs not installed (pip install cuvs-cu12, see README)"
    return None


def _ids(out) -> np.ndarray:
    """The neighbour ids among cagra.search's two device arrays (the integer one), on the host."""
    import torch

    a, b = (torch.as_tensor(x, device="cuda") for x in out)
    ids = a if not a.is_floating_point() else b
    return ids.to(torch.int64).cpu().numpy()


def build(base: np.ndarray, degree: int, knn_degree: int):
    """The CAGRA index of ``base`` (float32, on the GPU) and its build seconds."""
    import torch
    from cuvs.common import Resources
    from cuvs.neighbors import cagra

    res = Resources()
    x = torch.as_tensor(np.ascontiguousarray(base, dtype=np.float32), device="cuda")
    t0 = time.perf_counter()
    index = cagra.build(cagra.IndexParams(graph_degree=degree, intermediate_graph_degree=knn_degree), x,
                        resources=res)
    res.sync()
    return index, res, time.perf_counter() - t0


def rows(base, queries, gt, *, degree: int, knn_degree: int, itopk: tuple[int, ...], k: int, p: int,
         repeats: int, warmup: int) -> tuple[list[dict], dict]:
    """One curve: per ``itopk_size``, timed batched searches of all ``queries`` (CUDA and cuVS's stream
    synchronised before each timer stops) and recall@k; plus the build's provenance."""
    import torch
    from cuvs.neighbors import cagra

    index, res, build_s = build(base, degree, knn_degree)
    q = torch.as_tensor(np.ascontiguousarray(queries, dtype=np.float32), device="cuda")
    out = []
    for m in itopk:
        sp = cagra.SearchParams(itopk_size=max(m, k), search_width=p)

        def search():
            found = cagra.search(sp, index, q, k, resources=res)
            res.sync()
            return found
        t = measure.repeat(search, repeats=repeats, warmup=warmup, cuda=True, keep_results=True)
        rec = recall_at_k(_ids(t.results[0]), gt[:len(queries)], k)
        out += [{"system": SYSTEM, "mode": "batched", "param": "itopk", "value": m, "p": p, "phase": phase,
                 "repeat": i, "n_queries": len(queries), "capacity": len(queries), "wall_s": s,
                 "qps": len(queries) / s, f"recall_at_{k}": rec, "source": "measured"}
                for phase, times in (("warmup", t.warmup), ("measured", t.runs)) for i, s in enumerate(times)]
    return out, {"cagra_build_s": build_s, "cagra_graph_degree": degree, "cagra_intermediate_degree": knn_degree}

"""What every Trinity step needs before it measures: the dataset, the graph checked against its vectors, the
engine built from the profile's parameters, and the parameter checks (bad input fails before any work)."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..core import devices
from ..core.errors import ConfigError
from ..data import prepared
from . import graph as graph_mod
from .engine import ExtendEngine, validate_queries
from .workload import parse_classes


def device(params: Mapping[str, Any]) -> str:
    want = params["engine"].get("device", "auto")
    if want == "auto":
        return "cuda" if devices.cuda_available() else "cpu"
    if want == "cuda" and not devices.cuda_available():
        raise ConfigError("trinity.engine.device: cuda requested but torch sees no CUDA device")
    return want


def load(manifest: str, graph_path: str):
    """(dataset, base float32, queries float32, graph, sidecar); the graph checked against the vectors."""
    ds = prepared.load_vectors(manifest)
    base = np.ascontiguousarray(ds.base)
    g, side = graph_mod.load_graph(graph_path, base)
    xq = np.ascontiguousarray(ds.queries, dtype=np.float32)
    return ds, base, xq, g, side


def all_classes(params: Mapping[str, Any]):
    w = params["workload"]
    return {"mix": parse_classes(w["classes"], "trinity.workload.classes"),
            "prefill": parse_classes(w["prefill_classes"], "trinity.workload.prefill_classes"),
            "decode": parse_classes(w["decode_classes"], "trinity.workload.decode_classes")}


def check(params: Mapping[str, Any], ds, base: np.ndarray, xq: np.ndarray, g: np.ndarray) -> None:
    """Every size the study will search with, checked against the data before any work."""
    e = params["engine"]
    if e["p"] <= 0:
        raise ConfigError(f"trinity.engine.p={e['p']}: parents per extend must be > 0")
    n = base.shape[0]
    if g.shape[1] >= n:
        raise ConfigError(f"graph degree D={g.shape[1]} must be < N={n}")
    cls = [c for group in all_classes(params).values() for c in group]
    k10 = params["recall"]["k"]
    tms = list(params["recall"]["top_m"])
    validate_queries(xq, base.shape[1], [c.k for c in cls] + [min(k10, m) for m in tms],
                     [c.top_m for c in cls] + tms, n)        # every query: dimension and NaN
    if any(m < k10 for m in tms):
        raise ConfigError(f"trinity.recall.top_m: {[m for m in tms if m < k10]} smaller than k={k10}")
    if k10 > ds.gt_ids.shape[1]:
        raise ConfigError(f"recall@{k10} needs {k10} ground-truth neighbours, the dataset has {ds.gt_ids.shape[1]}")
    for key in ("loads",):
        bad = [x for x in params["load"][key] if not x > 0]
        if bad:
            raise ConfigError(f"trinity.load.{key}: offered load must be > 0, got {bad}")
    bad = [x for x in params["scheduler"]["prefill_loads"] if not x > 0]
    if bad:
        raise ConfigError(f"trinity.scheduler.prefill_loads: offered load must be > 0, got {bad}")


def set_threads(params: Mapping[str, Any]) -> int:
    """The study's compute threads (torch and faiss): engine.threads, the same for the engine and faiss."""
    from ..core import measure

    n = int(params["engine"]["threads"])
    measure.set_threads(n)
    return n


def engine(params: Mapping[str, Any], base: np.ndarray, g: np.ndarray, capacity: int, top_m_max: int,
           seed: int, trace: bool = False) -> ExtendEngine:
    e = params["engine"]
    chunk = e.get("chunk")
    chunk = min(int(chunk), capacity * e["p"] * g.shape[1]) if chunk else None
    return ExtendEngine(base, g, capacity=capacity, p=e["p"], top_m_max=top_m_max, max_iters=e["max_iters"],
                        device=device(params), seed=seed, trace=trace, chunk=chunk)

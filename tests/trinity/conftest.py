"""Small sift-like data and a graph for the Trinity tests (built once per session, in memory)."""
from __future__ import annotations

import numpy as np
import pytest

from ..figcache import figcache, figure_guard  # noqa: F401  (each figure drawn once per session)


@pytest.fixture(scope="session")
def small():
    from bench.data import groundtruth, synthetic
    from bench.ann import graph

    xb, xq = synthetic.sift_like(2000, seed=7, n_queries=40, n_clusters=20)
    gt, _ = groundtruth.exact_knn(xb, xq, 10)
    g = graph.build_graph(xb, graph.GraphParams(degree=16, knn_degree=32), seed=0)
    return {"base": xb, "queries": xq.astype(np.float32), "gt": gt, "graph": g}


@pytest.fixture
def engine_factory(small):
    from bench.trinity.system.engine import ExtendEngine

    def make(capacity=8, p=1, top_m_max=64, **kw):
        return ExtendEngine(small["base"], small["graph"], capacity=capacity, p=p, top_m_max=top_m_max, **kw)
    return make


SMALL = {
    "datasets": ["tiny-sift"],
    "graph": {"degree": 16, "knn_degree": 32},
    "engine": {"capacity": 8, "chunk": 64},
    "trace_queries": 30, "trace_calibration": 3,
    "recall": {"top_m": [10, 32], "p_values": [2], "batch1_queries": 4, "batch_queries": 24, "repeats": 2,
               "hnsw": {"M": 8, "ef_construction": 20, "ef_search": [10, 32]}},
    "workload": {"classes": [{"k": 10, "top_m": 16}, {"k": 10, "top_m": 32}],
                 "prefill_classes": [{"k": 10, "top_m": 32}], "decode_classes": [{"k": 10, "top_m": 16}]},
    "load": {"loads": [0.2, 0.6, 1.0], "duration_s": 0.3, "min_requests": 40, "repeats": 2,
             "live_check": {"n_requests": 16, "sched_duration_s": 0.2}},
    "scheduler": {"prefill_loads": [0.3, 0.8], "duration_s": 0.4, "repeats": 2, "control_ms": 50,
                  "sweep": {"load_frac": 0.8, "repeats": 1, "params": {"r_min": [0.1, 0.5], "delta_tokens": [8, 16]}}},
    "roofline": {"search_batches": [1, 2, 4, 8], "search_repeats": 2, "prefill_batches": [1, 2, 4],
                 "decode_batches": [1, 2, 4, 8], "prompt_tokens": 8, "decode_context": 8, "lm_repeats": 2,
                 "peak_sizes": [64, 128], "knee_boot": 10, "lm": {"d_model": 32, "layers": 1, "heads": 2, "vocab": 100},
                 "max_doublings": 1, "sweep_budget_s": 2.0},
}


@pytest.fixture(scope="session", autouse=True)
def short_quiet_window():
    """The quiet-machine check samples for 0.3 s before and after each step; 10 ms is enough in tests."""
    from bench.core.measuring import quiet

    orig = quiet.sample
    quiet.sample = lambda window_s=0.01: orig(0.01)
    yield
    quiet.sample = orig


@pytest.fixture(scope="session")
def study(tmp_path_factory):
    """Every step run once on a 2000-vector sift-like set: {kind: [record path]}, params (the validated
    section and the typed Params), paths."""
    from bench.core.declaring import config
    from bench.core.measuring.step import Context, execute
    from bench.data import prepared
    from bench.trinity import STUDY
    from bench.ann import graph

    root = tmp_path_factory.mktemp("trinity")
    man = prepared.prepare("tiny-sift", {"source": "synthetic/sift-like", "n_base": 2000, "n_query": 40,
                                         "gt_k": 20, "n_clusters": 20}, profile="test", data_dir=root, seed=3)
    params = config.validate_section("trinity", SMALL)
    typed = STUDY.parameters(SMALL)
    ds = prepared.load_vectors(man)
    base = np.ascontiguousarray(ds.base)
    gpath = graph.save_graph(root / "g.ibin", graph.build_graph(base, graph.GraphParams(16, 32)), base, {})
    inputs = {"manifest": [str(man)], "graph": [str(gpath)]}
    out = {}

    def run(step, extra=None):
        p = root / f"{step}.parquet"
        execute(Context("trinity", step, typed, "test", 1, 1, p, {**inputs, **(extra or {})}, "tiny-sift",
                        section=params), STUDY.steps[step])
        out[step] = [p]
        return str(p)

    trace = run("trace")
    run("recall")
    run("load", {"trace": [trace]})
    run("sched", {"trace": [trace]})
    roof = run("roofline")
    run("placement", {"roofline": [roof], "trace": [trace]})
    return {"records": out, "params": params, "typed": typed, "inputs": inputs, "root": root}

"""Small IVF-PQ indexes for the Chameleon tests (built in a second or two, offline)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ..figcache import figcache  # noqa: F401  (each figure drawn once per session; figure_guard below)


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
    faiss.downcast_index(faiss.extract_index_ivf(index)).do_polysemous_training = False  # most of the time
    index.train(xb)
    index.add(xb)
    return index, xb, xq


@pytest.fixture(scope="session")
def study_section():
    """The chameleon section, validated (defaults filled), shrunk so every step runs in seconds: what a
    step's provenance records as its config."""
    from bench.core.declaring import config as cfgmod

    return cfgmod.validate_section("chameleon", {
        "datasets": ["sift-like", "syn-512"], "pq_m": {"sift-like": 16, "syn-512": 32}, "nprobe": 8, "k": 20,
        "batch_sizes": [1, 4], "n_batches": 3, "throughput_runs": 2,
        "scan": {"n_queries": 30, "repeats": 3},
        "queue": {"sim_queries": 20, "sim_max_vectors": 300, "units": [4, 8, 16], "dataset": "sift-like"},
        "nodes": {"dataset": "sift-like", "n_nodes": 2, "batch_sizes": [1, 8], "n_batches": 3,
                  "late_delay_s": 0.6, "late_timeout_s": 0.2, "timeout_s": 5.0},
        "ralm": {"datasets": {"S": "syn-512"}, "seq_len": 6, "vocab": 500, "repeats": 1,
                 "throughput_batch": {"S": 2, "L": 2}, "configs": ["cpu", "fpga-cpu", "fpga-gpu"],
                 "models": {"Dec-S": {"arch": "dec", "d_model": 512, "layers": 1, "heads": 8, "k": 20,
                                      "intervals": [1]},
                            "EncDec-S": {"arch": "encdec", "d_model": 512, "layers": 1, "enc_layers": 1,
                                         "heads": 8, "k": 10, "intervals": [2, 4]}}},
        "energy": {"batch_sizes": [1, 4]},
    })


@pytest.fixture(scope="session")
def study_params(study_section):
    """The same section as the study's typed parameters."""
    from bench.chameleon import STUDY

    return STUDY.parameters(study_section)


@pytest.fixture(scope="session")
def study_records(tmp_path_factory, study_params, study_section):
    """Every step of the study run through bench.core.measuring.step.execute on two small synthetic datasets:
    ``{kind: [record paths]}``, as the rule file hands them to the figure and claims commands."""
    from bench.chameleon import STUDY
    from bench.core.measuring import measure
    from bench.core.measuring.step import Context, execute
    from bench.data import prepared

    measure.set_threads(1)   # as the CLI's build verb does; OpenMP spinning on a busy 2-core machine is slow
    tmp = tmp_path_factory.mktemp("chameleon")
    p = study_params
    specs = {"sift-like": {"source": "synthetic/sift-like", "n_base": 2000, "n_query": 40, "gt_k": 20},
             "syn-512": {"source": "synthetic/syn-512", "n_base": 2000, "n_query": 40, "gt_k": 20}}
    man, idx = {}, {}
    for name, spec in specs.items():
        man[name] = str(prepared.prepare(name, spec, profile="t", data_dir=tmp, seed=3))
        idx[name] = str(tmp / f"{name}.faiss")
        STUDY.steps["index"](Context("chameleon", "index", p, "t", 3, 1, idx[name], {"manifest": [man[name]]}, name))

    def run(step, out, inputs, dataset=None):
        return str(execute(Context("chameleon", step, p, "t", 3, 1, tmp / out, inputs, dataset, study_section),
                           STUDY.steps[step].fn))

    one = lambda d: {"manifest": [man[d]], "index": [idx[d]]}  # noqa: E731
    rec = {"search": [run("search", f"search_{d}.parquet", one(d), d) for d in specs],
           "scan": [run("scan", f"scan_{d}.parquet", one(d), d) for d in specs],
           "model": [run("model", "model.parquet", {"index": list(idx.values())})],
           "queue": [run("queue", "queue.parquet", one("sift-like"), "sift-like")],
           "nodes": [run("nodes", "nodes.parquet", one("sift-like"), "sift-like")],
           "ralm": [run("ralm", "ralm.parquet", {"manifest_S": [man["syn-512"]], "index_S": [idx["syn-512"]]})]}
    rec["energy"] = [run("energy", "energy.parquet", {"search": rec["search"]})]
    return rec


def no_measuring(registry, mp) -> None:
    """Every Chameleon figure is drawn with each step of the study replaced by a failure: a figure reads
    records, it never measures (tests/chameleon/test_figures.py::test_every_registered_figure_renders)."""
    from bench.chameleon import STUDY, figures

    if registry is not figures.FIGURES:
        return
    steps = STUDY.steps._load()
    for step in list(steps):
        mp.setitem(steps, step, dataclasses.replace(steps[step], fn=lambda ctx: pytest.fail("a figure must not measure")))


@pytest.fixture(scope="session")
def figure_guard():
    """What each cached figure is drawn under here (tests/figcache.py): :func:`no_measuring`."""
    return no_measuring

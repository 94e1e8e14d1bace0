"""Measures IVF-PQ recall@k and queries/s against nprobe and writes a record set.

Protocol: the index is loaded once; for each nprobe, ``warmup`` untimed-for-results runs (timed and
recorded with phase=warmup, excluded from summaries) then ``repeats`` measured runs, each a search of
the whole query set in one batch with an explicit thread count. Recall is computed from the results of
the measured runs (faiss search is deterministic, every run returns the same neighbours; the runner
checks that it does).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..core import measure, records
from ..core.step import Context, Result, reads
from ..core.errors import ConfigError
from ..data import prepared
from ..ann import ivf
from ..ann.metrics import recall_at_k

METHOD = (
    "wall-clock (time.perf_counter) around index.search of the whole query set in one batch; "
    "{warmup} warm-up run(s) per nprobe recorded as phase=warmup and excluded from summaries; "
    "{repeats} measured runs per nprobe; threads set explicitly ({threads}) for faiss/torch/BLAS; "
    "k-recall@k = |top-k found ∩ exact top-k| / k (faiss.contrib.evaluation.knn_intersection_measure) "
    "against the dataset's ground truth (recomputed exactly for crops); index and data in RAM (warm)."
)


def validate(params: Mapping[str, Any], nlist: int, gt_k: int) -> None:
    nprobes, ks = list(params["nprobe"]), list(params["k"])
    bad = [p for p in nprobes if p > nlist]
    if bad:
        raise ConfigError(f"ivf_recall.nprobe: {bad} exceed nlist={nlist}")
    if max(ks) > gt_k:
        raise ConfigError(f"ivf_recall.k: recall@{max(ks)} needs {max(ks)} ground-truth neighbours, "
                          f"the dataset has {gt_k}")


@reads("manifest", "index")
def recall(ctx: Context) -> Result:
    """The ``recall`` step: recall@k and queries/s for each nprobe of one dataset's index."""
    params = ctx.params
    ds = prepared.load_vectors(ctx.input("manifest"))
    index = ivf.load(ctx.input("index"))
    nlist = ivf.nlist(index)
    validate(params, nlist, ds.gt_ids.shape[1])
    xq = np.ascontiguousarray(ds.queries, dtype=np.float32)
    kmax = max(params["k"])
    rows = []
    for nprobe in params["nprobe"]:
        ivf.set_nprobe(index, nprobe)
        t = measure.repeat(lambda: index.search(xq, kmax)[1], repeats=params["repeats"],
                           warmup=params["warmup"], keep_results=True)
        first = t.results[0]
        if any(not np.array_equal(first, r) for r in t.results[1:]):
            raise RuntimeError(f"nprobe={nprobe}: repeated searches returned different neighbours")
        recalls = {f"recall_at_{k}": recall_at_k(first, ds.gt_ids, k) for k in params["k"]}
        for phase, times in (("warmup", t.warmup), ("measured", t.runs)):
            for i, s in enumerate(times):
                rows.append({"dataset": ds.name, "dataset_id": ds.id, "nprobe": nprobe, "phase": phase,
                             "repeat": i, "n_queries": xq.shape[0], "threads": ctx.threads,
                             "wall_s": s, "qps": xq.shape[0] / s, "source": "measured", **recalls})
    df = pd.DataFrame(rows)
    measured_rows = df[df.phase == "measured"]
    summary = records.summarize_runs(measured_rows, ["dataset", "nprobe"], "qps")
    rec = measured_rows.groupby(["dataset", "nprobe"])[[c for c in df if c.startswith("recall_at_")]].first()
    summary = summary.merge(rec.reset_index(), on=["dataset", "nprobe"])
    return Result(records=df, summary=summary, dataset_id=f"{ds.name} ({ds.id})", dataset_checksum=ds.checksum,
                  method=METHOD.format(warmup=params["warmup"], repeats=params["repeats"], threads=ctx.threads),
                  provenance={"index": {"path": ctx.input("index"), "nlist": nlist, "ntotal": int(index.ntotal),
                                        "factory": ivf.index_factory_string(nlist, params["index"]["m"],
                                                                            params["index"].get("nbits", 8))}})


STEPS = {"recall": recall}

"""Measurement step ``recall``: IVF-PQ recall@k and queries/s for each nprobe of one dataset's index.

Protocol: the index is loaded once; for each nprobe, ``warmup`` runs (timed and recorded with
phase=warmup, excluded from summaries) then ``repeats`` measured runs, each a search of the whole query
set in one batch with an explicit thread count. Recall is computed from the results of the measured runs
(faiss search is deterministic, every run returns the same neighbours; the step checks that it does).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...ann import ivf
from ...ann.metrics import recall_at_k
from ...core.measuring import measure, records
from ...core.base.errors import ConfigError
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ...data import prepared
from ..params import Params, for_dataset

METHOD = (
    "wall-clock (time.perf_counter) around index.search of the whole query set in one batch; "
    "{warmup} warm-up run(s) per nprobe recorded as phase=warmup and excluded from summaries; "
    "{repeats} measured runs per nprobe, split over the profile's fresh processes (each loads the index and "
    "warms up itself, so the queries/s interval resamples processes); threads set explicitly ({threads}) for faiss/torch/BLAS; "
    "k-recall@k = |top-k found ∩ exact top-k| / k (faiss.contrib.evaluation.knn_intersection_measure) "
    "against the dataset's ground truth (recomputed exactly for crops); index and data in RAM (warm)."
)


def validate(p: Params, nlist: int, gt_k: int) -> None:
    bad = [n for n in p.nprobe if n > nlist]
    if bad:
        raise ConfigError(f"ivf_recall.nprobe: {bad} exceed nlist={nlist}")
    if max(p.k) > gt_k:
        raise ConfigError(f"ivf_recall.k: recall@{max(p.k)} needs {max(p.k)} ground-truth neighbours, "
                          f"the dataset has {gt_k}")


def _rows(ds, nprobe: int, t: measure.Timings, recalls: dict, threads: int, nq: int) -> list[dict]:
    return [{"dataset": ds.name, "dataset_id": ds.id, "nprobe": nprobe, "phase": phase, "repeat": i,
             "n_queries": nq, "threads": threads, "wall_s": s, "qps": nq / s, "source": "measured", **recalls}
            for phase, times in (("warmup", t.warmup), ("measured", t.runs)) for i, s in enumerate(times)]


def _summary(df: pd.DataFrame) -> pd.DataFrame:
    m = df[df.phase == "measured"]
    summary = records.summarize_runs(m, ["dataset", "nprobe"], "qps")
    rec = m.groupby(["dataset", "nprobe"])[[c for c in df if c.startswith("recall_at_")]].first()
    return summary.merge(rec.reset_index(), on=["dataset", "nprobe"])


@step("recall", needs=("manifest", "index"), writes="recall", keys=("index", "nprobe", "k", "repeats", "warmup"),
      section_for=for_dataset, processes=True)
def recall(ctx: Context) -> Result:
    p: Params = ctx.params
    ds = prepared.load_vectors(ctx.input("manifest"))
    index = ivf.load(ctx.input("index"))
    nlist = ivf.nlist(index)
    validate(p, nlist, ds.gt_ids.shape[1])
    xq = np.ascontiguousarray(ds.queries, dtype=np.float32)
    rows = []
    for nprobe in p.nprobe:
        ivf.set_nprobe(index, nprobe)
        t = measure.repeat(lambda: index.search(xq, max(p.k))[1], repeats=ctx.share(p.repeats), warmup=p.warmup,
                           keep_results=True)
        first = t.results[0]
        if any(not np.array_equal(first, r) for r in t.results[1:]):
            raise RuntimeError(f"nprobe={nprobe}: repeated searches returned different neighbours")
        recalls = {f"recall_at_{k}": recall_at_k(first, ds.gt_ids, k) for k in p.k}
        rows += _rows(ds, nprobe, t, recalls, ctx.threads, xq.shape[0])
    df = pd.DataFrame(rows)
    return Result(records=df, summary=_summary(df), dataset_id=f"{ds.name} ({ds.id})", dataset_checksum=ds.checksum,
                  method=METHOD.format(warmup=p.warmup, repeats=ctx.shared_total(p.repeats), threads=ctx.threads),
                  provenance={"index": {"path": ctx.input("index"), "nlist": nlist, "ntotal": int(index.ntotal),
                                        "factory": ivf.index_factory_string(nlist, p.index.m, p.index.nbits)}})

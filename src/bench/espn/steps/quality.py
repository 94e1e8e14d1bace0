"""Figures 5 and 6 (paper sections 4.2, 4.4): recall@1000 of the CLS candidate list and ANN time against
nprobe; MRR@10 / nDCG@10 after MaxSim re-ranking of only the top n candidates, normalised by re-ranking
all K (also per query, for the claim's interval)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.measuring import measure, records
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Params
from ..system import backends, candidates
from . import inputs

METHOD = ("Figure 5: recall@1000 of the CLS candidate list (ir_measures over the qrels) and per-query ANN "
          "time (wall clock, median of repeats after warm-up) vs nprobe. Figure 6: MRR@10/nDCG@10 after "
          "MaxSim re-ranking of the top n candidates (rest by CLS score), normalised by n = K; per-query "
          "MRR@10 rows (figure = fig6-query) for the claim's bootstrap. Embeddings read from memory.")


def run_frame(rankings, qids, doc_ids, n_real) -> pd.DataFrame:
    """A TREC-style run: (query_id, doc_id, score) with synthetic filler records named as such."""
    rows = []
    for qid, r in zip(qids, rankings):
        r = r[r >= 0]
        for rank, d in enumerate(r):
            did = doc_ids[d] if d < n_real else f"synthetic-{d}"
            rows.append((qid, did, float(len(r) - rank)))
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def evaluate(run: pd.DataFrame, qrels: pd.DataFrame) -> tuple[dict[str, float], dict[str, float]]:
    """Aggregate MRR@10, nDCG@10, R@1000, and MRR@10 per query."""
    import ir_measures
    from ir_measures import MRR, R, nDCG

    q = qrels.astype({"query_id": str, "doc_id": str}).copy()
    q["relevance"] = q["relevance"].astype(int)
    names = {MRR @ 10: "mrr@10", nDCG @ 10: "ndcg@10", R(rel=1) @ 1000: "recall@1000"}
    vals: dict[str, dict[str, float]] = {n: {} for n in names.values()}
    for m in ir_measures.iter_calc(list(names), q, run):   # one pass; each aggregate is the mean over queries
        vals[names[m.measure]][m.query_id] = float(m.value)
    return {n: float(np.mean(list(v.values()))) if v else float("nan") for n, v in vals.items()}, vals["mrr@10"]


def _fig5(b: inputs.Build, params: Params, qrels) -> list[dict]:
    rows, K = [], params.k
    for nprobe in params.nprobe_sweep:
        if nprobe > b.index.nlist:
            continue
        _, I = candidates.search(b.index, b.qc, nprobe, K)
        m, _ = evaluate(run_frame(list(I), b.qids, b.meta["doc_ids"], b.meta["n_real"]), qrels)
        nq = len(b.qc)
        tm = measure.repeat(lambda: [candidates.search(b.index, b.qc[i:i + 1], nprobe, K) for i in range(nq)],
                            repeats=params.repeats, warmup=1)
        for r, t in enumerate(tm.runs):
            rows.append({"figure": "fig5", "nprobe": nprobe, "rerank_n": 0, "repeat": r,
                         "ann_time_s": t / nq, "warmup_s": tm.warmup[0] / nq, **m, "source": "measured"})
    return rows


def _fig6(b: inputs.Build, params: Params, qrels) -> list[dict]:
    from ..system.maxsim import resolve_device
    from ..system.pipeline import Retriever

    rows, K = [], params.k
    eta = min(params.nprobe, b.index.nlist)
    device = resolve_device(params.device)
    with backends.MemoryStore(b.table, b.off) as store:
        for n in params.rerank_counts:
            r = Retriever(b.index, store, K, eta, n, None, device, params.bow_weight, params.prefetch_chunk)
            ranks = [r.run(b.qc[i:i + 1], [b.qt[i]]).rankings[0] for i in range(len(b.qc))]
            m, per = evaluate(run_frame(ranks, b.qids, b.meta["doc_ids"], b.meta["n_real"]), qrels)
            rows.append({"figure": "fig6", "nprobe": eta, "rerank_n": n, "repeat": 0, "ann_time_s": np.nan,
                         "warmup_s": np.nan, **m, "source": "measured"})
            rows += [{"figure": "fig6-query", "nprobe": eta, "rerank_n": n, "repeat": 0, "query_id": q,
                      "mrr@10": v, "source": "measured"} for q, v in per.items()]
    return rows


@step("quality", needs=("build", "manifest"), per="first",
      keys=("datasets", "block_mode", "index", "k", "nprobe", "nprobe_sweep", "prefetch_steps", "prefetch_step",
            "prefetch_delta", "rerank_counts", "partial_rerank", "bow_weight", "backends", "repeats", "warmup",
            "batch_sizes", "io_depth", "device", "maxsim_threads", "io_engine", "prefetch_engine",
            "prefetch_chunk"))
def quality(ctx: Context) -> Result:
    """The ``quality`` step: the build, and the qrels of the dataset's manifest."""
    from ...data import prepared

    b = inputs.start(ctx)
    qrels = prepared.load_text(ctx.input("manifest")).qrels
    df = pd.DataFrame(_fig5(b, ctx.params, qrels) + _fig6(b, ctx.params, qrels))
    f6 = df[df.figure == "fig6"]
    base = f6.loc[f6.rerank_n == f6.rerank_n.max()]
    for col in ("mrr@10", "ndcg@10"):
        ref = float(base[col].iloc[0]) if len(base) else np.nan
        df[f"norm_{col}"] = np.where(df.figure == "fig6", df[col] / ref if ref else np.nan, np.nan)
    summ = records.summarize_runs(df[df.figure == "fig5"], ["nprobe"], "ann_time_s")
    return Result(records=df, summary=summ, method=METHOD, provenance=inputs.provenance(b), **inputs.result_ids(b))

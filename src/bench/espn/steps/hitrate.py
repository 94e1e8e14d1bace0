"""Figure 7 (paper section 5.2): the prefetcher's hit rate, the fraction of the final top-n candidates
already in the approximate top-n after delta = step x eta lists, per query, against the prefetch step."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.measuring import records
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Params
from ..system import backends, candidates, layout
from . import inputs

METHOD = ("Figure 7: prefetcher hit rate = fraction of the final top-n candidates (after eta lists) already "
          "in the approximate top-n after delta = step x eta lists (search_preassigned); per query, with the "
          "records in the eta lists the search visits (n_scanned: the candidates the top K is chosen from, "
          "exact given the index). corpus = 'full index' (every record) or, when the table has synthetic "
          "filler, 'real passages only' (an index of the collection's passages alone: nlist scaled by "
          "n_real / n_docs, nprobe by the same factor, rounded, so it probes the same fraction of its lists: "
          "nprobe_used of nlist, lists_frac).")


def _real_cls(b: inputs.Build, n_real: int) -> np.ndarray:
    """The CLS vectors (fp16 in the table) of the first ``n_real`` records, the collection's passages."""
    with backends.MmapStore(b.table, b.off) as st:
        parts = [st.read(np.arange(s, e))[0].astype(np.float32) for s, e in layout.iter_chunks(n_real, 20000)]
    return np.concatenate(parts)


def _indexes(b: inputs.Build, params: Params, seed) -> list[tuple[str, object, float]]:
    """(corpus, index, nprobe scale): the full index, and the real passages alone when there is filler.
    Synthetic filler records sit close to the real passages, so a full-index hit rate says more about
    the generator than about the collection; the real-passages index keeps the list size and the
    fraction of lists probed."""
    out = [("full index", b.index, 1.0)]
    n_real, n_docs = int(b.meta["n_real"]), int(b.meta["n_docs"])
    if b.meta.get("n_filler", 0) and n_real >= 2 * 39:
        ix = params.index
        nl = max(1, round(b.index.nlist * n_real / n_docs))
        ridx = candidates.build(_real_cls(b, n_real), ix.kind, nl, ix.m, ix.nbits, seed=seed)
        out.append(("real passages only", ridx, ridx.nlist / b.index.nlist))
    return out


def _etas(idx, scale, params: Params) -> list[tuple[int, int]]:
    """(nprobe asked, nprobe used) per hitrate_nprobe: the same fraction of the index's lists as the asked
    nprobe is of the full index's (``scale`` = this index's nlist over the full one's), rounded, at least
    one; two that round to the same lists are measured once. Never raised to hold more candidates: where
    the lists probed hold few records against K, the K/N premise of the claim says so."""
    seen, out = set(), []
    for eta_full in params.hitrate_nprobe:
        eta = max(1, min(round(eta_full * scale), idx.nlist))
        if eta not in seen:
            seen.add(eta)
            out.append((eta_full, eta))
    return out


@step("hitrate", needs=("build",), per="first", timed=False,
      keys=("datasets", "block_mode", "index", "k", "nprobe", "hitrate_nprobe", "prefetch_steps", "prefetch_step",
            "prefetch_delta", "rerank_counts", "partial_rerank", "batch_sizes", "io_depth", "maxsim_threads",
            "io_engine", "prefetch_engine"))
def hitrate(ctx: Context) -> Result:
    """The ``hitrate`` step: the build. It times nothing (hit rates are deterministic given the index), so it
    neither waits for a quiet machine nor reruns."""
    b = inputs.start(ctx)
    params, K = ctx.params, ctx.params.k
    rows = []
    for corpus, idx, scale in _indexes(b, params, ctx.seed):
        for eta_full, eta in _etas(idx, scale, params):
            scanned = candidates.scanned(idx, b.qc, eta)
            for step in params.prefetch_steps:
                delta = candidates.delta_for(eta, step)
                (_, Ia), (_, I) = candidates.staged(idx, b.qc, eta, delta, K)
                for n in sorted({K, params.partial_rerank}):
                    for q, h, sc in zip(b.qids, candidates.hit_rate(Ia[:, :n], I[:, :n]), scanned):
                        rows.append({"corpus": corpus, "n_docs": idx.ntotal, "nlist": idx.nlist,
                                     "nprobe": eta_full, "nprobe_used": eta, "lists_frac": eta / idx.nlist,
                                     "n_scanned": int(sc), "step": step, "delta": delta, "rerank_n": n,
                                     "query_id": q, "hit_rate": float(h), "source": "measured"})
    df = pd.DataFrame(rows)
    summ = records.summarize_runs(df, ["corpus", "nprobe", "step", "rerank_n"], "hit_rate")
    return Result(records=df, summary=summ, method=METHOD, provenance=inputs.provenance(b), **inputs.result_ids(b))

"""Figures 8, 9, 10 and equation 4 (paper section 5.4): critical-path embedding access latency against
the query batch size, exact (top K) and partial (top 64) re-ranking, simulated as the paper does: the
prefetcher's reads overlap a constant prefetch budget (equation 2), then the misses are read."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ...core.measuring import measure, records
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..system import backends, candidates
from ..system.eq4 import ESPN_BATCH as ESPN
from ..system.eq4 import PREFETCHER_SERIAL
from . import inputs

METHOD = ("Figures 8/9: critical-path embedding access latency vs query batch size, as the paper "
          "simulates it: each query of a batch accesses its top n embeddings (n = K exact, or the "
          "partial re-rank count); the prefetcher's read of each query's approximate top n (delta = "
          "step x eta) starts, a constant prefetch budget (equation 2, measured ANN time(eta) - "
          "time(delta) for one query) elapses (sleep: emulated), then the critical path waits for "
          "the whole prefetch and reads the misses (the serial-wait prefetcher, column prefetcher; not the "
          "e2e pipeline's cut-concurrent one). memory/direct are measured reads (+ decode). Figure 10 "
          "models batch latency = ANN(eta) + encode + critical access + MaxSim (measured parts). "
          "{repeats} measured repeats per batch size after one warm-up, split over {procs} fresh process(es) "
          "of the step (column process), each measuring its own prefetch budget, so the intervals of the "
          "ratios and of equation 4 resample processes first.")
DIRECT = "direct (GDS stand-in)"


def _ann_time(b: inputs.Build, nprobe, k, repeats) -> float:
    """Median single-query ANN time at ``nprobe`` lists (per query, after a warm-up run)."""
    nq = len(b.qc)
    t = measure.repeat(lambda: [candidates.search(b.index, b.qc[i:i + 1], nprobe, k) for i in range(nq)],
                       repeats=repeats, warmup=1)
    return float(np.median(t.runs)) / nq


def _espn_access(direct, pre, miss, budget_s) -> tuple[float, float]:
    """The prefetch runs through the budget (a sleep); then the critical path waits for it and reads
    the misses. Returns (critical-path seconds, prefetch spill past the budget)."""
    fut = direct.submit(pre)
    time.sleep(budget_s)
    t_end = time.perf_counter()
    fut.result()
    t_done = time.perf_counter()
    if len(miss):
        direct.read(miss)
    return time.perf_counter() - t_end, max(0.0, t_done - t_end)


def _batch_rows(b, mem, direct, sel, n, reps, budget_s, device) -> list[dict]:
    """Rows of one (re-rank mode, batch size): memory, direct and ESPN per repeat (first = warm-up)."""
    from ..system.maxsim import maxsim

    finals, approx, qsel = sel
    need = np.concatenate(finals)  # duplicates across queries are read again (separate queries)
    pre = np.concatenate(approx)
    miss = np.concatenate([f[~np.isin(f, a)] for f, a in zip(finals, approx)])
    rows = []
    for rep in range(reps + 1):
        with measure.Timer() as tm:
            mem.read(need)
        with measure.Timer() as td:
            direct.read(need)
        crit, spill = _espn_access(direct, pre, miss, budget_s)
        dec = mem.read(need[: min(len(need), n)])
        with measure.Timer(cuda=device == "cuda") as tr:
            for _ in qsel:
                maxsim(b.qt[qsel[0]], dec[1], dec[2], device)
        base = {"repeat": rep, "phase": "warmup" if rep == 0 else "measured", "n_access": len(need),
                "n_prefetch": len(pre), "n_miss": len(miss), "maxsim_s": tr.seconds}
        rows += [{**base, "method": "memory", "access_s": tm.seconds, "prefetch_spill_s": 0.0, "source": "measured"},
                 {**base, "method": DIRECT, "access_s": td.seconds, "prefetch_spill_s": 0.0, "source": "measured"},
                 {**base, "method": ESPN, "access_s": crit, "prefetch_spill_s": spill, "source": "emulated",
                  "prefetcher": PREFETCHER_SERIAL}]
    return rows


@step("batch", needs=("build",), per="first", processes=True,
      keys=("datasets", "block_mode", "index", "k", "nprobe", "prefetch_steps", "prefetch_step", "prefetch_delta",
            "batch_prefetch_step", "rerank_counts", "partial_rerank", "backends", "repeats", "batch_sizes",
            "batch_repeats", "io_depth", "device", "maxsim_threads", "io_engine", "prefetch_engine"))
def batch(ctx: Context) -> Result:
    """The ``batch`` step: the build."""
    from ..system.maxsim import resolve_device

    b = inputs.start(ctx)
    params = ctx.params
    K, eta = params.k, min(params.nprobe, b.index.nlist)
    delta = candidates.delta_for(eta, params.batch_prefetch_step)
    device = resolve_device(params.device)
    ann_eta = _ann_time(b, eta, K, params.repeats)
    budget_s = max(0.0, ann_eta - _ann_time(b, delta, K, params.repeats))
    (_, Ia), (_, I) = candidates.staged(b.index, b.qc, eta, delta, K)
    rng = np.random.default_rng(ctx.seed)
    rows = []
    with backends.MemoryStore(b.table, b.off) as mem, \
            backends.DirectStore(b.table, b.off, depth=params.io_depth, engine=params.io_engine) as direct:
        for label, n in (("exact", K), ("partial", params.partial_rerank)):
            for B in params.batch_sizes:
                qsel = rng.choice(len(b.qc), size=B, replace=B > len(b.qc))
                sel = ([I[q][I[q] >= 0][:n] for q in qsel], [Ia[q][Ia[q] >= 0][:n] for q in qsel], qsel)
                got = _batch_rows(b, mem, direct, sel, n, ctx.share(params.batch_repeats), budget_s, device)
                rows += [{**r, "rerank": label, "rerank_n": n, "batch": B, "prefetch_budget_s": budget_s,
                          "ann_eta_s": ann_eta, "delta": delta, "eta": eta,
                          "encode_s": b.meta["encode_queries_s"] / max(1, len(b.qc)) * B} for r in got]
    df = pd.DataFrame(rows)
    df["latency_model_s"] = df["ann_eta_s"] + df["encode_s"] + df["access_s"] + df["maxsim_s"]
    df["throughput_model_qps"] = df["batch"] / df["latency_model_s"]
    summ = records.summarize_runs(df[df.phase == "measured"], ["rerank", "method", "batch"], "access_s")
    method = METHOD.format(repeats=ctx.shared_total(params.batch_repeats), procs=max(1, ctx.processes))
    return Result(records=df, summary=summ, method=method,
                  provenance=inputs.provenance(b), **inputs.result_ids(b))

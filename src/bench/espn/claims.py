"""ESPN's rows of the claims ledger, from records only: the paper's headline claims (speed-up over mmap,
over plain SSD reads, prefetch hit rate, MRR@10 kept by partial re-ranking, the batch thresholds of
equation 4, memory saved) and the study's targets (``target-*``). Latency ratios are judged on per-query
(or per-repeat) values with a bootstrap interval, never on means alone."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.judging import claims

from ..core.judging import intervals

from ..core.measuring import sequential
from . import paper_values as PV
from .analysis import (E2E, bow_cls, disk_words, emulated_keys, eq4_table, hitrate, prefetch_budget_s, premise,
                       reader_engine, ssd_words)
from .params import Params
from .system.eq4 import ESPN_BATCH
from .system.eq4 import PREFETCHER, PREFETCHER_SERIAL

MIN_QD_GAIN = 4.0   # a device counts as parallel when its QD32 rate is at least this many times its QD1 rate
QD_GAIN_FROM = ("the harness's own bar, fixed when the premise was added and not tuned since: the "
                "paper gives no number, section 2.3 only says an SSD reaches its rated IOPS with many requests in "
                "flight; 4x is an eighth of what 32 reads in flight could give")
MIN_PROBE_PAIRS = 4   # QD1/QD32 probe pairs needed for an interval on the premise
MIN_WORKERS = 3       # fresh worker processes needed before an interval between them is trusted

RECORDS = ("e2e", "hitrate", "iops", "batch", "quality", "sizes")
STUDY = "espn"
PAPER_SCALE = "16.8 GB BOW table, 8.8M passages (MS MARCO v1)"
N_BOOT = 2000  # bootstrap resamples per interval


_busy = claims.busy


def _scale(prov: dict) -> str:
    b = prov.get("build", {})
    return (f"{b.get('table_bytes', 0) / 1e6:.0f} MB table, {b.get('n_real', 0):,} passages + "
            f"{b.get('n_filler', 0):,} synthetic records vs {PAPER_SCALE}")


def _range(lo_hi) -> str:
    return f"{lo_hi[0]:g}-{lo_hi[1]:g}x"


def _ms(x) -> str:
    return f"{np.median(x) * 1e3:.1f} ms" if len(x) else "not run"


def _suffix(ssd: str) -> str:
    """The claim-id suffix of a device key: native "", the IOPS cap "-emulated-ssd", a latency device
    "-emulated-ssd-<latency>us"."""
    if ssd == "native":
        return ""
    return "-emulated-ssd" + (f"-{ssd.split('+')[1]}" if "+" in ssd else "")


def _col(rows: pd.DataFrame, c):
    v = rows[c].dropna() if c in rows else []
    return float(v.iloc[0]) if len(v) else None


def qd_gain(pairs: pd.DataFrame, level: float = 0.95) -> tuple[float, float, float]:
    """(estimate, low, high) of a device's QD32/QD1 gain from its probe pairs: the median QD32 rate over the
    median QD1 rate, with a bootstrap interval resampling whole pairs (a pair's two rates together), the
    step's processes first, then the pairs within them."""
    q1, q32 = pairs.probe_qd1_iops.to_numpy(float), pairs.probe_qd32_iops.to_numpy(float)

    def stat(i):
        i = np.asarray(i, dtype=int)
        return float(np.median(q32[i]) / np.median(q1[i]))
    return intervals.bootstrap_ci(np.arange(len(pairs)), stat=stat, n_boot=N_BOOT, level=level,
                               groups=intervals.process_of(pairs))


def _parallel(e: E2E, ssd: str) -> claims.Premise:
    """The paper's SSD is parallel (section 2.3: deep queues): the device's QD32 rate against its QD1 rate
    over the step's interleaved probe pairs (the disk's for native rows, the emulated device's for emulated
    ones). Holds when the interval's low end clears :data:`MIN_QD_GAIN`, fails when its high end is below it
    (on a quiet machine: a busy CPU slows the QD32 threads most), else undecided (the row inconclusive)."""
    name, dev = "the SSD serves many reads at once (section 2.3)", "disk" if ssd == "native" else "emulated SSD"
    pairs, row = e.probes(ssd), "e2e records (phase probe)"
    bar = f"against >= {MIN_QD_GAIN:g}x ({QD_GAIN_FROM})"
    if len(pairs) < MIN_PROBE_PAIRS:
        d = e.all[e.all.ssd == ssd]
        q1, q32 = (_col(d, "disk_qd1_iops"), _col(d, "disk_qd32_iops")) if ssd == "native" else \
            (_col(d, "ssd_qd1_iops"), _col(d, "ssd_qd32_iops"))
        one = f"; one reading: {q32 / q1:.2f}x" if q1 and q32 else ""
        return claims.Premise(name, None, f"{dev} QD32/QD1 rate: {len(pairs)} probe pairs in the records, at least "
                              f"{MIN_PROBE_PAIRS} needed for an interval{one} {bar}", kind="hardware", row=row)
    level = sequential.level_of(pairs)
    est, lo, hi = qd_gain(pairs, level)
    busy = _busy(pairs)
    holds = True if lo >= MIN_QD_GAIN else (False if hi < MIN_QD_GAIN and not busy else None)
    words = {True: "the whole interval clears it", False: "the whole interval is below it",
             None: ("the whole interval is below it, but the probes ran on a busy machine, so it is not taken as "
                    "failing" if hi < MIN_QD_GAIN else "the interval straddles it: undecided, not a failure")}[holds]
    return claims.Premise(
        name, holds, f"{dev} QD32/QD1 4 KiB rate {est:.2f}x [{lo:.2f}, {hi:.2f}] (median "
        f"{np.median(pairs.probe_qd32_iops):,.0f} / {np.median(pairs.probe_qd1_iops):,.0f} IOPS over {len(pairs)} "
        f"interleaved QD1/QD32 probe pairs spread over the step, {_procs(pairs)}; bootstrap {level * 100:g}% "
        f"interval over whole pairs, processes first) {bar}: {words}", kind="hardware", row=row)


def _binds(rows: pd.DataFrame, budget) -> claims.Premise:
    """The paper's regime: the memory budget binds (mmap works against its cap), from the mmap rows'
    budget_bound (failcnt or reclaim over each measured pass)."""
    m = rows[rows.backend == "mmap"] if "backend" in rows else rows
    if "budget_bound" not in m or m.budget_bound.isna().all():
        return claims.Premise("the memory budget binds", None, "budget_bound not recorded", row="e2e records")
    share = float(m.budget_bound.astype(bool).mean())
    fc = m.groupby(["process", "repeat"]).failcnt_pass.first().sum() if "failcnt_pass" in m else float("nan")
    return claims.Premise("the memory budget binds", share > 0,
                          f"mmap's measured passes at budget {budget} bound in {share:.0%} of query rows "
                          f"(failcnt +{_fmt_int(fc)} over the measured passes)", row="e2e records (budget_bound)")


def _fmt_int(v) -> str:
    return "?" if v != v else f"{int(v):,}"


def _ratio_claim(e: E2E, cid, text, paper, ssd, num: str, den, *, threshold, direction=">=",
                 extra="", target=None, premises=()) -> claims.Claim:
    """``median(num) / median(den)`` of per-query end-to-end latencies at the budget nearest half the
    table on disk ``ssd``, with a bootstrap interval over processes first. ``den``: a back end, or
    (back end, disk, budget)."""
    budget = e.half(ssd)
    if budget is None:
        return claims.claim(STUDY, cid, text + ("" if ssd == "native" else " (emulated SSD)"), paper, ours=None,
                            source="not_run", unit="x", scale=_scale(e.prov), reason=f"not run: {e.why_not(ssd)}",
                            verdict=claims.NEEDS_TOOL if "needs a tool we lack" in e.why_not(ssd) else None)
    where = "" if ssd == "native" else f" ({ssd_words(e.all, ssd)})"
    dk, dssd, dbud = den if isinstance(den, tuple) else (den, ssd, budget)
    ra, rb = e.rows(ssd, num, budget), e.rows(dssd, dk, dbud)
    a, b = ra.total_s.to_numpy(), rb.total_s.to_numpy()
    rows = pd.concat([ra, rb])
    level = sequential.level_of(rows)
    est, lo, hi = intervals.ratio_ci(a, b, n_boot=N_BOOT, level=level,
                                  groups=(intervals.process_of(ra), intervals.process_of(rb)))
    disk = f"; {disk_words(e.all)}" if ssd == "native" else ""
    return claims.claim(
        STUDY, cid, text + where, paper, ours=est, ci=(lo, hi), threshold=threshold, direction=direction, unit="x",
        scale=f"budget {budget} of the table; {_scale(e.prov)}", source=e.source(ssd, budget),
        reason=f"median per-query latency {num} {_ms(a)} / {dk} {_ms(b)} ({len(a)} and {len(b)} query "
               f"runs in {intervals.processes_text(rows)}, steady state under the cap, bootstrap {level * 100:g}% interval "
               f"over processes first){extra}{disk}", machine_busy=_busy(rows), target=target, premises=premises,
        interval=f"noise: {intervals.processes_text(rows)}")


def t_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """(geometric mean, low, high) of positive per-worker values: a Student-t interval on their logs
    (n - 1 degrees of freedom), the fresh worker processes being the units (the spread between processes is
    the noise that matters, Kalibera & Jones; a bootstrap over two or three of them reads far too narrow)."""
    from scipy import stats

    x = np.log(np.asarray(values, dtype=float))
    if x.size == 0:
        return float("nan"), float("nan"), float("nan")
    m = float(x.mean())
    if x.size == 1:
        return float(np.exp(m)), float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return float(np.exp(m)), float(np.exp(m - half)), float(np.exp(m + half))


def _procs(rows: pd.DataFrame) -> str:
    n = len(np.unique(intervals.process_of(rows)))
    return f"{n} fresh process{'es' if n != 1 else ''} of the step"


def _bound(rows: pd.DataFrame) -> bool:
    """Whether the cap bound in any of these rows' passes (budget_bound)."""
    return bool(rows.budget_bound.fillna(False).astype(bool).any()) if "budget_bound" in rows else False


def _budgets(e: E2E, ssd: str, *kinds: str) -> list[str]:
    """The capped budgets on ``ssd`` where every one of ``kinds`` ran, smallest first."""
    o = e.ok[(e.ok.ssd == ssd) & (e.ok.budget != "unlimited")]
    have = [set(o[o.backend == k].budget) for k in kinds]
    return sorted(set.intersection(*have), key=float) if have else []


def _pool_words(used, left_out, why: str) -> str:
    out = (f"pooled over the budgets where the cap never bound ({', '.join(used)}): {why}")
    return out + (f"; left out, a cap bound there: {', '.join(left_out)}" if left_out else "")


def _few(n: int) -> str:
    return (f"{claims.INCONCLUSIVE}: {n} fresh worker process{'es' if n != 1 else ''}, fewer than the {MIN_WORKERS} "
            "an interval over processes needs (with two, the spread between processes rests on one difference); "
            "more budgets or processes (profile small/paper: 3 processes) give it")


def _prefetch_target(e: E2E, ssd: str) -> claims.Claim:
    """The harness's target: direct + the cut-concurrent prefetcher no slower than direct reads. One unit per
    fresh worker process (a budget in a process of the step) that ran both: the ratio of their median
    per-query latencies in it; a Student-t interval over those workers (:func:`t_interval`). Both back ends
    read with O_DIRECT, so where their caps never bound the budget does not touch them and the budgets pool.
    The prefetcher's reads run beside the critical path's, so the row rests on the same premise as its sibling
    ``speedup-vs-mmap`` on this device (:func:`_parallel`, the SSD serves many reads at once) and grades a
    failed premise the same way ("needs hardware we lack"), before counting its workers."""
    cid = f"target-prefetch-not-slower-than-direct{_suffix(ssd)}"
    text = ("target: direct + cut-concurrent prefetcher no slower than direct I/O without prefetching"
            + ("" if ssd == "native" else f" ({ssd_words(e.all, ssd)})"))
    units, used, left_out, frames = [], [], [], []
    buds = _budgets(e, ssd, "direct_prefetch", "direct")
    free = [b for b in buds if not (_bound(e.rows(ssd, "direct_prefetch", b)) or _bound(e.rows(ssd, "direct", b)))]
    half = e.half(ssd)
    pool = free if half in free or (half is None and free) else [half] if half in buds else []
    for bud in buds:
        if bud not in pool:
            left_out.append(bud)
            continue
        a, b = e.rows(ssd, "direct_prefetch", bud), e.rows(ssd, "direct", bud)
        used.append(bud)
        frames += [a, b]
        for proc in sorted(set(a.process) & set(b.process)):
            units.append(float(a[a.process == proc].total_s.median() / b[b.process == proc].total_s.median()))
    if not units:
        why = e.why_not(ssd)
        return claims.claim(STUDY, cid, text, "(target)", ours=None, source="not_run", unit="x",
                            reason=f"not run: {why}",
                            verdict=claims.NEEDS_TOOL if "needs a tool we lack" in why else None)
    rows = pd.concat(frames)
    level = sequential.level_of(rows)
    est, lo, hi = t_interval(units, level)
    n = len(units)
    reason = (f"median per-query latency direct_prefetch / direct within each fresh worker process (one per budget "
              f"and process of the step; {int(rows.groupby(['process', 'budget', 'backend']).size().min())} queries or "
              f"more each, steady state under the cap): "
              f"{', '.join(f'{u:.3f}' for u in units)}; geometric mean and Student-t {level * 100:g}% interval over "
              f"these {n} workers (from {_procs(rows)}); "
              + (_pool_words(used, left_out, "both back ends read with O_DIRECT, so a cap that does not bind does not "
                             "touch them") if pool is free else f"budget {half} alone (the table at 2x its memory): "
                 "a cap bound there") + (f"; {disk_words(e.all)}" if ssd == "native" else ""))
    prem = [_parallel(e, ssd)]
    few = n < MIN_WORKERS and not any(p.holds is False for p in prem)   # a failed premise decides first
    return claims.claim(
        STUDY, cid, text, "(target)", ours=est, ci=(lo, hi), threshold=1.0, direction="<=", unit="x",
        scale=f"budgets {', '.join(used)} of the table; {_scale(e.prov)}", source=e.source(ssd, used[0]),
        reason=reason + (f"; {_few(n)}" if few else ""), machine_busy=_busy(rows),
        verdict=claims.INCONCLUSIVE if few else None, premises=prem,
        interval=f"noise: {n} fresh worker processes, Student t over them")


def _speedups(e: E2E) -> list[claims.Claim]:
    out = []
    for ssd in ["native", *emulated_keys(e.all)]:
        suffix = _suffix(ssd)
        budget = e.half(ssd)
        prem = [_parallel(e, ssd)] + ([_binds(e.rows(ssd, "mmap", budget), budget)] if budget else [])
        # one measurement, one row: the paper's 3.1x and the harness's target of 3x (table at 2x its memory)
        out.append(_ratio_claim(e, f"speedup-vs-mmap{suffix}", "ESPN (direct + cut-concurrent prefetcher) is "
                                "3.1-3.9x faster than mmap end to end", _range(PV.SPEEDUP_VS_MMAP), ssd, "mmap",
                                "direct_prefetch", threshold=PV.SPEEDUP_VS_MMAP[0], target=3.0, premises=prem))
        out.append(_prefetch_target(e, ssd))
    out.append(_budget_sweep(e))
    return out


def _budget_sweep(e: E2E) -> claims.Claim:
    """Table 4's trend: mmap's latency rises as memory shrinks (paper 183 -> 53 ms from the smallest to
    the largest limit): mmap at the smallest budget over mmap at the largest, native disk."""
    cid, text = "target-mmap-slower-with-less-memory", "target: mmap's latency rises as its memory budget shrinks"
    paper = "Table 4: 183 -> 53 ms (3.5x) from the smallest to the largest limit"
    buds = sorted((x for x in e.ok[(e.ok.ssd == "native") & (e.ok.backend == "mmap")].budget.unique()
                   if x != "unlimited"), key=float)
    if len(buds) < 2:
        return claims.claim(STUDY, cid, text, paper, ours=None, source="not_run",
                            reason="fewer than two memory budgets ran with mmap")
    ra, rb = e.rows("native", "mmap", buds[0]), e.rows("native", "mmap", buds[-1])
    rows = pd.concat([ra, rb])
    est, lo, hi = intervals.ratio_ci(ra.total_s, rb.total_s, n_boot=N_BOOT, level=sequential.level_of(rows),
                                  groups=(intervals.process_of(ra), intervals.process_of(rb)))
    return claims.claim(
        STUDY, cid, text, paper, ours=est, ci=(lo, hi), threshold=1.0, unit="x", scale=_scale(e.prov),
        source=e.source("native", buds[0]),
        reason=f"median per-query mmap latency at budget {buds[0]} {_ms(ra.total_s)} / at {buds[-1]} "
               f"{_ms(rb.total_s)}, steady state under each cap ({intervals.processes_text(rows)})",
        premises=[_binds(ra, buds[0])], machine_busy=_busy(rows),
        interval=f"noise: {intervals.processes_text(rows)}")


def _premise(b: pd.DataFrame, io: pd.DataFrame, params: Params) -> tuple[float, float, float, str]:
    """Equation 4's premise of the 1.2x target: how many queries' top-K reads fit in the prefetch budget
    (the batch step's, as in the figures and the threshold rows), over the IOPS repeats."""
    vals, src = premise(b, io, params.k)
    est, lo, hi = intervals.bootstrap_ci(vals, n_boot=N_BOOT)
    budget = prefetch_budget_s(b)
    words = (f"prefetch budget {budget * 1e3:.2f} ms (the batch step's: ANN time of the lists still to scan) "
             f"against the reads of the top {params.k} at {src} IOPS, {len(vals)} repeats")
    return est, lo, hi, words


def _cached(e: E2E, b: pd.DataFrame, io, params: Params) -> list[claims.Claim]:
    est, lo, hi, words = _premise(b, io, params)
    prem = claims.claim(STUDY, "target-eq4-premise", "premise of the 1.2x target (equation 4): the prefetch "
                           "budget covers the device time of one query's reads", "(target premise)", ours=est,
                           ci=(lo, hi), threshold=1.0, unit="queries", scale=_scale(e.prov), source="measured",
                           reason=words, machine_busy=_busy(b) or _busy(io))
    row = _ratio_claim(e, "target-within-1.2x-cached", "target: table at 2x its memory, direct + cut-concurrent "
                       "prefetcher within 1.2x of fully cached", f"{PV.RATIO_VS_CACHED}x (section 5.3)", "native",
                       "direct_prefetch", ("memory", "native", "unlimited"), threshold=1.2, direction="<=",
                       premises=[claims.premise("the prefetch budget covers one query's reads (equation 4)", est, 1.0,
                                                row="target-eq4-premise", unit="queries", what=words)])
    return [row, prem]


def _reader(io: pd.DataFrame, params: Params) -> claims.Claim:
    ok = io[io.status == "ok"]
    qd = max(params.iops_depths)
    eng = reader_engine(io, params.io_engine, qd)   # what ran, from the records
    r = ok[(ok.tool == "espn-reader") & (ok.qd == qd) & (ok.engine == eng)].iops.to_numpy()
    f = ok[(ok.tool == "fio") & (ok.qd == qd)].iops.to_numpy()
    text = f"target: O_DIRECT reader ({eng}) >= 80% of fio's 4 KiB random-read IOPS at QD {qd}"
    if not len(f):
        why = io[io.tool == "fio"].reason.dropna()
        return claims.claim(STUDY, "target-reader-vs-fio", text, "(target)", ours=None, source="not_run",
                            verdict=claims.NEEDS_TOOL,  # a missing tool, not missing hardware
                            reason=f"fio not run: {why.iloc[0] if len(why) else 'no rows'}")
    est, lo, hi = intervals.ratio_ci(r, f, n_boot=N_BOOT)
    return claims.claim(STUDY, "target-reader-vs-fio", text, "(target)", ours=est, ci=(lo, hi), threshold=0.8,
                        unit="of fio", scale="the embedding table file, same job", source="measured",
                        reason=f"median {np.median(r):,.0f} vs {np.median(f):,.0f} IOPS over {len(r)} and {len(f)} "
                               "repeats", machine_busy=_busy(io))


def _hit_rates(h: pd.DataFrame, params: Params) -> list[claims.Claim]:
    h = hitrate(h)
    prov, K = h.attrs.get("provenance", {}), params.k
    out = []
    for corpus, suffix in (("full index", ""), ("real passages only", "-real-passages")):
        etas = sorted(h[h.corpus == corpus].nprobe.unique())  # nprobe values scaling to the same lists ran once
        if not etas:
            continue
        eta = params.nprobe if params.nprobe in etas else etas[-1]
        d = h[(h.corpus == corpus) & (h.nprobe == eta) & np.isclose(h.step, 0.3) & (h.rerank_n == K)]
        if d.empty:
            continue
        est, lo, hi = intervals.bootstrap_ci(d.hit_rate.to_numpy(), stat=np.mean, n_boot=N_BOOT)
        docs = int(d.n_docs.iloc[0])
        note = (f"{K / docs:.1%} of these {docs:,} records are the top K, against {K / PV.V1_PASSAGES:.3%} of the "
                "paper's 8.8M; ") + ("most records are synthetic filler, so this rate describes the generator"
                                     if corpus == "full index" and prov.get("build", {}).get("n_filler") else
                                     f"nprobe {int(d.nprobe_used.iloc[0])} of {int(d.nlist.iloc[0])} lists")
        out.append(claims.claim(
            STUDY, f"hit-rate-over-90{suffix}", f"prefetch hit rate exceeds 90% at a 30% step ({corpus})",
            "> 90% (v1, nprobe 1000/3000)", ours=est, ci=(lo, hi), threshold=0.9, unit="of top K",
            scale=f"{docs:,} records, nprobe {eta}, top {K} vs 8.8M passages, nprobe 3000", source="measured",
            reason=f"mean over {len(d)} queries, bootstrap 95% interval; {note}", machine_busy=_busy(d),
            interval="spread over queries (the hit rate is deterministic given the index: no run-to-run noise)"))
    return out


def _mrr(q: pd.DataFrame, params: Params) -> claims.Claim:
    n, K = params.partial_rerank, params.k
    per = q[q.figure == "fig6-query"] if "figure" in q else q.iloc[:0]
    text = f"re-ranking only the top {n} keeps 99.3-99.7% of MRR@10 (64-128)"
    paper = f"{PV.MRR_KEPT[0]:.1%}-{PV.MRR_KEPT[1]:.1%}"
    if per.empty or n not in set(per.rerank_n) or K not in set(per.rerank_n):
        return claims.claim(STUDY, "mrr-kept-partial-rerank", text, paper, ours=None, source="not_run",
                            reason=f"no per-query MRR@10 at n = {n} and n = K in the quality records")
    a = per[per.rerank_n == n].set_index("query_id")["mrr@10"]
    b = per[per.rerank_n == K].set_index("query_id")["mrr@10"].reindex(a.index).to_numpy()
    a = a.to_numpy()
    est, lo, hi = intervals.bootstrap_ci(np.arange(len(a)),   # paired: resample queries
                                      stat=lambda i: a[i.astype(int)].mean() / max(b[i.astype(int)].mean(), 1e-12),
                                      n_boot=N_BOOT)
    b_ = q.attrs.get("provenance", {}).get("build", {})
    return claims.claim(STUDY, "mrr-kept-partial-rerank", text, paper, ours=est, ci=(lo, hi),
                        threshold=PV.MRR_KEPT[0], unit="of MRR@10 at K", source="measured",
                        scale=f"{len(a)} queries, encoder {b_.get('encoder')}, {b_.get('text_source') or 'text'} vs "
                              "ColBERTer on MS MARCO v1 dev",
                        reason=f"mean MRR@10 at n = {n}: {a.mean():.4f}, at K = {K}: {np.mean(b):.4f}; paired "
                               "bootstrap over queries", machine_busy=_busy(q),
                        interval="spread over queries (MRR@10 is deterministic given the build: no run-to-run noise)")


def _thresholds(b: pd.DataFrame, io: pd.DataFrame) -> list[claims.Claim]:
    t = eq4_table(b, io)
    out = []
    for mode, paper in (("exact", PV.BATCH_THRESHOLD_EXACT), ("partial", PV.BATCH_THRESHOLD_PARTIAL)):
        r = t[t.rerank == mode]
        r = r[r.bandwidth_source.str.startswith("fio")] if r.bandwidth_source.str.startswith("fio").any() else r
        cid = f"batch-threshold-{mode}"
        text = f"equation 4: ESPN on par with DRAM up to batch {paper} ({'top K' if mode == 'exact' else 'top 64'})"
        if r.empty:
            out.append(claims.claim(STUDY, cid, text, str(paper), ours=None, source="not_run",
                                    reason="no bandwidth measurement (iops records) to compute equation 4"))
            continue
        r = r.iloc[0]
        knee = r.observed_knee_batch
        knee_txt = f"first batch past {1.5}x memory: {int(knee)}" if knee == knee and knee is not None else \
            f"no knee up to batch {r.max_batch_run}"
        out.append(claims.claim(
            STUDY, cid, text, str(paper), ours=r.threshold_eq4, unit="queries", source="measured",
            verdict=claims.OUT_OF_REACH, scale=f"prefetch budget {r.prefetch_budget_ms:.2f} ms, {r.bw_MBps:.0f} MB/s "
            f"({r.bandwidth_source}) vs {PV.PREFETCH_BUDGET_MS:.0f} ms and a PCIe 3.0 SSD at 8.8M passages",
            reason=f"the threshold scales with the prefetch budget (the ANN time of the lists still to scan), which "
                   f"is {PV.PREFETCH_BUDGET_MS / max(r.prefetch_budget_ms, 1e-9):.0f}x shorter at this scale; ours from equation 4 with "
                   f"measured bandwidth and budget ({r.data_per_query_KB:.0f} KB per query); {knee_txt}",
            machine_busy=_busy(b)))
    return out


def _ssd_reads(b: pd.DataFrame, io: pd.DataFrame) -> claims.Claim:
    """ESPN's critical-path access against plain direct reads (the GDS stand-in), exact re-ranking, over
    every batch size within the paper's limit of 12, with the batch step's serial-wait prefetcher. The
    paper's premise, that the prefetch fits its budget (equation 4's threshold at least the batch), is
    checked from our equation-4 row: where it fails, the row is out of reach at this scale."""
    m = b[(b.phase == "measured") & (b.rerank == "exact") & (b.batch <= PV.BATCH_THRESHOLD_EXACT)]
    configs = []
    for B, g in m.groupby("batch"):
        est, lo, hi = intervals.ratio_ci(g[g.method.str.startswith("direct")].access_s, g[g.method == ESPN_BATCH].access_s,
                                       n_boot=N_BOOT)
        configs.append(claims.Config(f"batch {int(B)}", est, (lo, hi), busy=_busy(g)))
    text = ("the prefetcher (serial-wait, as the paper's) improves SSD-based embedding access over plain SSD reads "
            "up to 6.4x")
    if not configs:
        return claims.claim(STUDY, "speedup-vs-ssd-reads", text, _range(PV.ESPN_VS_GDS_ACCESS), ours=None, source="not_run",
                            reason="no exact batch rows up to batch 12")
    t = eq4_table(b, io) if len(io) else pd.DataFrame()
    t = t[t.rerank == "exact"] if len(t) else t
    if len(t) and t.bandwidth_source.str.startswith("fio").any():
        t = t[t.bandwidth_source.str.startswith("fio")]
    thr = float(t.threshold_eq4.iloc[0]) if len(t) else None
    smallest = int(m.batch.min())
    prem = claims.premise("the prefetch fits its budget (equation 4)", thr, smallest, ">=",
                          row="batch-threshold-exact", unit="queries",
                          what=f"our equation-4 threshold against the smallest batch run ({smallest})")
    n = int(m.groupby(["batch", "method"]).size().min())
    return claims.claim(
        STUDY, "speedup-vs-ssd-reads", text, f"{_range(PV.ESPN_VS_GDS_ACCESS)} (batches <= 12)",
        threshold=PV.ESPN_VS_GDS_ACCESS[0], configs=configs, premises=[prem],
        unit="x", source="emulated", scale=f"batches {sorted(int(x) for x in m.batch.unique())}; prefetch budget "
        f"{m.prefetch_budget_s.iloc[0] * 1e3:.2f} ms vs {PV.PREFETCH_BUDGET_MS:.0f} ms at 8.8M passages",
        reason=f"critical-path access, direct reads / ESPN with the {PREFETCHER_SERIAL} prefetcher (the batch step's: "
               f"the critical path waits for the whole prefetch; not the e2e pipeline's {PREFETCHER}), median of "
               f"{n} repeats per batch, bootstrap interval; ESPN's reads overlap a prefetch budget emulated by a "
               "sleep (as the paper simulates)", machine_busy=_busy(m),
        interval="noise within one process (repeats of the batch step)")


def _memory_saved(e: E2E) -> claims.Claim:
    """Memory of the cached solution over ESPN's, both measured the same way: the peak of each worker's
    memory cgroup (ANN index, heap and page cache; the cached run's cap is the machine's memory and never
    binds), the cached run's peak in a process over direct_prefetch's in each budget of that process. Where
    the smallest budget's cap bound in every pass, ESPN needed all of it, so its peak is the limit; otherwise
    a cap that never binds does not shape ESPN's peak, and the budgets where it never bound are pooled. One
    ratio per fresh worker process, a Student-t interval over them (:func:`t_interval`). Sizes on disk are
    not used: the paper's 5-16x is of index sizes, where the process's own heap is negligible beside a
    16.8 GB table; here it is not, and it counts on both sides."""
    text = "offloading the re-ranking table to SSD cuts the memory needed 5-16x at near-memory latency"
    buds = _budgets(e, "native", "direct_prefetch")
    small = e.rows("native", "direct_prefetch", buds[0]) if buds else e.ok.iloc[:0]
    cached = e.rows("native", "memory", "unlimited")
    if not _has_peak(small) or not _has_peak(cached):
        return claims.claim(STUDY, "memory-saved", text, _range(PV.MEMORY_REDUCTION), ours=None, source="not_run",
                            reason="needs a cgroup memory cap on the cached run and ESPN's (v1 or v2; its peak "
                                   "usage is the memory each needed)")
    exact = "budget_bound" in small and small.budget_bound.fillna(False).astype(bool).all()
    used = [buds[0]] if exact else [b for b in buds if not _bound(e.rows("native", "direct_prefetch", b))]
    left_out = [] if exact else [b for b in buds if b not in used]
    rows = pd.concat([e.rows("native", "direct_prefetch", b) for b in used]) if used else small.iloc[:0]
    mem = cached.assign(p=intervals.process_of(cached)).groupby("p").cgroup_max_usage_bytes.max().dropna()
    esp = rows.assign(p=intervals.process_of(rows)).groupby(["budget", "p"]).cgroup_max_usage_bytes.max().dropna()
    pairs = [(mem[p], v) for (_, p), v in esp.items() if p in mem.index]
    if not pairs:
        return claims.claim(STUDY, "memory-saved", text, _range(PV.MEMORY_REDUCTION), ours=None, source="not_run",
                            reason="no fresh process of the step measured both the cached run's peak and ESPN's")
    ratios = np.array([m / v for m, v in pairs])
    level = sequential.level_of(rows) if len(rows) else 0.95
    est, lo, hi = t_interval(ratios, level)
    how = (f"the cached run's peak over ESPN's in the same fresh process, one ratio per worker: "
           f"{', '.join(f'{r:.2f}' for r in ratios)}; geometric mean and Student-t {level * 100:g}% interval over "
           f"these {len(ratios)} workers (from {_procs(rows)}); " +
           (f"the cap bound in every pass at budget {buds[0]}, so ESPN's peak is its limit" if exact else
            _pool_words(used, left_out, "direct reads bypass the page cache, so a cap that does not bind leaves "
                                        "ESPN's own peak as it is")))
    few = len(ratios) < MIN_WORKERS
    bld = e.prov.get("build", {})
    ann, table = float(bld.get("ann_index_bytes", 0)), float(bld.get("table_bytes", 0))
    lat, llo, lhi = intervals.ratio_ci(small.total_s, e.totals("native", "memory", "unlimited"), n_boot=N_BOOT,
                                    level=sequential.level_of(small),
                                    groups=(small.process, intervals.process_of(cached)))
    return claims.claim(
        STUDY, "memory-saved", text, _range(PV.MEMORY_REDUCTION), ours=est, ci=(lo, hi),
        threshold=PV.MEMORY_REDUCTION[0], unit="x", source=e.source("native", buds[0]),
        scale=f"ANN index {ann / 1e6:.0f} MB + table {table / 1e6:.0f} MB vs 4.3 GB + 16.8 GB (MS MARCO v1)",
        reason=f"peak cgroup usage of the cached run (median {np.median([m for m, _ in pairs]) / 1e6:.0f} MB) over "
               f"direct_prefetch's (median {np.median([v for _, v in pairs]) / 1e6:.0f} MB), both with the ANN "
               f"index and the process's heap charged; {how}; latency at budget {buds[0]} {lat:.2f}x cached "
               f"[{llo:.2f}, {lhi:.2f}] (paper {PV.RATIO_VS_CACHED}x)" + (f"; {_few(len(ratios))}" if few else ""),
        machine_busy=_busy(rows) or _busy(cached), verdict=claims.INCONCLUSIVE if few else None,
        interval=f"noise: {len(ratios)} fresh worker processes, Student t over them")


def _has_peak(rows: pd.DataFrame) -> bool:
    return not rows.empty and "cgroup_max_usage_bytes" in rows and rows.cgroup_max_usage_bytes.notna().any()


def _bow_vs_cls(sz: pd.DataFrame) -> claims.Claim:
    """Section 3.1 / Table 3: the BOW part is 7.7x the CLS part (uncompressed). Sizes on disk are
    deterministic, so the interval is the estimate itself (zero width)."""
    text = "the single-vector (CLS) part is much smaller than the multi-vector (BOW) part: BOW 7.7x CLS, uncompressed"
    paper = f"{PV.BOW_VS_CLS:g}x (section 3.1; Table 3: 16.8 / 2.1 GB)"
    r = bow_cls(sz).set_index("series")
    if "ours: collection passages" not in r.index:
        return claims.claim(STUDY, "bow-vs-cls-size", text, paper, ours=None, source="not_run",
                            reason="no measured sizes of the collection passages in the sizes records")
    o, v1 = r.loc["ours: collection passages"], r.loc["MS MARCO v1"] if "MS MARCO v1" in r.index else None
    paper_vecs = f"{v1.bow_vectors_per_passage:.0f} (computed: 16.8 GB / 8.8M / 64 B)" if v1 is not None else "?"
    return claims.claim(
        STUDY, "bow-vs-cls-size", text, paper, ours=o.ratio, ci=(o.ratio, o.ratio), threshold=PV.BOW_VS_CLS,
        unit="x", source="measured", scale=f"{int(o.n_passages):,} collection passages vs 8.8M (MS MARCO v1)",
        reason=f"BOW bytes / CLS bytes of the collection's records in our table (CLS 128 x fp16 = 256 B per passage, "
               f"BOW 32 x fp16 = 64 B per vector, as the paper's); {o.bow_vectors_per_passage:.1f} BOW vectors per "
               f"passage against the paper's {paper_vecs}, so the ratio follows our encoder's token count, not the "
               "system; sizes on disk are deterministic (no repeats), so the interval has zero width",
        machine_busy=False, interval="exact: sizes on disk, deterministic given the build")


def worker_rows(e: E2E) -> list[claims.Claim]:
    """The rows judged over fresh worker processes (the prefetch target on each device, the memory saved):
    what the e2e step's two-stage design asks about after its first stage (:func:`.steps.e2e.decided`)."""
    return [_prefetch_target(e, ssd) for ssd in ["native", *emulated_keys(e.all)]] + [_memory_saved(e)]


def build(data: dict[str, pd.DataFrame], params: Params, profile: str) -> list[claims.Claim]:
    """The rows in the paper's order (Table 3, Figures 6-7, Table 4, Figures 8-10); targets after them."""
    e = E2E(data["e2e"])
    io, b = data["iops"], data["batch"]
    rows = [_bow_vs_cls(data["sizes"]), _mrr(data["quality"], params)]
    rows += _hit_rates(data["hitrate"], params)
    rows += _speedups(e)
    rows.append(_memory_saved(e))
    rows.append(_ssd_reads(b, io))
    rows += _thresholds(b, io)
    rows.append(_reader(io, params))
    rows += _cached(e, b, io, params)
    return rows

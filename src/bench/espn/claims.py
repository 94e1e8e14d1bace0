"""ESPN's rows of the claims ledger, from records only: the paper's headline claims (Table 3's BOW/CLS ratio,
Figure 6's MRR@10 kept by partial re-ranking, Figure 7's prefetch hit rate, section 5.3's speed-up over mmap
and memory saved, Figure 8's gain over plain SSD reads, equation 4's batch thresholds) and the study's
targets (``target-*``).

Every paper row quotes the paper's definition beside ours (:mod:`bench.espn.definitions`), declares the
hardware its mechanism needs (an SSD that serves many reads at once, established on the native disk by
:func:`bench.espn.premises.parallel`; an emulated device never meets it), and its premises with the paper's
value beside ours (:mod:`bench.espn.premises`). A timed row's interval resamples fresh processes first
(:func:`bench.core.judging.intervals.process_of`); hit rates, MRR and sizes are load-independent quantities.
Rows whose value is set by numbers taken from the paper (the vector widths, the filler's tokens per passage:
``PAPER_INPUTS`` of :mod:`.system.layout` and :mod:`.system.encoders`) name them (``fixed_by``)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.judging import claims, intervals
from ..core.measuring import sequential
from . import claims_batch, claims_quality
from . import definitions as D
from . import paper_values as PV
from . import premises as P
from .analysis import E2E, bow_cls, disk_words, e2e_ratio, emulated_keys, hitrate, ssd_words
from .evidence import (JUDGED_ON_SSD, SHRUNK, SSD, STUDY, Evidence, scale as _scale, span as _range,
                       work_words)
from .params import Params
from .system import encoders, layout

RECORDS = ("e2e", "hitrate", "iops", "batch", "quality", "sizes")
# the numbers taken from the paper that set the sizes of our build: the record sizes (and so the table) follow
# from the vector widths and the filler's tokens per passage
SIZES_FROM_PAPER = (layout.CLS_WIDTH, layout.BOW_WIDTH, layout.VECTOR_BYTES, encoders.MEAN_TOKENS)


def _ms(x) -> str:
    return f"{np.mean(x) * 1e3:.1f} ms" if len(x) else "not run"


def _suffix(ssd: str) -> str:
    """The claim-id suffix of a device key: native "", the IOPS cap "-emulated-ssd", a latency device
    "-emulated-ssd-<latency>us"."""
    if ssd == "native":
        return ""
    return "-emulated-ssd" + (f"-{ssd.split('+')[1]}" if "+" in ssd else "")


def _parallel(ev: Evidence, ssd: str, bounds_claim: bool = False) -> claims.Premise:
    """The parallel-SSD premise of device ``ssd`` (the disk, or the emulated device)."""
    return P.parallel(ev.e.probes(ssd), "disk" if ssd == "native" else "emulated SSD", bounds_claim)


def _not_run(e: E2E, ssd: str, cid: str, text: str, paper: str, **kw) -> claims.Claim:
    why = e.why_not(ssd)
    return claims.claim(STUDY, cid, text, paper, ours=None, source="not_run", unit="x", scale=_scale(e.prov),
                        reason=f"not run: {why}", verdict=claims.NEEDS_TOOL if "needs a tool we lack" in why else None,
                        **kw)


def _e2e_ratio(e: E2E, num, den) -> tuple[intervals.Estimate, pd.DataFrame, str]:
    """Ratio of mean per-query end-to-end latencies ``num`` / ``den`` ((disk, back end, budget) each), the
    paper's statistic, over the fresh processes first (:func:`bench.espn.analysis.e2e_ratio`); the rows and
    the words."""
    level = sequential.level_of(pd.concat([e.rows(*num), e.rows(*den)]))
    est, rows = e2e_ratio(e, num, den, level)
    ra, rb = e.rows(*num), e.rows(*den)
    words = (f"mean per-query latency {num[1]} {_ms(ra.total_s)} / {den[1]} {_ms(rb.total_s)} ({len(ra)} and "
             f"{len(rb)} queries in {intervals.processes_text(rows)}, steady state under the cap; bootstrap "
             f"{level * 100:g}% interval over the processes first)")
    return est, rows, words


def _speedup(ev: Evidence, ssd: str) -> claims.Claim:
    """Section 5.3: ESPN 3.1-3.9x faster than mmap end to end, at the smallest memory budget run on device
    ``ssd`` (the paper's 3.1-3.9x are Tables 4/5 at their smallest limits: 183.2 / 46.5 ms at 10 GB, 0.34 of the
    v1 table left after its index; 271.5 / 85.8 ms at 32 GB, 0.057 of v2's); the harness's target of 3x
    judged on the same interval."""
    e = ev.e
    cid, text = f"speedup-vs-mmap{_suffix(ssd)}", "ESPN (direct + cut-concurrent prefetcher) is 3.1-3.9x faster " \
                                                  "than mmap end to end"
    text += "" if ssd == "native" else f" ({ssd_words(e.all, ssd)})"
    budget = e.smallest(ssd)
    common = dict(definition=D.SPEEDUP_VS_MMAP, needs=SSD, judged_on=JUDGED_ON_SSD,
                  quantity=f"e2e mmap / ESPN{_suffix(ssd)}")
    if budget is None:
        return _not_run(e, ssd, cid, text, _range(PV.SPEEDUP_VS_MMAP), **common)
    est, rows, words = _e2e_ratio(e, (ssd, "mmap", budget), (ssd, "direct_prefetch", budget))
    prem = [_parallel(ev, ssd, bounds_claim=True), P.binds(e.rows(ssd, "mmap", budget), budget)]
    disk = f"; {disk_words(e.all)}" if ssd == "native" else ""
    return claims.claim(
        STUDY, cid, text, _range(PV.SPEEDUP_VS_MMAP), estimate=est, threshold=PV.SPEEDUP_VS_MMAP[0], unit="x",
        scale=f"budget {budget} of the table (the paper's smallest limits: 0.34 of v1's table, 0.057 of v2's); "
              f"{_scale(e.prov)}; {ev.work}", source=e.source(ssd, budget),
        reason=words + disk,
        machine_busy=claims.busy(rows), target=3.0, premises=prem, ran_on=ev.ran_on(rows),
        interval="noise: fresh processes resampled first", **common)


def _worker_units(e: E2E, ssd: str, buds: list[str]) -> tuple[list[float], list[pd.DataFrame]]:
    """One unit per fresh worker process (a budget in a process of the step) that ran both back ends: the
    ratio of their median per-query latencies in it."""
    units, frames = [], []
    for bud in buds:
        a, b = e.rows(ssd, "direct_prefetch", bud), e.rows(ssd, "direct", bud)
        frames += [a, b]
        for proc in sorted(set(a.process) & set(b.process)):
            units.append(float(a[a.process == proc].total_s.median() / b[b.process == proc].total_s.median()))
    return units, frames


def _pool(e: E2E, ssd: str) -> tuple[list[str], list[str]]:
    """The budgets the prefetch target pools (both back ends read with O_DIRECT, so where their caps never
    bound the budget does not touch them), and those left out (a cap bound there)."""
    buds = _budgets(e, ssd, "direct_prefetch", "direct")
    free = [b for b in buds if not (_bound(e.rows(ssd, "direct_prefetch", b)) or _bound(e.rows(ssd, "direct", b)))]
    half = e.half(ssd)
    pool = free if half in free or (half is None and free) else [half] if half in buds else []
    return pool, [b for b in buds if b not in pool]


def _prefetch_target(ev: Evidence, ssd: str) -> claims.Claim:
    """The harness's target: direct + the cut-concurrent prefetcher no slower than direct reads. One unit per
    fresh worker process that ran both; the geometric mean and a Student-t interval over the workers. The
    prefetcher's reads run beside the critical path's, so the row rests on the parallel-SSD premise and
    needs such an SSD as its sibling ``speedup-vs-mmap`` does."""
    e = ev.e
    cid = f"target-prefetch-not-slower-than-direct{_suffix(ssd)}"
    text = ("target: direct + cut-concurrent prefetcher no slower than direct I/O without prefetching"
            + ("" if ssd == "native" else f" ({ssd_words(e.all, ssd)})"))
    used, left_out = _pool(e, ssd)
    units, frames = _worker_units(e, ssd, used)
    if not units:
        return _not_run(e, ssd, cid, text, "(target)", needs=SSD)
    rows = pd.concat(frames)
    est = intervals.t_interval(units, level=sequential.level_of(rows), log=True)
    reason = (f"median per-query latency direct_prefetch / direct within each fresh worker process (one per budget "
              f"and process of the step): {', '.join(f'{u:.3f}' for u in units)}; geometric mean and Student-t "
              f"interval over these {len(units)} workers; "
              + (f"pooled over the budgets where no cap bound ({', '.join(used)})" if used != [e.half(ssd)] or
                 not left_out else f"budget {used[0]} alone (a cap bound at {', '.join(left_out)})")
              + (f"; {disk_words(e.all)}" if ssd == "native" else ""))
    return claims.claim(
        STUDY, cid, text, "(target)", estimate=est, threshold=1.0, direction="<=", unit="x",
        scale=f"budgets {', '.join(used)} of the table; {_scale(e.prov)}; {ev.work}", source=e.source(ssd, used[0]),
        reason=reason, machine_busy=claims.busy(rows), premises=[_parallel(ev, ssd)], needs=SSD,
        ran_on=ev.ran_on(rows), judged_on=JUDGED_ON_SSD, quantity=f"e2e ESPN / direct{_suffix(ssd)}",
        interval="noise: a Student t over fresh worker processes")


def _bound(rows: pd.DataFrame) -> bool:
    """Whether the cap bound in any of these rows' passes (budget_bound)."""
    return bool(rows.budget_bound.fillna(False).astype(bool).any()) if "budget_bound" in rows else False


def _budgets(e: E2E, ssd: str, *kinds: str) -> list[str]:
    """The capped budgets on ``ssd`` where every one of ``kinds`` ran, smallest first."""
    o = e.ok[(e.ok.ssd == ssd) & (e.ok.budget != "unlimited")]
    have = [set(o[o.backend == k].budget) for k in kinds]
    return sorted(set.intersection(*have), key=float) if have else []


def _speedups(ev: Evidence) -> list[claims.Claim]:
    out = []
    for ssd in ["native", *emulated_keys(ev.e.all)]:
        out += [_speedup(ev, ssd), _prefetch_target(ev, ssd)]
    out.append(_budget_sweep(ev))
    return out


def _budget_sweep(ev: Evidence) -> claims.Claim:
    """Table 4's trend: mmap's latency rises as memory shrinks (paper 183 -> 53 ms from the smallest to the
    largest limit): mmap's mean latency at the smallest budget over the largest, native disk."""
    e = ev.e
    cid, text = "target-mmap-slower-with-less-memory", "target: mmap's latency rises as its memory budget shrinks"
    paper = "Table 4: 183 -> 53 ms (3.5x) from the smallest to the largest limit"
    buds = sorted((x for x in e.ok[(e.ok.ssd == "native") & (e.ok.backend == "mmap")].budget.unique()
                   if x != "unlimited"), key=float)
    if len(buds) < 2:
        return claims.claim(STUDY, cid, text, paper, ours=None, source="not_run",
                            reason="fewer than two memory budgets ran with mmap")
    est, rows, words = _e2e_ratio(e, ("native", "mmap", buds[0]), ("native", "mmap", buds[-1]))
    return claims.claim(
        STUDY, cid, text, paper, estimate=est, threshold=1.0, unit="x", scale=f"{_scale(e.prov)}; {ev.work}",
        source=e.source("native", buds[0]), reason=f"budget {buds[0]} over budget {buds[-1]}: {words}",
        premises=[P.binds(e.rows("native", "mmap", buds[0]), buds[0])], machine_busy=claims.busy(rows),
        interval="noise: fresh processes resampled first", quantity="e2e mmap smallest / largest budget")


def _sizes_of(sz: pd.DataFrame) -> tuple[float, float] | None:
    """(ANN index bytes, table bytes) of every record, from the sizes records."""
    s = sz[(sz.source == "measured") & (sz.scope == "all records")].set_index("part").bytes
    return (float(s["ann_index"]), float(s["table_file"])) if {"ann_index", "table_file"} <= set(s.index) else None


def _memory_saved(ev: Evidence, sz: pd.DataFrame) -> claims.Claim:
    """Section 5.3: offloading the BOW table cuts the index memory 5-16x (depending on the ANN index's
    quantisation): (ANN index + table) / ANN index, the quantity the paper defines, from our build's sizes.
    Exact given the build; the sizes follow from the paper's vector widths and the filler's tokens per passage,
    so they are named (``fixed_by``). The paper states the saving with the table on an NVMe SSD at near-cached
    latency (section 5.3, "1.02x"), so the row needs that SSD; ESPN's latency beside the cached run's is in the
    reason (the 1.2x target judges it)."""
    text = "offloading the re-ranking table to SSD cuts the index memory needed 5-16x"
    common = dict(definition=D.MEMORY_SAVED, needs=SSD, judged_on=JUDGED_ON_SSD, quantity="index memory cached / ESPN")
    got = _sizes_of(sz)
    if got is None:
        return claims.claim(STUDY, "memory-saved", text, _range(PV.MEMORY_REDUCTION), ours=None, source="not_run",
                            reason="no ANN index and table sizes in the sizes records", **common)
    ann, table = got
    ours = (ann + table) / ann
    return claims.claim(
        STUDY, "memory-saved", text, _range(PV.MEMORY_REDUCTION), ours=ours, ci=(ours, ours),
        band=PV.MEMORY_REDUCTION, unit="x", source="measured", fixed_by=SIZES_FROM_PAPER,
        scale=f"ANN index {ann / 1e6:.1f} MB + table {table / 1e6:.1f} MB vs 4.3 GB + 16.8 GB (v1: 4.9x) and "
              "17.5 GB + 255.4 GB (v2: 15.6x)",
        reason=f"(ANN index {ann / 1e6:.1f} MB + BOW table {table / 1e6:.1f} MB) / ANN index: ESPN keeps "
               f"{ann / (ann + table):.1%} of the indices in memory (paper 6-19%); {_cached_words(ev.e)}",
        interval="exact: sizes of the build's files", quality="a size, exact given the build",
        ran_on=ev.ran_on(ev.e.ok), **common)


def _cached_words(e: E2E) -> str:
    half = e.half("native")
    a, b = e.rows("native", "direct_prefetch", half), e.rows("native", "memory", "unlimited")
    if a.empty or b.empty:
        return "ESPN's latency beside the cached run's: not run"
    return (f"at budget {half} ESPN's mean latency is {a.total_s.mean() / b.total_s.mean():.2f}x the cached run's "
            f"(paper {PV.RATIO_VS_CACHED}x; see target-within-1.2x-cached)")


def _bow_vs_cls(sz: pd.DataFrame) -> claims.Claim:
    """Section 3.1 / Table 3: the BOW part is 7.7x the CLS part (uncompressed). BOW over CLS bytes is the BOW
    vectors per passage times the paper's BOW width over its CLS width: set by the paper's widths, so a
    sanity check (``fixed_by``), exact given the build."""
    text = "the single-vector (CLS) part is much smaller than the multi-vector (BOW) part: BOW 7.7x CLS, uncompressed"
    paper = f"{PV.BOW_VS_CLS:g}x (section 3.1; Table 3: 16.8 / 2.1 GB)"
    common = dict(definition=D.BOW_VS_CLS, needs=(), quantity="BOW / CLS bytes")
    r = bow_cls(sz).set_index("series")
    if "ours: collection passages" not in r.index:
        return claims.claim(STUDY, "bow-vs-cls-size", text, paper, ours=None, source="not_run",
                            reason="no measured sizes of the collection passages in the sizes records", **common)
    o, v1 = r.loc["ours: collection passages"], r.loc["MS MARCO v1"] if "MS MARCO v1" in r.index else None
    paper_vecs = f"{v1.bow_vectors_per_passage:.0f} (computed: 16.8 GB / 8.8M / 64 B)" if v1 is not None else "?"
    return claims.claim(
        STUDY, "bow-vs-cls-size", text, paper, ours=o.ratio, ci=(o.ratio, o.ratio), threshold=PV.BOW_VS_CLS,
        unit="x", source="measured", scale=f"{int(o.n_passages):,} collection passages vs 8.8M (MS MARCO v1)",
        fixed_by=(layout.CLS_WIDTH, layout.BOW_WIDTH),
        reason=f"BOW bytes / CLS bytes of the collection's records in our table: {o.bow_vectors_per_passage:.1f} BOW "
               f"vectors per passage against the paper's {paper_vecs}, times the BOW width over the CLS width",
        interval="exact: sizes on disk, deterministic given the build", quality="a size, exact given the build",
        **common)


def worker_rows(e: E2E) -> list[claims.Claim]:
    """The rows judged over fresh worker processes (the prefetch target on each device): what the e2e step's
    two-stage design asks about after its first stage (:func:`.steps.e2e.decided`)."""
    ev = Evidence(e, P.parallel(e.probes("native"), "disk"))
    return [_prefetch_target(ev, ssd) for ssd in ["native", *emulated_keys(e.all)]]


def build(data: dict[str, pd.DataFrame], params: Params, profile: str) -> list[claims.Claim]:
    """The rows in the paper's order (Table 3, Figures 6-7, Table 4, Figures 8-10); targets after them."""
    e = E2E(data["e2e"])
    ev = Evidence(e, P.parallel(e.probes("native"), "disk"), work_words(e, params.e2e_queries, profile),
                  SHRUNK.get(profile, ""))
    io, b = data["iops"], data["batch"]
    rows = [_bow_vs_cls(data["sizes"]), claims_quality.mrr(data["quality"], params)]
    rows += claims_quality.hit_rates(hitrate(data["hitrate"]), params)
    rows += _speedups(ev)
    rows.append(_memory_saved(ev, data["sizes"]))
    rows.append(claims_batch.ssd_reads(ev, b, io))
    rows += claims_batch.thresholds(ev, b, io)
    rows.append(claims_batch.reader(io, params))
    rows += _cached(ev, b, io, params, data["sizes"])
    return rows


def _cached(ev: Evidence, b: pd.DataFrame, io, params: Params, sz: pd.DataFrame) -> list[claims.Claim]:
    """The 1.2x target (section 5.3's 1.02x of the cached solution, the table at 2x its memory) and its
    equation-4 premise, both over fresh processes; the index-share premise (section 5.3: 6-19%) exact."""
    prem_row, est, words = claims_batch.eq4_premise(ev, b, io, params)
    e = ev.e
    half = e.half("native")
    cid, text = "target-within-1.2x-cached", ("target: table at 2x its memory, direct + cut-concurrent prefetcher "
                                             "within 1.2x of fully cached")
    sizes = _sizes_of(sz)
    prem = [P.prefetch_fits(est, words)] + ([P.index_share(*sizes)] if sizes else []) + [ev.disk]
    if half is None:
        return [_not_run(e, "native", cid, text, f"{PV.RATIO_VS_CACHED}x (section 5.3)", needs=SSD), prem_row]
    r, rows, w = _e2e_ratio(e, ("native", "direct_prefetch", half), ("native", "memory", "unlimited"))
    row = claims.claim(
        STUDY, cid, text, f"{PV.RATIO_VS_CACHED}x (section 5.3)", estimate=r, threshold=1.2, direction="<=",
        unit="x", scale=f"budget {half} of the table; {_scale(e.prov)}; {ev.work}", source=e.source("native", half),
        reason=f"{w}; {disk_words(e.all)}", machine_busy=claims.busy(rows), premises=prem, needs=SSD,
        ran_on=ev.ran_on(rows), judged_on=JUDGED_ON_SSD, quantity="e2e ESPN / cached",
        interval="noise: fresh processes resampled first")
    return [row, prem_row]


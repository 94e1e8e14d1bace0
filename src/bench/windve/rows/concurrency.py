"""WindVE's ledger rows on the max concurrency (Section V-B): Tables I/II's gain per pair and SLO, the 1.22x
throughput and 18.6% cost saving (Section III-B), a looser SLO giving a larger gain (equation 23) and a
smaller device gap giving a larger gain (inequality 19).

Each needs the accelerator its pair names (a GPU for Tesla V100 + Xeon, an NPU for Atlas + Kunpeng). Where
the accelerator was emulated, its law is the paper's ratios times this CPU's fit, so the value is set by
those inputs (``fixed_by``: a sanity check, never judged). On a GPU run the V100 cells are judged under the
paper's premises, each tested with an interval over fresh service processes: the accelerator-to-CPU speed
ratio against the paper's pair (inequality 19 bounds the gain by it) and the accelerator keeping its depth
beside the CPU (Section V-A5)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from bench.core.judging import claims, fidelity, intervals
from bench.core.judging.fidelity import Definition

from .. import analysis, gains
from .. import paper_values as PV
from .builder import GPU_JUDGE, NPU_JUDGE, Builder

MAXCONC = ("\"The maximum concurrency of an inference service is the maximum number of concurrent queries the system "
           "can process given the SLOs\" (III-A); \"Input queries are sent concurrently and organized in batches. A "
           "new batch of queries will be sent only after the responses of previous batches have been received\" "
           "(V-A3); e2e latency within 1 s and 2 s (V-A6)")
OURS_MAXCONC = ("fine-tuned max concurrency in closed-loop rounds (all C queries sent at once, the next round when all "
                "answered; a configuration meets the SLO when the median over rounds of each round's slowest "
                "end-to-end latency does)")
GAIN = Definition(f"conc. improvement = WindVE conc. / FlagEmbedding conc. - 1, where {MAXCONC}", "Tables I/II, III-A, V-A",
                  f"{OURS_MAXCONC}, with offload over the accelerator alone, minus 1")
THROUGHPUT = Definition("\"if we use the average query numbers within a period of time, the system improves the average "
                        "throughput up to C_CPU/C_NPU x 100%\"; \"1.22x throughput under the same hardware\"",
                        "Section III-B, abstract", "(A + C) / A from the fine-tuned max concurrencies (A the accelerator "
                        "alone, C what offload adds), as the paper derives it from its Table I")
COST = Definition("\"the system concurrency can be enlarged from C_NPU to C_NPU + C_CPU, hence saving C_CPU / (C_CPU + "
                  "C_NPU) x 100% of deployment cost\"; \"reduce 18.6% deployment cost when using maximum concurrent "
                  "query numbers to deploy\"", "Sections III-B, V-B", "C / (A + C) from the fine-tuned max concurrencies")
LOOSER = Definition("\"WindVE, when operating under a more lenient SLO, yields better performance benefits\" (equation 23); "
                    "\"as the time constraint relaxes from 1 second to 2 seconds, the concurrency improvement increases\"",
                    "Sections IV-B3, V-B", "gain at the looser SLO minus at the tighter, paired by fresh service process, "
                    "worst pair")
GAP = Definition("\"a smaller performance gap between NPUs/GPUs and CPUs allows better concurrency improvement\" "
                 "(inequality 19)", "Sections IV-B3, V-B", "gain of the V100 + Xeon pair minus the Atlas + Kunpeng pair's, "
                 "paired by fresh service process, worst SLO")


def needs(pair: str) -> tuple[tuple[str, ...], str]:
    return (("npu",), NPU_JUDGE) if pair == "atlas-kunpeng" else (("gpu",), GPU_JUDGE)


def search_of(r, step: int) -> claims.Search | None:
    """The cell's fine-tuning searches as one :class:`claims.Search`: None when every one was bracketed."""
    if r.bracketed:
        return None
    return claims.Search(float(r.offload), None, False, cut_off="in some search the run limit (fine_tune_max_runs) "
                         "came before a failing level next to the best passing one")


def speed_premise(b: Builder, pair: str) -> list[claims.Premise]:
    """The accelerator-to-CPU speed ratio against the paper's pair (inequality 19: the gain stays below
    alpha_acc / alpha_CPU), with an interval over fresh service processes; only where the accelerator was
    measured (an emulated one has the paper's ratio by construction)."""
    if b.emulated:
        return []
    r = analysis.coefficient_ratios(b.prof, pair)
    e = intervals.t_interval(r, log=True) if r.size else intervals.Estimate(np.nan, np.nan, np.nan, 0)
    return [claims.premise_interval(
        "the accelerator-to-CPU speed ratio of the paper's pair", e, PV.ALPHA_RATIO[pair], ">=", kind="hardware",
        what="alpha_acc / alpha_CPU of our fits (geometric mean)", row="fig4",
        paper=f"alpha_acc / alpha_CPU = {PV.ALPHA_RATIO[pair]:g} for {' / '.join(PV.PAIR_NAMES[pair])} (Section V-B); "
              "inequality 19 bounds the gain by it")]


def depth_premise(b: Builder, pair: str, slo: float) -> claims.Premise:
    """Section V-A5: the accelerator keeps its max concurrency with the CPU beside it (within one step of
    the fine-tuning search, which cannot place a depth finer)."""
    return claims.premise_interval(
        "the accelerator keeps its depth beside the CPU", gains.drop(b.pp, pair, slo), -b.p.fine_tune_step, ">=",
        what="the accelerator's fine-tuned depth with offload minus alone (queries)", row=f"tables-i-ii-{pair}",
        paper="\"we ensured the NPU's maximum concurrency when utilizing CPU offloading\" (V-A5); Table I keeps "
              "it: 44 + 8, 96 + 22")


def _both_tables(row: claims.Claim, bge: float, jina: float) -> None:
    """One rule for both papers' gains of a cell (our MiniLM stands for neither bge nor jina): reproduced only
    if the interval clears both (core judged it against the larger), not reproduced only if it lies below both;
    between them, inconclusive."""
    lo, hi = row.ci_low, row.ci_high
    if row.verdict == claims.NOT_REPRODUCED and hi is not None and hi >= min(bge, jina):
        row.verdict = claims.INCONCLUSIVE
        row.reason += (f"; but the interval reaches Table {'I' if bge < jina else 'II'}'s smaller gain "
                       f"{min(bge, jina):.3g}: one rule for both papers' gains (reproduced only above both, not "
                       "reproduced only below both), so inconclusive")


def _cell(b: Builder, g: pd.DataFrame, pair: str, slo: float) -> None:
    rank = analysis.rank(slo, b.slos)
    bge, jina = PV.TABLE_I_GAIN[(pair, rank)], PV.TABLE_II_GAIN[(pair, rank)]
    cid = f"tables-i-ii-{pair}-{rank}s"
    text = (f"offload gain, {PV.PAIR_NAMES[pair][0]} + {PV.PAIR_NAMES[pair][1]}, {rank} s (Table I bge, Table II jina), "
            f"judged against both: bge >= {bge:.3g} and jina >= {jina:.3g}")
    need, judged = needs(pair)
    kw = dict(threshold=max(bge, jina), threshold_also=min(bge, jina), unit="gain", needs=need, judged_on=judged,
              definition=GAIN, quantity="offload gain (fine-tuned max concurrency)")
    r = g[(g.pair == pair) & (g.slo_s == slo)]
    if r.empty:
        pred = {(x.pair, x.slo_s): x.gain for x in analysis.predicted_gains(b.prof).itertuples()}
        if (pair, slo) not in pred:
            b.add(cid, text, f"bge {bge:.1%} / jina {jina:.1%}", ours=None, source="not_run", **kw,
                  reason=f"not run: the claim needs {fidelity.words(need)} ({PV.PAIR_NAMES[pair][0]}); "
                         + ("this profile neither profiled nor fine-tuned its emulated stand-in" if b.emulated else
                            f"this run measured {b.acc_name}") + f"; judged on {judged}")
            return
        b.add(cid, text, f"bge {bge:.1%} / jina {jina:.1%}", ours=pred[(pair, slo)], source=b.prof_src, **kw,
              fixed_by=b.fixed([pair]), ran_on=b.ran_on(b.prof[b.prof.pair == pair]),
              reason=f"not fine-tuned in this profile: the CPU's added concurrency over the accelerator's, predicted "
                     f"by the regression on the profiles at {slo:g} s (no interval)")
        return
    r = r.iloc[0]
    mc = b.serv[(b.serv.kind == "maxconc") & (b.serv.pair == pair) & (b.serv.slo_s == slo)]
    target = b.p.targets.offload_gain if pair == "v100-xeon" and slo == b.slos[-1] else None
    row = b.add(cid, text, f"bge {bge:.1%} / jina {jina:.1%}", estimate=gains.estimate(r), source=b.src,
                search=search_of(r, b.p.fine_tune_step), fixed_by=b.fixed([pair]), ran_on=b.ran_on(mc),
                premises=[*speed_premise(b, pair), depth_premise(b, pair, slo)], target=target, **kw,
                reason=f"fine-tuned max concurrency {r.acc_only:g} -> {r.offload:g} at {slo:g} s (CPU adds "
                       f"{r.cpu_part:g}; medians over fresh service processes); per-process gains {r.process_gains} "
                       f"({int(r.searches)} searches); interval: the Student-t 95% ends over the processes of each "
                       f"one's lowest gain (the level every round met) and highest (any round met){r.ci_note}")
    _both_tables(row, bge, jina)


def table_cells(b: Builder) -> None:
    """Tables I (bge) and II (jina): one MiniLM measurement per (pair, SLO) is one row carrying both papers'
    gains as printed (the threshold column the larger, the bar for reproduced)."""
    g = b.gt
    for pair in ("v100-xeon", "atlas-kunpeng"):
        for slo in b.slos[:2]:
            _cell(b, g, pair, slo)


def headline(b: Builder) -> None:
    """The 1.22x throughput and the 18.6% cost saving: the V100 + Xeon cell at the loosest SLO, through the
    same function as the utilisation and cost figure (:func:`gains.deployment`)."""
    loose = b.slos[-1]
    g = b.gt
    dep = gains.deployment(g)
    dep = dep[(dep.pair == "v100-xeon") & (dep.slo_s == loose)]
    kw = dict(needs=("gpu",), judged_on=GPU_JUDGE, source=b.src, fixed_by=b.fixed(["v100-xeon"]))
    if dep.empty:
        for cid, text, d in (("throughput-1.22x", "1.22x throughput on the same hardware", THROUGHPUT),
                             ("cost-saving-18.6", "18.6% deployment cost saved (eq. 6)", COST)):
            b.add(cid, text, "", ours=None, **{**kw, "source": "not_run"}, definition=d, threshold=0,
                  reason="the V100 + Xeon pair is not among this profile's serving runs")
        return
    d = dep.iloc[0]
    r = g[(g.pair == "v100-xeon") & (g.slo_s == loose)].iloc[0]
    mc = b.serv[(b.serv.kind == "maxconc") & (b.serv.pair == "v100-xeon") & (b.serv.slo_s == loose)]
    kw.update(search=search_of(r, b.p.fine_tune_step), ran_on=b.ran_on(mc),
              premises=[*speed_premise(b, "v100-xeon"), depth_premise(b, "v100-xeon", loose)])
    mine = b.pp[(b.pp.pair == "v100-xeon") & (b.pp.slo_s == loose)] if not b.pp.empty else b.pp
    each = ", ".join(f"{o:g}/{a:g}" for a, o in zip(mine.acc_only, mine.offload)) if len(mine) else "none"
    inputs = (f"computed from the gain g, the median over {int(d.clusters)} fresh service processes of each one's "
              f"offload / accelerator alone - 1 at {loose:g} s (A + C over A per process: {each}; gains "
              f"{r.process_gains}): median g {d.save_avg:.3g}; the medians A = {d.c_acc:g} (the accelerator alone) "
              f"and C = {d.c_cpu:g} (what offload adds) are shown, not what the value is computed from; the "
              f"interval from the gain's (Tables I/II row); the same numbers as the utilisation and cost figure, "
              f"panel (b){d.ci_note}")
    clusters = int(d.clusters)
    b.add("throughput-1.22x", "1.22x throughput on the same hardware (deploying for average load)", "1.22x",
          estimate=intervals.Estimate(d.throughput_x, d.throughput_x_low, d.throughput_x_high, clusters),
          threshold=PV.THROUGHPUT_X, unit="x", definition=THROUGHPUT, quantity="throughput from concurrency", **kw,
          reason="1 + g, i.e. (A + C) / A per process and 1 + eq. 5's saving; " + inputs)
    b.add("cost-saving-18.6", "18.6% deployment cost saved when deploying for peak concurrency (eq. 6)", "18.6%",
          estimate=intervals.Estimate(d.save_peak, d.save_peak_low, d.save_peak_high, clusters),
          threshold=PV.COST_SAVING_MAX, unit="share", definition=COST, quantity="cost saving (eq. 6)", **kw,
          reason="eq. 6: g / (1 + g), i.e. C / (A + C) per process; " + inputs)


def trends(b: Builder) -> None:
    """Equation 23 (a looser SLO, a larger gain) over every pair, and inequality 19 (a smaller gap, a larger
    gain) over every SLO: each needs both pairs' hardware (a GPU and an NPU)."""
    g = b.gt
    kw = dict(needs=("gpu", "npu"), judged_on=f"{GPU_JUDGE}, and {NPU_JUDGE}", threshold=0, unit="gain difference")
    pairs = sorted(set(g.pair)) if not g.empty else []
    if len(b.slos) >= 2 and pairs:
        configs = [claims.Config.of(f"{p} (1 s vs 2 s as ours stand for them)",
                                    gains.difference(b.pp, (p, b.slos[-1]), (p, b.slos[0]))) for p in pairs]
        b.add("looser-slo-larger-gain", "a looser SLO gives a larger concurrency gain (eq. 23)", "18.2% -> 22.3%",
              configs=configs, source=b.src, fixed_by=b.fixed(pairs), definition=LOOSER, **kw,
              ran_on=b.ran_on(b.serv[b.serv.kind == "maxconc"]) if pairs == ["v100-xeon"] else frozenset(),
              reason="gain(loose) - gain(tight) per pair, paired by fresh service process (Student-t 95% interval "
                     "over the processes)")
    text = "a smaller accelerator-CPU gap (alpha ratio 0.21 vs 0.12) gives a larger gain"
    if {"v100-xeon", "atlas-kunpeng"} <= set(pairs):
        configs = [claims.Config.of(f"SLO {s:g} s", gains.difference(b.pp, ("v100-xeon", s), ("atlas-kunpeng", s)))
                   for s in b.slos]
        b.add("smaller-gap-larger-gain", text, "22.3% vs 4.7% (2 s)", configs=configs, source=b.src,
              fixed_by=b.fixed(pairs), definition=GAP, **kw,
              reason="gain(V100 pair) - gain(Atlas pair) per SLO, paired by fresh service process")
    else:
        b.add("smaller-gap-larger-gain", text, "22.3% vs 4.7% (2 s)", ours=None, source="not_run", definition=GAP,
              **kw, reason=f"not run: needs two accelerator-CPU pairs, a GPU and an NPU ({fidelity.words(kw['needs'])}); "
                           f"this profile fine-tuned {', '.join(pairs) or 'none'}")

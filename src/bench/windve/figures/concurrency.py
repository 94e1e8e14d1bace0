"""Tables I-III of WindVE (Section V-B): the fine-tuned max concurrency without and with CPU offload and
the gain against the paper's (Tables I/II), and the queue depths by regression, stress test and
fine-tuning with the profiling runs each needed (Table III)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from matplotlib.ticker import MaxNLocator

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis, depths, gains
from .. import paper_values as PV
from .labels import H, JINA_STYLE, pair_label, slos_text, source_words, whiskers


@figure("tables_1_2", records=("serving", "profile"),
                title="Tables I/II: max concurrency without and with CPU offload",
        claims=("tables-i-ii-*", "looser-slo-larger-gain", "smaller-gap-larger-gain", "target-acc-not-dropping"))
def tables_1_2(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    serv, prof = data["serving"], data["profile"]
    gt, pred = gains.gains(serv), analysis.predicted_gains(prof)
    src, acc_words = source_words(prof, serv)
    acc_name = analysis.name(prof)
    done = set(zip(gt.pair, gt.slo_s)) if not gt.empty else set()
    extra = pred[[(p, s) not in done for p, s in zip(pred.pair, pred.slo_s)]]
    fig, (a, b) = plotting.start(2, w=5.2, h=H)
    if gt.empty:
        plotting.not_run(a, "no max-concurrency rows")
        plotting.not_run(b, "no max-concurrency rows")
        return plotting.save(fig, out_png, "Tables I/II: not run.")
    slos = sorted(set(gt.slo_s) | set(extra.slo_s))

    def tick(p, s):   # what ran (emulated or the measured GPU), our SLO and the paper's it stands for
        return f"{pair_label(p, src, acc_name)}\nSLO {s:g} s\n(paper {analysis.rank(s, slos)} s)"

    labels = [tick(p, s) for p, s in zip(gt.pair, gt.slo_s)]
    x = np.arange(len(gt))
    col = plotting.colors(["accelerator only", "accelerator (with offload)", "CPU offload", "ours: gain with offload"])
    a.bar(x - 0.2, gt.acc_only, 0.38, color=col["accelerator only"], label=plotting.label_source("accelerator only", src))
    a.bar(x + 0.2, gt.acc_part, 0.38, color=col["accelerator (with offload)"],
          label=plotting.label_source("accelerator (with offload)", src))
    a.bar(x + 0.2, gt.cpu_part, 0.38, bottom=gt.acc_part, color=col["CPU offload"], label="CPU offload (measured)")
    a.set(xticks=x, xticklabels=labels, ylabel="max concurrency (queries)", title="(a) ours: MiniLM, 75-token queries")
    gcol = col["ours: gain with offload"]
    b.bar(x, gt.gain * 100, 0.5, color=gcol, label=plotting.label_source("ours: gain with offload", src))
    whiskers(b, x, gt.gain * 100, gt.gain_low * 100, gt.gain_high * 100)
    b.axhline(0, color="0.5", lw=0.8)
    xe = np.arange(len(gt), len(gt) + len(extra))
    if len(extra):   # no legend entry without a bar
        b.bar(xe, extra.gain * 100, 0.5, fill=False, edgecolor=gcol, hatch="//",
              label="ours: regression-predicted (not fine-tuned here)")
    labels = labels + [tick(p, s) for p, s in zip(extra.pair, extra.slo_s)]
    x = np.arange(len(labels))
    gt = pd.concat([gt, extra], ignore_index=True)
    for i, r in gt.iterrows():
        key = (r.pair, analysis.rank(r.slo_s, slos))
        b.plot(i - 0.12, PV.TABLE_I_GAIN[key] * 100, **{**plotting.PAPER_STYLE, "label": "paper Table I (bge)"})
        b.plot(i + 0.12, PV.TABLE_II_GAIN[key] * 100, **{**JINA_STYLE, "label": "paper Table II (jina)"})
    b.set(xticks=x, xticklabels=labels, ylabel="concurrency gain (%)", title="(b) gain from offload: ours vs paper")
    plotting.legend_below(fig, ncol=3)
    n = int(gt.clusters.max()) if "clusters" in gt and gt.clusters.notna().any() else 1
    cap = ("Tables I/II. The paper's quantity: \"the maximum number of concurrent queries the system can process given "
           "the SLOs\" (III-A), queries \"sent concurrently and organized in batches\", the next batch only after the "
           "last answered (V-A3), and the conc. improvement WindVE over the baseline. (a) Ours: fine-tuned max "
           "concurrency (closed loop, the median over rounds of each round's slowest query within the SLO) with the "
           f"accelerator alone and with CPU offload (Algorithm 1), medians over {n} fresh service processes. "
           f"{acc_words} The CPU instance is measured. Our SLOs {slos_text(slos)} s stand for the paper's 1 s and 2 s. "
           "(b) Gain (offload / accelerator only - 1) with the ledger row's interval: Student-t 95% over the fresh "
           "service processes, widened to their round bounds (every round met .. any round met) where each has them; "
           f"'no interval' written on a bar without one; {_fixed_words(src)}"
           + ("hatched: pairs not fine-tuned in this profile, gain (CPU's added concurrency over the accelerator's) predicted by the regression on "
              "measured profiles (no interval); " if len(extra) else "")
           + "the x labels give the paper's SLO each of ours stands for; paper values (bge Table I, jina Table II) drawn as markers.")
    return plotting.save(fig, out_png, cap)


def _fixed_words(src: str) -> str:
    """What the ledger makes of these bars where the accelerator was emulated: a sanity check, never judged."""
    return ("the accelerator's law is the paper's ratios times this CPU's fit, so these gains are set by the paper's "
            "own numbers: the ledger reads them as sanity checks, never judged; ") if src == "emulated" else ""


def _t3_labels(keys, src: str, acc_name: str) -> list[str]:
    """Table III's tick labels: the emulated accelerator says so; the measured GPU by name."""
    def label(p, dev, s):
        who = ("CPU" if dev == "cpu" else f"~{PV.PAIR_NAMES[p][0]}\n[emulated]" if src == "emulated"
               else acc_name or "GPU")
        return f"{who}\n{s:g} s"
    return [label(p, dev, s) for p, dev, s in keys]


def _t3_depths(a, b, dr: pd.DataFrame, keys, slos, col: dict) -> set:
    """(a) each method's depth (median over fresh service processes, whiskers their lowest .. highest) and (b)
    its ratio to the stress test's, the paper's as markers; the pairs whose fine-tuned slots are empty."""
    x = np.arange(len(keys))
    missing = set()

    def cell(m):
        return [dr[(dr.pair == p) & (dr.dev == dev) & (dr.slo_s == s) & (dr.method == m)] for p, dev, s in keys]
    stress = [g.depth.max() for g in cell("stress")]
    for j, m in enumerate(("regression", "stress", "fine-tuned")):
        g = cell(m)
        vals = np.array([c.depth.max() for c in g], float)
        a.bar(x + (j - 1) * 0.27, vals, 0.27, color=col[m], label=m)
        if m != "fine-tuned":   # the lowest .. highest over the fresh service processes
            lo, hi = (np.array([c[k].max() for c in g], float) for k in ("depth_low", "depth_high"))
            ok = np.isfinite(lo) & np.isfinite(vals)
            a.errorbar((x + (j - 1) * 0.27)[ok], vals[ok], yerr=[vals[ok] - lo[ok], hi[ok] - vals[ok]], fmt="none",
                       ecolor="0.3", capsize=2)
            if m == "stress":
                continue
        else:   # empty slots say so, and why (the paper's star in (b) would stand alone)
            missing |= {p for (p, _, _), v in zip(keys, vals) if not np.isfinite(v)}
        off = -0.2 if m == "regression" else 0.2
        b.bar(x + off, [v / st if st else np.nan for v, st in zip(vals, stress)], 0.38, color=col[m])
        b.plot(x + off, [PV.TABLE_III[(p, dev, analysis.rank(s, slos))][m] /
                         PV.TABLE_III[(p, dev, analysis.rank(s, slos))]["stress"] for p, dev, s in keys],
               **{**plotting.PAPER_STYLE, "label": "paper (Table III)"})
    return missing


def _not_fine_tuned(keys, pair: str, why: str, axes) -> None:
    """One note over a pair's slots in each panel: its fine-tuned bars are not run, and why."""
    xs = [i for i, (p, _, _) in enumerate(keys) if p == pair]
    for ax in axes:
        ax.set_ylim(top=ax.get_ylim()[1] * 1.22)   # headroom: the note sits above every bar
        ax.axvspan(min(xs) - 0.5, max(xs) + 0.5, color="0.94", zorder=0, lw=0)
        ax.text((min(xs) + max(xs)) / 2, 0.97, f"fine-tuned: not run\n({why})", transform=ax.get_xaxis_transform(),
                ha="center", va="top", fontsize="x-small", color="0.25", wrap=True)


@figure("table_3", records=("profile", "serving"), title="Table III: queue depth by regression, stress test, fine-tuning",
        claims=("regression-as-good-as-stress", "target-regression-within-8", "target-regression-runs"))
def table_3(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    prof, serv = data["profile"], data["serving"]
    dr = depths.rows(prof, serv)
    src, acc_words = source_words(prof, serv)
    slos = sorted(dr.slo_s.unique())
    pairs = [p for p in dr.pair.unique() if p]
    cpu = dr[dr.dev == "cpu"].copy()
    # the CPU is one measured device for every pair: its regression/stress rows carry pair "" -> per pair
    cpu = pd.concat([cpu[cpu.pair != ""]] + [cpu[cpu.pair == ""].assign(pair=p) for p in pairs], ignore_index=True)
    dr = pd.concat([dr[dr.dev == "accelerator"], cpu], ignore_index=True)
    keys = [(p, dev, s) for p in pairs for dev in ("accelerator", "cpu") for s in slos]
    methods = ["regression", "stress", "fine-tuned"]
    col = plotting.colors(methods)
    fig, (a, b, c) = plotting.start(3, w=5.75, h=H, cols=2)   # 8 labelled groups a panel: two panels a row
    x = np.arange(len(keys))
    labels = _t3_labels(keys, src, analysis.name(prof))
    missing = _t3_depths(a, b, dr, keys, slos, col)
    b.axhline(1, color="0.5", lw=0.8)
    for j, m in enumerate(("regression", "stress")):
        runs = [dr[(dr.pair == p) & (dr.dev == dev) & (dr.slo_s == s) & (dr.method == m)].runs.max() for p, dev, s in keys]
        c.bar(x + (j - 0.5) * 0.4, runs, 0.4, color=col[m])
    c.yaxis.set_major_locator(MaxNLocator(integer=True))   # run counts are whole
    for p in sorted(missing):
        _not_fine_tuned(keys, p, analysis.not_fine_tuned_why(serv, p), (a, b))
    a.set(xticks=x, xticklabels=labels, ylabel="queue depth (queries)", title="(a) ours: depth per device and SLO")
    b.set(xticks=x, xticklabels=labels, ylabel="depth / stress-test depth", title="(b) against the stress test")
    c.set(xticks=x, xticklabels=labels, ylabel="profiling runs (levels measured)", title="(c) runs each method needed")
    for ax in (a, b, c):
        ax.tick_params(axis="x", labelsize="x-small")
    plotting.legend_below(fig, ncol=4)
    n = int(dr.processes.max()) if dr.processes.notna().any() else 1
    cap = ("Table III. Queue depths per device and SLO from the linear regression (equation 12 fitted to a few "
           "closed-loop levels), from the stress test (steps of 8 until the SLO fails) and fine-tuned with both "
           f"devices running (serving step), medians over {n} fresh service processes (whiskers in (a): the lowest to "
           "the highest of them). The paper judges them by "
           "closeness to the fine-tuned depth: \"the predictions yielded by linear regression demonstrate either "
           "superior or comparable efficacy to those obtained through stress tests\" (Section V-C). "
           f"{acc_words} The CPU is measured (one CPU here stands for both pairs' CPUs)"
           + ("; the emulated accelerator's depths follow the paper's ratios (sanity checks, never judged)"
              if src == "emulated" else "") + ". (b) Ours as a ratio to our "
           "stress test, paper's ratio to its stress test as markers. (c) Profiling runs (concurrency levels "
           "measured) each method needed."
           + (f" Fine-tuned slots of {', '.join(sorted(missing))} carry no bar: they say 'not run' and why (the "
              "profile did not fine-tune the pair in its serving runs)." if missing else ""))
    return plotting.save(fig, out_png, cap)

"""Figures 4-6 of WindVE: closed-loop latency against concurrency per device with the fit of
equation 12 and the stress tests (Figure 4, Section V-B), the concurrency against query length (Figure 5)
and the CPU's concurrency against its cores (Figure 6, Section V-D)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from .. import paper_values as PV
from .labels import H, acc_label, pair_label, slos_text, source_words


def _device_panel(ax, df, r: pd.DataFrame, f: pd.DataFrame, dev: str, pair: str, slos, col: dict) -> None:
    """One device: each level's median per fresh service process (profiled and stress-test levels) and each
    process's fit of equation 12, the SLOs dotted."""
    r = r.assign(process=r["process"] if "process" in r else 0)
    for purpose, mk in (("profile", "o"), ("stress", "^")):
        g = r[r.purpose == purpose].groupby(["process", "concurrency"]).latency_max_s.median().reset_index()
        name = "profiled levels" if purpose == "profile" else "stress test"
        ax.plot(g.concurrency, g.latency_max_s, mk, color=col[name], alpha=0.8, label=name)
    cs = np.linspace(0, max(r.concurrency.max(), 1), 50)
    for _, fk in f.iterrows():
        ax.plot(cs, fk.alpha * cs + fk.beta, "-", color=col["fit"], lw=1.2, label="fit t = αC + β, each process")
    for s in slos:
        ax.axhline(s, ls=":", color="0.4", lw=0.8, label=f"SLOs {slos_text(slos)} s (dotted)")
    name = "CPU instance (measured)" if dev == "cpu" else acc_label(pair, df)
    ax.set(xlabel="concurrency C", ylabel="latency of the round's slowest query (s)",
           title=f"{name}\nα={f.alpha.median() * 1e3:.1f} ms, β={f.beta.median() * 1e3:.0f} ms "
                 f"(medians of {len(f)} processes)")
    ax.title.set_fontsize("small")


@figure("fig4", records=("profile",), title="Figure 4: latency against concurrency, fits and stress tests")
def fig4(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["profile"]
    base = df[df.experiment == "base"]
    rounds = base[(base.kind == "round") & (base.phase == "measured")]
    fits = base[base.kind == "fit"]
    acc = analysis.device(df)
    src, acc_words = source_words(df)
    devs = [("cpu", "")] + [(acc, p) for p in fits[fits.device == acc].pair.unique()]
    fig, axes = plotting.start(len(devs) + 1, w=3.9, h=H)
    slos = sorted(df[df.kind == "depth"].slo_s.unique())
    # one colour per series across the panels: the ratio bars get their own, not the fit's or the stress test's
    col = dict(zip(["profiled levels", "stress test", "fit", "alpha ratio", "beta ratio"], plotting.COLORBLIND[:5]))
    for ax, (dev, pair) in zip(axes, devs):
        _device_panel(ax, df, rounds[(rounds.device == dev) & (rounds.pair == pair)],
                      fits[(fits.device == dev) & (fits.pair == pair)], dev, pair, slos, col)
    ax, ratios = axes[len(devs)], analysis.fit_ratios(df)
    pairs = [p for _, p in devs[1:]]
    x = np.arange(len(pairs))
    for i, pair in enumerate(pairs):
        for off, coef, sym in ((-0.2, "alpha", "α"), (0.2, "beta", "β")):
            r = ratios[(ratios.pair == pair) & (ratios.coef == coef)]
            if r.empty:
                continue
            r = r.iloc[0]
            ax.bar(i + off, r.ours, 0.38, color=col[f"{coef} ratio"],
                   label=plotting.label_source(f"ours {sym}_acc/{sym}_CPU", src))
            ax.errorbar([i + off], [r.ours], yerr=[[r.ours - r.low], [r.high - r.ours]], fmt="none", ecolor="0.3",
                        capsize=3)
            ax.plot(i + off, r.paper, **{**plotting.PAPER_STYLE, "label": "paper (Fig. 4, Sec. V-B)"})
            ax.annotate("holds" if r.holds else "does not\nhold", (i + off, np.nanmax([r.ours, r.paper, r.high])), xytext=(0, 6),
                        textcoords="offset points", ha="center", va="bottom", fontsize="x-small",
                        color="0.2" if r.holds else "#a50f15")
    ax.set(xticks=x, xticklabels=[pair_label(p, src, analysis.name(df)) for p in pairs], ylabel="accelerator / CPU",
           title="fit coefficients, ratio")
    ax.margins(y=0.2)
    plotting.legend_below(fig, ncol=4)
    verdicts = "; ".join(f"{pair_label(r.pair, src, analysis.name(df), sep=' ')} {'α' if r.coef == 'alpha' else 'β'}: ours {r.ours:.2f} vs paper {r.paper:.2f} "
                         f"({'holds' if r.holds else 'does not hold'})" for r in ratios.itertuples())
    bad = ratios[~ratios.holds]
    summary = ("every ratio holds (within 25% of the paper's)" if bad.empty and len(ratios) else
               f"{len(bad)} of {len(ratios)} ratios do not hold (more than 25% from the paper's)")
    cap = ("Figure 4. Closed-loop latency (median over rounds of each round's slowest query, per fresh service "
           "process) against concurrency per device, each process's linear fit of equation 12 (alpha, beta >= 0) on "
           "the profiled levels, the stress-test levels "
           f"(steps of 8), SLOs {slos_text(slos)} s dotted. {acc_words} "
           + ("The last panel checks whether the measured service keeps the emulated ratios (paper markers) once HTTP "
              "and queueing are included" if src == "emulated" else
              "The last panel compares the measured GPU/CPU coefficient ratios with the paper's V100/Xeon ones")
           + f" (bars the median over the fresh service processes, whiskers their lowest to highest): {summary}. "
           f"{verdicts}." + (" Where the accelerator is measured, the ledger's V100 rows take this alpha ratio as a "
                             "premise, against the paper's 0.21 with an interval over the processes." if src ==
                             "measured" else " The emulated ratios are the paper's by construction (plus what HTTP "
                             "and queueing add)."))
    return plotting.save(fig, out_png, cap)


@figure("fig5", records=("profile",), title="Figure 5: concurrency against query length")
def fig5(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    prof = data["profile"]
    d = analysis.regression_depths(prof, "length")
    src, acc_words = source_words(prof)
    slos = sorted(d.slo_s.unique())
    fig, axes = plotting.start(len(slos) + 1, w=4.0, h=H)
    col = plotting.colors(["original", "additional"])
    for ax, s in zip(axes, slos):
        g = d[d.slo_s == s]
        acc = g[g.device != "cpu"].sort_values("query_tokens")
        cpu = g[g.device == "cpu"].sort_values("query_tokens")
        pair = acc.pair.iloc[0] if len(acc) else "v100-xeon"
        ax.plot(acc.query_tokens, acc.depth, "o-", color=col["original"], label=acc_label(pair, prof) + ": original")
        ax.plot(cpu.query_tokens, cpu.depth, "s-", color=col["additional"], label="CPU (measured): additional")
        no = cpu[cpu.cannot_help.astype(bool)]
        if len(no):   # no legend entry without a mark drawn
            ax.plot(no.query_tokens, no.depth, "x", color="0.35", ms=9, label="CPU cannot help (eq. 11)")
        ax.set(xlabel="query length (tokens)", ylabel="concurrency (regression depth)", title=f"SLO {s:g} s")
    ax = axes[len(slos)]
    for k, v in PV.FIG5_AT_500.items():
        ax.plot(k, v, **{**plotting.PAPER_STYLE, "label": "paper: CPU's addition at 500 tokens"})
    ax.set(xlim=(0.5, 2.5), ylim=(-0.5, 4), xticks=[1, 2], xticklabels=["1 s", "2 s"], xlabel="paper SLO",
           ylabel="additional concurrency", title="paper (V100 + Xeon, Sec. V-D)")
    plotting.legend_below(fig, ncol=2)
    how = ("EMULATED from the CPU fit at each length times the pair's ratios" if src == "emulated"
           else f"MEASURED on {analysis.name(prof)}")
    cap = (f"Figure 5. Concurrency against query length: the accelerator alone ('original', {how}) "
           "and what the CPU adds ('additional', measured), as predicted by "
           "the regression on closed-loop profiles at each length; x marks where one query on the CPU already misses "
           "the SLO (equation 11: the CPU cannot help"
           + ("" if d[d.device == "cpu"].cannot_help.astype(bool).any() else "; no such length here") +
           "). Right: the values the paper's text gives.")
    return plotting.save(fig, out_png, cap)


@figure("fig6", records=("profile",), title="Figure 6: CPU concurrency against CPU cores")
def fig6(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    d = analysis.regression_depths(data["profile"], "cores")
    slos = sorted(d.slo_s.unique())
    fig, (a, b) = plotting.start(2, w=4.4, h=H)
    col = plotting.colors([f"SLO {s:g} s" for s in slos])
    for s in slos:
        g = d[d.slo_s == s].sort_values("cpu_threads")
        a.plot(g.cpu_threads, g.depth, "o-", color=col[f"SLO {s:g} s"], label=f"CPU (measured), SLO {s:g} s")
    a.set(xlabel="cores (threads) of the CPU instance", ylabel="CPU concurrency (regression depth)",
          title="(a) ours: the CPU's addition", xticks=sorted(d.cpu_threads.unique()))
    for k, v in PV.FIG6_MIN_CORES.items():
        b.plot(k, v, **{**plotting.PAPER_STYLE, "label": "paper: fewest Xeon cores that add concurrency"})
    b.set(xlim=(0.5, 2.5), ylim=(0, 50), xticks=[1, 2], xticklabels=["1 s", "2 s"], xlabel="paper SLO",
          ylabel="cores", title="(b) paper (Sec. V-D)")
    plotting.legend_below(fig, ncol=2)
    cap = ("Figure 6. The CPU instance's concurrency (regression depth from closed-loop profiles) against the cores "
           "(threads, highest core indices first as Section IV-D advises) it uses; this machine has few cores, and "
           "the framework shares them. Right: the paper's boundary below which the Xeon adds nothing.")
    return plotting.save(fig, out_png, cap)

"""Chameleon section 4.2, Figures 7 and 8: the approximate hierarchical priority queue (binomial p(k) and
P(k) of one L1 queue; the L1 length for 99% identical top-K, analytic, simulated and the authors')."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.judging import intervals
from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from ._draw import dodge, label, plain_log_ticks, where

DODGE_PT = 5.0   # Figure 8's coinciding series drawn this many points left / right of their unit count


@figure("fig7", records=("queue",), title="Figure 7: share of the top-K in one L1 queue (binomial)")
def fig7(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["queue"]
    prov = df.attrs["provenance"]
    d = df[df.figure == "fig7"]
    nq = int(d.num_queues.iloc[0])
    fig, (ax,) = plotting.start(w=6, h=4)
    ax.bar(d.k, d.p, color="tab:red", label=label("p(k)", "modelled"))
    ax2 = ax.twinx()
    ax2.plot(d.k, d.P, color="tab:blue", label=label("P(k)", "modelled"))
    ax.set(xlim=(-0.5, 40), xlabel=f"k (of the top {int(d.k.max())} results in one of {nq} queues)", ylabel="p(k)")
    ax2.set(ylabel="P(k)", ylim=(0, 1.02))
    ax2.grid(False)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    fig.legend(h1 + h2, l1 + l2, loc="outside lower center", ncol=2, fontsize="small")
    cap = (f"Figure 7 (reproduced, analytic): the binomial probability p(k) that one of {nq} level-one queues "
           f"holds k of the K={int(d.k.max())} results and its cumulative P(k). Modelled, not measured; "
           f"{where(prov)}.")
    return plotting.save(fig, out_png, cap)


FIG8_CAPTION = (
    "Figure 8 (reproduced). Left: L1 queue length needed so that 99% of queries return exactly the top-K, "
    "against the number of decoding units (4 channels x 64 B / m). Analytic = binomial model P(L)^queues >= 0.99, "
    "counted two ways: ONE queue per unit, which gives the authors' lengths 10/15/23/38 (stars, m = 8/16/32/64: "
    "section 4.2.2 counts so, 'given 16 level-one queues' for m = 16), and TWO per unit, the design section 4.2.1 "
    "describes ('two queues [...] must be paired with one PQ decoding unit'), where the model asks for {two}: "
    "the authors' lengths are one doubling of queues conservative. Simulated = the queue hierarchy (two L1 "
    "queues per unit) run on i.i.d. distances and on our index's PQ distances in scan order (emulated, not "
    "hardware). Dotted: the length an exact queue per unit would need (K). Where series coincide they are drawn "
    "{dodge:g} points apart: both analytic series left of their unit count, the i.i.d. simulation and the "
    "authors' stars on it, our PQ simulation right of it. Right: what the ledger row judges, the paper's "
    "target 'the results for 99% of queries remain identical to those obtained with an exact K-selection "
    "module' (section 4.2.2): the share of our {n} queries whose top-K is exact with two L1 queues per unit at "
    "the authors' length, with its exact binomial 95% interval, against 99%. {where}.")


def _identical_panel(ax, a: pd.DataFrame) -> None:
    """The share of queries with the exact top-K at the authors' lengths, each m with its binomial interval."""
    col = "identical_real_at_authors" if "identical_real_at_authors" in a else "identical_iid_at_analytic"
    ours = "our PQ distances" if "real" in col else "i.i.d. distances"
    x = np.arange(len(a))
    est = [intervals.proportion_ci(int(round(v * n)), int(n)) for v, n in zip(a[col], a.n_sim_queries)]
    ys = np.array([e[0] for e in est])
    lo, hi = np.array([e[1] for e in est]), np.array([e[2] for e in est])
    ax.errorbar(x, ys, yerr=[ys - lo, hi - ys], fmt="D", capsize=3, color=plotting.COLORBLIND[4],
                label=label(f"identical top-K at the authors' lengths ({ours})", "emulated"))
    ax.axhline(0.99, color="0.35", ls="-.", label="section 4.2.2's target: 99% of queries")
    ax.set_xticks(x, [f"m={int(m)}\n(L={int(length)})" for m, length in zip(a.m, a.authors)])
    ax.set(ylim=(min(0.9, lo.min() - 0.01), 1.005), ylabel="share of queries with the exact top-K",
           title="the ledger row: identical top-K")


@figure("fig8", records=("queue",), title="Figure 8: L1 queue length for 99% identical top-K",
        claims=("queue-identical-topk", "target-queue-l1-lengths"))
def fig8(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    prov = data["queue"].attrs["provenance"]
    d = analysis.fig8(data["queue"]).sort_values("units")
    fig, (ax, a2) = plotting.start(2, w=5.2, h=4.8, gridspec_kw={"width_ratios": [1.5, 1]})
    dodge(ax.plot(d.units, d.analytic_one_queue_per_unit, "o-",
                  label=label("analytic, one L1 queue per unit (gives the authors' lengths)", "modelled")), -DODGE_PT)
    # a wide dashed line under the i.i.d. simulation's thin one: where the two coincide both still show
    dodge(ax.plot(d.units, d.analytic_two_queues_per_unit, "s--", mfc="white", ms=7, lw=2.8, zorder=1.9,
                  label=label("analytic, two L1 queues per unit (section 4.2.1's design)", "modelled")), -DODGE_PT)
    ax.plot(d.units, d.simulated_iid, "^-", lw=1.2, zorder=2.1,
            label=label("simulated, two queues per unit, i.i.d. distances", "emulated"))
    if "simulated_real" in d:
        dodge(ax.plot(d.units, d.simulated_real, "v-",
                      label=label("simulated, two queues per unit, our PQ distances", "emulated")), DODGE_PT)
    a = d.dropna(subset=["authors"])
    plotting.paper_marks(ax, a.units, a.authors, plotting.label_source("authors' L1 lengths", "paper"))
    for _, r in a.iterrows():   # up and right of the star: clear of the falling analytic line
        ax.annotate(f"m={int(r.m)}", (r.units, r.authors), textcoords="offset points", xytext=(7, 6),
                    ha="left", va="bottom", fontsize="small", color="0.2",
                    bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85})
    k = int((prov.get("config") or {}).get("k", 100))  # the top-K (the study's k; the paper's 100)
    ax.axhline(k, color="0.45", ls=":", lw=1.2, label=f"exact queue per unit: K = {k} (no approximation)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set(xlabel="PQ decoding units (4 channels x 64 B / m)", ylabel="L1 length for 99% identical top-K")
    if len(a):
        _identical_panel(a2, a.sort_values("m"))
    else:
        plotting.not_run(a2, "no unit count of the authors' m in this profile")
    plotting.legend_below(fig, ncol=2)
    two = ", ".join(f"{int(r.analytic_two_queues_per_unit)} (m={int(r.m)})" for r in a.sort_values("m").itertuples())
    n = int(a.n_sim_queries.iloc[0]) if len(a) else 0
    return plotting.save(fig, out_png, FIG8_CAPTION.format(dodge=DODGE_PT, two=two or "-", n=n, where=where(prov)))

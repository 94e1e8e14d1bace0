"""Chameleon section 4.2, Figures 7 and 8: the approximate hierarchical priority queue (binomial p(k) and
P(k) of one L1 queue; the L1 length for 99% identical top-K, analytic, simulated and the authors')."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

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
    "Figure 8 (reproduced): L1 queue length needed so that 99% of queries return exactly the top-K, against "
    "the number of decoding units (4 channels x 64 B / m). Analytic = binomial model P(L)^queues >= 0.99; "
    "simulated = the queue hierarchy run on i.i.d. distances and on our index's PQ distances in scan order "
    "(emulated, not hardware). Stars: the authors' lengths 10/15/23/38 for m = 8/16/32/64. Dotted: the length "
    "an exact queue per unit would need (K), so the approximate queue's saving is the gap to it (log axis). "
    "Where series coincide they are drawn {dodge:g} points apart: both analytic series left of their unit count, "
    "the i.i.d. simulation and the authors' stars on it, our PQ simulation right of it; the two-queue analytic "
    "line is the wide dashed one under the i.i.d. simulation's. {where}.")


@figure("fig8", records=("queue",), title="Figure 8: L1 queue length for 99% identical top-K",
        claims=("queue-identical-topk", "target-queue-l1-lengths"))
def fig8(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    prov = data["queue"].attrs["provenance"]
    d = analysis.fig8(data["queue"]).sort_values("units")
    fig, (ax,) = plotting.start(w=6.5, h=4.8)
    dodge(ax.plot(d.units, d.analytic_one_queue_per_unit, "o-",
                  label=label("analytic, one queue per unit (authors' convention)", "modelled")), -DODGE_PT)
    # a wide dashed line under the i.i.d. simulation's thin one: where the two coincide both still show
    dodge(ax.plot(d.units, d.analytic_two_queues_per_unit, "s--", mfc="white", ms=7, lw=2.8, zorder=1.9,
                  label=label("analytic, two L1 queues per unit", "modelled")), -DODGE_PT)
    ax.plot(d.units, d.simulated_iid, "^-", lw=1.2, zorder=2.1, label=label("simulated, i.i.d. distances", "emulated"))
    if "simulated_real" in d:
        dodge(ax.plot(d.units, d.simulated_real, "v-", label=label("simulated, our PQ distances", "emulated")),
              DODGE_PT)
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
    ax.set(xlabel="PQ decoding units (one queue per unit in the authors' convention; two in ours)",
           ylabel="L1 length for 99% identical top-K")
    plotting.legend_below(fig, ncol=2)
    return plotting.save(fig, out_png, FIG8_CAPTION.format(dodge=DODGE_PT, where=where(prov)))

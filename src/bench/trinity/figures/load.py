"""Latency, throughput and lane utilisation against offered load, static against continuous batching
(Trinity section 3.2), from the load records (replay of real searches; live-engine check points)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from ..verdicts import paper
from ._common import NO_PAPER, policy_colors, policy_style, words


def _by_arrival(df):
    return [(a, df[df.arrival == a]) for a in sorted(df.arrival.unique())]


def _sustained_marks(ax, g: pd.DataFrame, factor: float, arrival: str, pairs, col) -> str:
    """The sustained-load target on the latency panel: its p95 bound, and each policy's median sustained load
    (an arrow where a seed's search did not bracket: the value is a bound, not a crossing)."""
    from ..verdicts import batching

    bound, sus, open_, est, err = batching.sustained_estimate(g, factor, arrival, pairs)
    ax.axhline(bound * 1e3, color="0.35", ls="-.", lw=1.2, label="p95 bound of the sustained-load target")
    cap = g.groupby("repeat").capacity_rps.first()
    for k, (pol, s) in enumerate(sus.items()):
        x = float((s.rps / s.repeat.map(cap)).median())   # each seed's sustained load over its own capacity
        ax.axvline(x, color=col[pol], ls=(0, (1, 4)), lw=2.2,
                   label="sustained load under the bound (median over seeds, the policy's colour)" if k else "_s")
    note = "".join(f"; {words(pol)}: {s.text()}" for pol, s in open_.items() if s is not None)
    return (f"{arrival}: bound {bound * 1e3:.0f} ms; sustained continuous / static {est[0]:.2f} "
            f"[{est[1]:.2f}, {est[2]:.2f}]{note}")


@figure("latency_load", records=("load", "trace"), title="latency and throughput against offered load",
        claims=("target-continuous-load-*",))
def latency_load(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["load"]
    pairs = analysis.check_pairs(data["trace"])
    col = policy_colors(df.policy.unique())
    arr = _by_arrival(analysis.replayed(df))
    factor = float(df.p95_bound_factor.iloc[0]) if "p95_bound_factor" in df else 2.0
    fig, flat = plotting.start(len(arr), 2, w=5.5, h=3.75)
    axes = [flat[:len(arr)], flat[len(arr):]]     # rows: latency, throughput
    notes = []
    for j, (a, g) in enumerate(arr):
        for pol, gp in g.groupby("policy"):
            s = gp.assign(share=gp.throughput_rps / gp.capacity_rps).groupby("load_frac").median(numeric_only=True)
            mk = policy_style(pol)
            for q, ls in (("p50_s", ":"), ("p95_s", "-"), ("p99_s", "--")):
                axes[0][j].plot(s.index, s[q] * 1e3, ls=ls, marker=mk["marker"], mfc=mk["mfc"], ms=4, color=col[pol],
                                label=plotting.label_source(f"{words(pol)}, {q[:3]}", "emulated"))
            axes[1][j].plot(s.index, s.share, marker=mk["marker"], mfc=mk["mfc"], color=col[pol],
                            label=f"_{pol} throughput")
        notes.append(_sustained_marks(axes[0][j], g, factor, a, pairs, col))
        lim = g.load_frac.max()
        axes[1][j].plot([0, lim], [0, lim], color="0.6", lw=0.8, ls=":", label="_offered")
        axes[0][j].set(yscale="log", xlabel="offered load (fraction of capacity)",
                       ylabel="latency from intended arrival (ms)", title=f"{a} arrivals")
        axes[0][j].yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
        axes[0][j].yaxis.set_minor_formatter(plt.NullFormatter())
        axes[1][j].set(xlabel="offered load (fraction of capacity)", ylabel="achieved throughput (fraction of capacity)")
    plotting.legend_below(fig, ncol=3)
    cap = ("p50/p95/p99 latency (from each request's intended arrival) and achieved throughput against offered load, "
           "static against continuous batching, heterogeneous requests (classes of k and top-M), Poisson and bursty "
           f"arrivals; capacity {int(df.capacity.iloc[0])} slots, distance op {int(df.lanes.iloc[0])} lanes. Lines: "
           "replay of real searches with measured extend times, queueing simulated (emulated); median over seeds, "
           "each seed at fractions of the capacity of the trace process it replayed. "
           "Dash-dotted: the p95 bound of the harness's sustained-load target; sparse-dotted verticals: each policy's median "
           "sustained load under it (the ledger's ratio, paired seed by seed and widened by the replay's error "
           "against the live engine: " + "; ".join(notes) + "). The replay against the live engine is drawn in "
           "the replay check figure. Bottom: achieved throughput; dotted: throughput = offered. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)


def _busy_panel(ax, g: pd.DataFrame, high: float, pairs, col) -> str:
    """The busy claim's quantity as the ledger row computes it on the replay (the row needs a GPU, so it is
    drawn, not judged): lane utilisation continuous over static, paired
    seed by seed at the high loads (dots), the median with the interval widened by the replay's error."""
    from ..verdicts import batching

    est, err = batching.busy_estimate(g, high, pairs)
    hi = g[g.load_frac >= high] if (g.load_frac >= high).any() else g[g.load_frac == g.load_frac.max()]
    m = hi[hi.policy == "continuous"].merge(hi[hi.policy == "static"], on=["repeat", "load_frac", "arrival"],
                                            suffixes=("_c", "_s"))
    for i, (a, ga) in enumerate(m.groupby("arrival")):
        ax.plot(np.full(len(ga), i, float) + np.linspace(-0.1, 0.1, len(ga)), ga.lane_util_c / ga.lane_util_s,
                ls="none", marker="o", ms=5, color="0.45", label="_seed")
    ax.errorbar([len(m.arrival.unique())], [est[0]], yerr=[[est[0] - est[1]], [est[2] - est[0]]], marker="D", ms=8,
                capsize=5, color=col["continuous"], ls="none",
                label=plotting.label_source("ledger: median ratio [interval, widened by the replay's error]",
                                            "emulated"))
    ax.axhline(1.0, color="0.3", ls=":", lw=1.4, label="_one")
    names = sorted(m.arrival.unique())
    ax.set_xticks(range(len(names) + 1), [f"{a}\nseeds" for a in names] + ["ledger"])
    ax.set(ylabel="lane utilisation, continuous / static", title=f"the busy claim, drawn (needs a GPU):\nloads >= {high:g}")
    return f"{est[0]:.3f} [{est[1]:.3f}, {est[2]:.3f}]; {err.text()}"


@figure("lanes", records=("load", "trace"), title="lane utilisation and the busy claim",
        claims=("claim-continuous-busy-*", "target-lane-util-*"))
def lanes(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = analysis.replayed(data["load"])
    pairs = analysis.check_pairs(data["trace"])
    col = policy_colors(df.policy.unique())
    high = float(df.high_load.iloc[0]) if "high_load" in df else 0.9
    fig, (a1, a2, a3) = plotting.start(3, w=16 / 3, h=4)
    target = dict(color="0.35", ls=":", lw=1.4, zorder=1)
    ccols = sorted((c for c in df if c.startswith("lane_util_c")), key=lambda c: int(c[11:]))
    top = df[df.load_frac == df.load_frac.max()]
    for pol, g in top[top.arrival == top.arrival.iloc[0]].groupby("policy"):
        if ccols:
            mk = policy_style(pol)
            a3.plot([int(c[11:]) for c in ccols], g[ccols].median().to_numpy(), marker=mk["marker"], mfc=mk["mfc"],
                    mew=1.5, color=col[pol], label=f"_{pol}c")
    if ccols:
        a3.axhline(0.9, label="_target", **target)
        a3.set(xscale="log", xlabel="lanes per launch of the distance operation", ylabel="filled / launched lanes",
               ylim=(0, 1.05), title=f"what-if operation size, load {top.load_frac.iloc[0]:g}, {top.arrival.iloc[0]}")
    else:
        plotting.not_run(a3, "no what-if operation sizes in the records")
    for (pol, a), g in df.groupby(["policy", "arrival"]):
        s = g.groupby("load_frac").agg(u=("lane_util", "median"), lo=("lane_util", "min"), hi=("lane_util", "max"))
        mk = policy_style(pol)
        a1.errorbar(s.index, s.u, yerr=[s.u - s.lo, s.hi - s.u], ls="-" if a == "poisson" else "--",
                    marker=mk["marker"], mfc=mk["mfc"], mew=1.5, color=col[pol],
                    label=plotting.label_source(f"{words(pol)}, {a} arrivals", "emulated"))
    a1.axhline(0.9, label="90% lane utilisation (the harness's target)", **target)
    a1.set(xlabel="offered load (fraction of estimated capacity)", ylabel="filled lanes / launched lanes",
           ylim=(0, 1.05), title="lane utilisation of the distance operation")
    busy = _busy_panel(a2, df, high, pairs, col)
    plotting.legend_below(fig, ncol=3)
    flag = " The machine was busy during the step: the ledger decides nothing from it." if df.machine_busy.any() else ""
    cap = ("Lane utilisation of the fixed-shape distance operation (real distance tasks / lanes launched, "
           f"{int(df.lanes.iloc[0])} lanes per launch; a busy request slot launches all its p x D lanes, the "
           "candidates its visited set drops masked rather than compacted into one task array as in the paper; the "
           "CPU engine skips launches whose slots are all free, a CUDA graph runs them all) against offered load, "
           "static against continuous batching; median over seeds, bars min-max. The paper (section 3.2): \""
           + paper.BUSY.paper + "\". Middle: the busy claim's quantity on the CPU replay (drawn, not judged: the row needs a GPU), continuous over static seed by "
           f"seed at loads >= {high:g} of capacity: {busy}. Right: the same extends' utilisation had the operation "
           "been captured at another size, launched the same way. Requests take "
           f"{df.extends_mean.median():.1f} extends each (median), the same under both policies. Replay of real "
           "searches (emulated serving, measured extend times)." + flag + " " + NO_PAPER)
    return plotting.save(fig, out_png, cap)

"""Latency, throughput and lane utilisation against offered load, static against continuous batching
(Trinity section 3.2), from the load records (replay of real searches; live-engine check points)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from ._common import NO_PAPER, policy_colors, policy_style


def _by_arrival(df):
    return [(a, df[df.arrival == a]) for a in sorted(df.arrival.unique())]


@figure("latency_load", records=("load",), title="latency and throughput against offered load",
        claims=("claim-continuous-smooth-p95-*", "target-continuous-load-*"))
def latency_load(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["load"]
    col = policy_colors(df.policy.unique())
    arr = _by_arrival(analysis.replayed(df))
    fig, flat = plotting.start(len(arr), 2, w=5.5, h=3.75)
    axes = [flat[:len(arr)], flat[len(arr):]]     # rows: latency, throughput
    for j, (a, g) in enumerate(arr):
        for pol, gp in g.groupby("policy"):
            s = gp.groupby("offered_rps").median(numeric_only=True)
            mk = policy_style(pol)
            for q, ls in (("p50_s", ":"), ("p95_s", "-"), ("p99_s", "--")):
                axes[0][j].plot(s.index, s[q] * 1e3, ls=ls, marker=mk["marker"], mfc=mk["mfc"], ms=4, color=col[pol],
                                label=plotting.label_source(f"{pol} {q[:3]}", "emulated"))
            axes[1][j].plot(s.index, s.throughput_rps, marker=mk["marker"], mfc=mk["mfc"], color=col[pol],
                            label=f"_{pol} throughput")
        live = df[(df.engine == "live") & (df.arrival == a)]
        for pol, gl in live.groupby("policy"):
            axes[0][j].plot(gl.offered_rps, gl.p95_s * 1e3, marker="D", ms=9, ls="none", mec="k", mew=1.5,
                            color=col[pol], zorder=5, label=f"{pol} p95, live engine (measured)")
        lim = g.offered_rps.max()
        axes[1][j].plot([0, lim], [0, lim], color="0.6", lw=0.8, ls=":", label="_offered")
        axes[0][j].set(yscale="log", xlabel="offered load (requests/s)", ylabel="latency from intended arrival (ms)",
                       title=f"{a} arrivals")
        axes[0][j].yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
        axes[0][j].yaxis.set_minor_formatter(plt.NullFormatter())
        axes[1][j].set(xlabel="offered load (requests/s)", ylabel="achieved throughput (requests/s)")
    plotting.legend_below(fig, ncol=3)
    cap = ("p50/p95/p99 latency (from each request's intended arrival) and achieved throughput against offered load, "
           "static against continuous batching, heterogeneous requests (classes of k and top-M), Poisson and bursty "
           f"arrivals; capacity {int(df.capacity.iloc[0])} slots, distance op {int(df.lanes.iloc[0])} lanes. Lines: "
           "replay of real searches with measured extend times, queueing simulated (emulated); median over seeds. "
           "Diamonds (black edge, drawn on top): the live engine at one load (measured). Bottom: achieved throughput, one "
           "line per policy in its colour; dotted: throughput = offered. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)


@figure("lanes", records=("load",), title="lane utilisation and extends per request",
        claims=("claim-continuous-busy-*", "target-lane-util-*"))
def lanes(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = analysis.replayed(data["load"])
    col = policy_colors(df.policy.unique())
    pols = sorted(df.policy.unique())
    fig, (a1, a2, a3) = plotting.start(3, w=16 / 3, h=4)
    target = dict(color="0.35", ls=":", lw=1.4, zorder=1)
    ccols = sorted((c for c in df if c.startswith("lane_util_c")), key=lambda c: int(c[11:]))
    high = df[df.load_frac == df.load_frac.max()]
    for pol, g in high[high.arrival == high.arrival.iloc[0]].groupby("policy"):
        if ccols:
            mk = policy_style(pol)
            a3.plot([int(c[11:]) for c in ccols], g[ccols].median().to_numpy(), marker=mk["marker"], mfc=mk["mfc"],
                    mew=1.5, color=col[pol], label=f"_{pol}c")
    if ccols:
        a3.axhline(0.9, label="_target", **target)
        a3.set(xscale="log", xlabel="lanes per launch of the distance op", ylabel="filled / launched lanes",
               ylim=(0, 1.05), title=f"what-if op size, load {high.load_frac.iloc[0]:g}, {high.arrival.iloc[0]}")
    else:
        plotting.not_run(a3, "no what-if op sizes in the records")
    for (pol, a), g in df.groupby(["policy", "arrival"]):
        s = g.groupby("load_frac").agg(u=("lane_util", "median"), lo=("lane_util", "min"), hi=("lane_util", "max"),
                                       e=("extends_mean", "median"))
        ls = "-" if a == "poisson" else "--"
        mk, k = policy_style(pol), pols.index(pol)
        # one marker per policy in every panel (and the legend); in the middle panel, where both policies
        # coincide, the second policy's marker is larger and drawn over the first
        a1.errorbar(s.index, s.u, yerr=[s.u - s.lo, s.hi - s.u], ls=ls, marker=mk["marker"], mfc=mk["mfc"], mew=1.5,
                    color=col[pol], label=plotting.label_source(f"{pol}, {a}", "emulated"))
        a2.plot(s.index, s.e, ls=ls, marker=mk["marker"], mfc=mk["mfc"], ms=5 + 3 * k, mew=1.5, color=col[pol],
                label=f"_{pol}{a}")
    a1.axhline(0.9, label="90% lane utilisation (the harness's target)", **target)
    a1.set(xlabel="offered load (fraction of estimated capacity)", ylabel="filled lanes / launched lanes",
           ylim=(0, 1.05), title="lane utilisation of the fixed-shape distance op")
    a2.set(xlabel="offered load (fraction of estimated capacity)", ylabel="extends per request (mean)",
           title="extends per request (same for every policy)", ylim=(0, 1.15 * float(df.extends_mean.max())))
    plotting.legend_below(fig, ncol=3)
    cap = ("Lane utilisation of the fixed-shape distance operation (real distance tasks / lanes launched, "
           f"{int(df.lanes.iloc[0])} lanes per launch; a busy slot launches all its p x D lanes, the candidates its "
           "visited set drops masked rather than compacted into one task array as in the paper; the CPU engine "
           "skips launches whose slots are all free, a CUDA graph runs them all) and mean extends per request "
           "against offered load, static "
           "against continuous batching (extends per request are the same for both policies: same requests, "
           "batch-independent searches: in the middle panel the second policy's larger marker is drawn over "
           "the first's); dotted: a 90% utilisation reference (the harness's target). One marker per policy in every "
           "panel and in the latency figure. Right: the same extends' utilisation had "
           "the op been captured at another size, launched the same way (tasks per extend do not depend on it; its "
           "timing would). Replay "
           "of real searches (emulated serving, measured extend times); median over seeds, bars min-max. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)

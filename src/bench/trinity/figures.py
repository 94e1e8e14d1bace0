"""Trinity's figures, drawn from records only: Figure 1 (roofline), Figure 2 (placements, modelled), and the
study's first evaluation of the paper's mechanisms (recall against queries/s, latency against load static vs
continuous, lane utilisation, the scheduler's policies). The paper has no evaluation, so no paper value is
drawn; its Figures 1 and 2 are qualitative."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..core import plotting, records
from ..core.figures import Registry
from . import roofline

# What each figure shows, for the report (the caption the figure writes adds the run's details).
DESCRIPTIONS = {
    "fig1_roofline": (
        "Figure 1 of Trinity measured on this machine: utilisation (FLOP/s over a measured GEMM peak on the "
        "device that ran: the GPU where there is one, else a CPU proxy for GPU utilisation) against batch size for the extend engine, prefill and decode of "
        "the shared small transformer, with the paper's fit u(X) = min(u_max, (X/X_sat)^alpha) per stage."
    ),
    "fig2_placement": (
        "Figure 2 of Trinity as an analytic model (modelled, not measured): coupled, co-located with "
        "prefill, and an independent search pool, from the measured extend times and stated link "
        "latencies."
    ),
    "recall_qps": (
        "recall@10 against queries/s: the extend engine at batch 1, static and continuous batching "
        "(sweeping top-M) beside faiss IndexHNSWFlat (sweeping efSearch), same data and threads; hnswlib "
        "not installed."
    ),
    "latency_load": (
        "p50/p95/p99 latency from the intended arrival and achieved throughput against offered load, "
        "static against continuous batching, heterogeneous requests, Poisson and bursty arrivals (replay "
        "of real searches with measured extend times; live-engine check points measured)."
    ),
    "sched_sweep": (
        "The scheduler's open parameters (the paper leaves r_min, r_max, tau_pre, the retrieval interval "
        "delta and the deadline open), swept one at a time at one prefill load: share of prefill retrievals "
        "within their deadline and decode stall fraction, Trinity against FIFO at each value."
    ),
    "lanes": (
        "Lane utilisation of the fixed-shape distance operation and extends per request against load, "
        "static against continuous batching."
    ),
    "scheduler": (
        "Stage-aware scheduling: prefill p95 wait, share of prefill retrievals within the deadline, "
        "decode stall fraction and emulated decode tokens/s per policy across loads; the control loop's "
        "prefill share r (emulated LLM stages)."
    ),
}
FIGURES = Registry(descriptions=DESCRIPTIONS)
NO_PAPER = "The paper reports no measured values (no evaluation section), so none is drawn."


def _read(paths) -> pd.DataFrame:
    return records.read_all(paths)


def _measured(df: pd.DataFrame) -> pd.DataFrame:
    return df[df.phase == "measured"] if "phase" in df else df


@FIGURES.figure("fig1_roofline", records=("roofline",), title="Figure 1: utilisation against batch size")
def fig1_roofline(inputs: dict[str, list[Path]], out_png: Path) -> list[Path]:
    plotting.apply_style()
    df = _measured(_read(inputs["roofline"]))
    col = plotting.colors(df.stage.unique())
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(15, 4.2), layout="constrained")
    notes = []
    for stage, g in df.groupby("stage"):
        m = g.groupby("x").agg(u=("u", "median"), lo=("u", "min"), hi=("u", "max"), w=("work_per_s", "median"))
        f = roofline.fit(m.index, m.u)
        lbl = f"{stage}: X_sat={f['x_sat']:.3g},\nalpha={f['alpha']:.2f}, knee={f['x_knee']:.3g}"
        a1.errorbar(m.index, m.u, yerr=[m.u - m.lo, m.hi - m.u], marker="o", ls="none", color=col[stage], label=lbl)
        xs = np.geomspace(m.index.min(), m.index.max(), 100)
        a1.plot(xs, roofline.u_model(xs, f["u_max"], f["x_sat"], f["alpha"]), color=col[stage], lw=1.2, ls="--")
        a2.plot(m.index, m.w / m.w.iloc[0], marker="o", color=col[stage], label=f"_{stage}")
        notes.append(f"{stage}: u_max={f['u_max']:.3g}, X_sat={f['x_sat']:.3g}, alpha={f['alpha']:.2f}, "
                     f"knee={f['x_knee']:.3g}")
    dev = str(df.device.iloc[0])
    proxy = "GPU" if dev.startswith("cuda") else "CPU proxy for GPU utilisation"
    a1.set(xscale="log", yscale="log", xlabel="batch size X (queries Q for search, sequences B for prefill/decode)",
           ylabel=f"u = FLOP/s / peak FLOP/s ({proxy})", title="utilisation; dashed: fit min(u_max, (X/X_sat)^alpha)")
    a2.set(xscale="log", yscale="log", xlabel="batch size X", ylabel="throughput / throughput at the smallest X",
           title="gain from batching (flat: saturated)")
    handles, labels = a1.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize="small")
    prov = df.attrs["provenance"]
    cap = (f"Figure 1 of Trinity measured on this machine ({prov.get('cpu_model', 'CPU')}, device "
           f"{df.device.iloc[0]}): the extend engine (one extend with Q busy slots), and prefill/decode of the shared "
           f"small random-weight transformer. Utilisation is achieved FLOP/s over a measured GEMM peak "
           f"{df.peak_flops.iloc[0] / 1e9:.1f} GFLOP/s on {dev} ({proxy}); points: median of the timed runs, bars "
           f"min-max. Right: each stage's throughput (search: distance tasks/s; LM: tokens/s) over its own value at "
           f"the smallest batch, so a plateau is where batching stops paying. Fits: "
           + "; ".join(notes) + ". " + NO_PAPER)
    return plotting.save(fig, out_png, cap)


@FIGURES.figure("fig2_placement", records=("placement",), title="Figure 2: three placements (modelled)")
def fig2_placement(inputs: dict[str, list[Path]], out_png: Path) -> list[Path]:
    plotting.apply_style()
    df = _read(inputs["placement"])
    col = plotting.colors(df.placement.unique())
    fig, axes = plt.subplots(1, 4, figsize=(15, 4), layout="constrained")
    panels = [("search_devices", "search devices"), ("search_util", "search utilisation u(Q)"),
              ("prefill_latency_s", "prefill retrieval latency (ms)"), ("llm_gpus", "GPUs left for the LLM")]
    for ax, (colname, title) in zip(axes, panels):
        for name, g in df.groupby("placement"):
            y = g[colname] * (1e3 if colname.endswith("_s") else 1)
            ax.plot(g.load_x_device, y, marker="o", color=col[name], label=plotting.label_source(name, "modelled"))
        ax.set(xscale="log", xlabel="retrievals/s (x one device's throughput at its knee)", title=title)
        ticks = sorted(df.load_x_device.round(3).unique())
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
    plotting.legend_below(fig, ncol=3)
    cap = ("Figure 2 of Trinity as an analytic model (modelled, not measured): coupled (one search device per LLM "
           "server), co-located with prefill, and an independent pool sized at the knee of the measured search "
           f"roofline. Assumptions: {df.assumptions.iloc[0]}. Missing points: the placement is overloaded at that "
           "load. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)


@FIGURES.figure("recall_qps", records=("recall",), title="recall@k against queries/s")
def recall_qps(inputs: dict[str, list[Path]], out_png: Path) -> list[Path]:
    plotting.apply_style()
    df = _read(inputs["recall"])
    m = df[(df.phase == "measured") & (df.source == "measured")]
    rcol = [c for c in m if c.startswith("recall_at_")][0]
    datasets = sorted(m.dataset.unique())
    base = m.system.str.replace(r"-p\d+$", "", regex=True)   # engine-continuous-p2: continuous's colour, dashed
    col = plotting.colors(base.unique())
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets) + 2, 4.2), layout="constrained",
                             squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        for sysname, g in m[m.dataset == ds].groupby("system"):
            s = g.groupby("value").agg(qps=("qps", "median"), lo=("qps", "min"), hi=("qps", "max"), r=(rcol, "first"))
            pv = sysname != base[g.index[0]]
            ax.errorbar(s.r, s.qps, yerr=[s.qps - s.lo, s.hi - s.qps], marker="s" if pv else "o",
                        ls="--" if pv else "-", color=col[base[g.index[0]]],
                        label=f"{base[g.index[0]]}, p = {int(g.p.iloc[0])} parents/extend" if pv else sysname)
        ax.axvline(0.95, color="0.5", ls=":", lw=1)
        ax.set(yscale="log", xlabel=rcol.replace("recall_at_", "recall@"), ylabel="queries/s (median)", title=ds)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize="small")
    nr = df[df.source == "not_run"]
    cap = (f"{rcol.replace('recall_at_', 'recall@')} against queries/s (ann-benchmarks style): the extend engine at "
           "batch 1, static and continuous batching sweeping top-M (dashed: continuous with more parents per extend), "
           "faiss IndexHNSWFlat sweeping efSearch, and exact brute force on the engine's device (one matmul + topk, "
           "recall 1: the anchor a graph engine must beat), "
           f"same data and threads ({int(m.threads.iloc[0])}); median of the measured runs, bars min-max; dotted: "
           "recall 0.95. " + "".join(f"Not run: {w}. " for w in nr.why) + NO_PAPER)
    return plotting.save(fig, out_png, cap)


def _by_arrival(df):
    return [(a, df[df.arrival == a]) for a in sorted(df.arrival.unique())]


@FIGURES.figure("latency_load", records=("load",), title="latency and throughput against offered load")
def latency_load(inputs: dict[str, list[Path]], out_png: Path) -> list[Path]:
    plotting.apply_style()
    df = _read(inputs["load"])
    col = plotting.colors(df.policy.unique())
    arr = _by_arrival(df[df.engine == "replay"])
    fig, axes = plt.subplots(2, len(arr), figsize=(5.5 * len(arr), 7.5), layout="constrained", squeeze=False)
    for j, (a, g) in enumerate(arr):
        for pol, gp in g.groupby("policy"):
            s = gp.groupby("offered_rps").median(numeric_only=True)
            for q, ls in (("p50_s", ":"), ("p95_s", "-"), ("p99_s", "--")):
                axes[0, j].plot(s.index, s[q] * 1e3, ls=ls, marker="o", ms=3, color=col[pol],
                                label=plotting.label_source(f"{pol} {q[:3]}", "emulated"))
            axes[1, j].plot(s.index, s.throughput_rps, marker="o", color=col[pol], label=f"_{pol} throughput")
        live = df[(df.engine == "live") & (df.arrival == a)]
        for pol, gl in live.groupby("policy"):
            axes[0, j].plot(gl.offered_rps, gl.p95_s * 1e3, marker="D", ms=9, ls="none", mec="k", mew=1.5,
                            color=col[pol], zorder=5, label=f"{pol} p95, live engine (measured)")
        lim = g.offered_rps.max()
        axes[1, j].plot([0, lim], [0, lim], color="0.6", lw=0.8, ls=":", label="_offered")
        axes[0, j].set(yscale="log", xlabel="offered load (requests/s)", ylabel="latency from intended arrival (ms)",
                       title=f"{a} arrivals")
        axes[0, j].yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
        axes[0, j].yaxis.set_minor_formatter(plt.NullFormatter())
        axes[1, j].set(xlabel="offered load (requests/s)", ylabel="achieved throughput (requests/s)")
    plotting.legend_below(fig, ncol=3)
    cap = ("p50/p95/p99 latency (from each request's intended arrival) and achieved throughput against offered load, "
           "static against continuous batching, heterogeneous requests (classes of k and top-M), Poisson and bursty "
           f"arrivals; capacity {int(df.capacity.iloc[0])} slots, distance op {int(df.lanes.iloc[0])} lanes. Lines: "
           "replay of real searches with measured extend times, queueing simulated (emulated); median over seeds. "
           "Diamonds (black edge, drawn on top): the live engine at one load (measured). Bottom: achieved throughput, one "
           "line per policy in its colour; dotted: throughput = offered. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)


@FIGURES.figure("lanes", records=("load",), title="lane utilisation and extends per request")
def lanes(inputs: dict[str, list[Path]], out_png: Path) -> list[Path]:
    plotting.apply_style()
    df = _read(inputs["load"])
    df = df[df.engine == "replay"]
    col = plotting.colors(df.policy.unique())
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(16, 4), layout="constrained")
    ccols = sorted((c for c in df if c.startswith("lane_util_c")), key=lambda c: int(c[11:]))
    high = df[df.load_frac == df.load_frac.max()]
    for pol, g in high[high.arrival == high.arrival.iloc[0]].groupby("policy"):
        if ccols:
            a3.plot([int(c[11:]) for c in ccols], g[ccols].median().to_numpy(), marker="o", color=col[pol],
                    label=f"_{pol}c")
    if ccols:
        a3.axhline(0.9, color="0.5", ls=":", lw=1)
        a3.set(xscale="log", xlabel="lanes per launch of the distance op", ylabel="filled / launched lanes",
               ylim=(0, 1.02), title=f"what-if op size, load {high.load_frac.iloc[0]:g}, {high.arrival.iloc[0]}")
    else:
        plotting.not_run(a3, "no what-if op sizes in the records")
    for (pol, a), g in df.groupby(["policy", "arrival"]):
        s = g.groupby("load_frac").agg(u=("lane_util", "median"), lo=("lane_util", "min"), hi=("lane_util", "max"),
                                       e=("extends_mean", "median"))
        ls = "-" if a == "poisson" else "--"
        a1.errorbar(s.index, s.u, yerr=[s.u - s.lo, s.hi - s.u], ls=ls, marker="o", color=col[pol],
                    label=plotting.label_source(f"{pol}, {a}", "emulated"))
        k = sorted(df.policy.unique()).index(pol)
        a2.plot(s.index, s.e, ls=ls, marker=POLICY_MARKERS[k], ms=5 + 3 * k, mfc="none", mew=1.5, color=col[pol],
                label=f"_{pol}{a}")
    a1.axhline(0.9, color="0.5", ls=":", lw=1)
    a1.set(xlabel="offered load (fraction of estimated capacity)", ylabel="filled lanes / launched lanes",
           ylim=(0, 1.02), title="lane utilisation of the fixed-shape distance op")
    a2.set(xlabel="offered load (fraction of estimated capacity)", ylabel="extends per request (mean)",
           title="extends per request (same for every policy)", ylim=(0, None))
    plotting.legend_below(fig, ncol=2)
    cap = ("Lane utilisation of the fixed-shape distance operation (real distance tasks / lanes launched, "
           f"{int(df.lanes.iloc[0])} lanes per launch) and mean extends per request against offered load, static "
           "against continuous batching (extends per request are the same for both policies: same requests, "
           "batch-independent searches: the larger hollow markers are the second policy, on top of the first); dotted: a 90% "
           "utilisation reference (the harness's target). Right: the same extends' utilisation had "
           "the op been captured at another size (tasks per extend do not depend on it; its timing would). Replay "
           "of real searches (emulated serving, measured extend times); median over seeds, bars min-max. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)


POLICY_MARKERS = "osD^vP*X"


def _policy_medians(ax, df, x, c, col, scale=1.0, label=True) -> None:
    """One line per policy: the median of ``c`` over seeds against ``x``, bars min-max (emulated runs).
    Each policy has its own marker and a small sideways offset, so policies that coincide stay visible."""
    pols = sorted(df.policy.unique())
    xs = np.sort(df[x].unique())
    step = float(np.min(np.diff(xs))) if len(xs) > 1 else 1.0
    for i, pol in enumerate(pols):
        s = df[df.policy == pol].groupby(x)[c].agg(["median", "min", "max"]) * scale
        dx = (i - (len(pols) - 1) / 2) * 0.12 * step
        ax.errorbar(s.index + dx, s["median"], yerr=[s["median"] - s["min"], s["max"] - s["median"]],
                    marker=POLICY_MARKERS[i % len(POLICY_MARKERS)], ms=6, mew=1.5, mfc="none" if i % 2 else None,
                    capsize=2,
                    color=col.get(pol, "0.3"), label=plotting.label_source(pol, "emulated") if label else None)


@FIGURES.figure("scheduler", records=("sched",), title="stage-aware scheduling against baselines")
def scheduler_fig(inputs: dict[str, list[Path]], out_png: Path) -> list[Path]:
    plotting.apply_style()
    df = _read(inputs["sched"])
    runs, ctl = df[df.row == "run"], df[df.row == "control"]
    col = plotting.colors(runs.policy.unique())
    fig, grid = plt.subplots(2, 3, figsize=(14, 7.5), layout="constrained")
    axes = grid.ravel()
    axes[5].axis("off")
    panels = [("pre_p95_wait_s", "prefill p95 wait (ms), TTFT proxy", 1e3),
              ("pre_within_deadline", "share of prefill within deadline", 1),
              ("dec_stall_fraction", "decode stall fraction", 1), ("tokens_per_s", "emulated decode tokens/s", 1)]
    for ax, (c, title, k) in zip(axes, panels):
        _policy_medians(ax, runs, "total_load", c, col, scale=k)
        ax.set(xlabel="offered load (prefill + decode, x capacity)", title=title)
    axes[0].axhline(runs.deadline_s.iloc[0] * 1e3, color="0.5", ls=":", lw=1)
    axes[1].axhline(0.99, color="0.5", ls=":", lw=1)
    if len(ctl):
        groups = list(ctl[ctl.repeat == 0].groupby("total_load"))
        cmap = plt.cm.viridis   # loads, not policies: a sequential map (policy colours are taken)
        for i, (load, g) in enumerate(groups):
            axes[4].plot(g.t_s, g.r, marker=".", color=cmap(0.85 * i / max(1, len(groups) - 1)),
                         label=f"_r at load {load:.2f}")
        axes[4].set(xlabel="emulated time (s)", ylabel="prefill share r",
                    title="trinity control loop: r (seed 0)")
        from matplotlib.lines import Line2D
        axes[5].legend([Line2D([], [], color=cmap(0.85 * i / max(1, len(groups) - 1)), marker=".")
                        for i in range(len(groups))], [f"offered load {load:.2f}" for load, _ in groups],
                       title="control loop panel", loc="center", fontsize="small")
    else:
        plotting.not_run(axes[4], "trinity policy not in the profile")
    plotting.legend_below(fig, grid[0][0], ncol=5)
    cap = ("Prefill retrievals (open loop, deadline L_pre,max, dotted in the first panel) and decode streams (a "
           "retrieval every delta tokens, stalled until it returns) through one FIFO queue, strict prefill or decode "
           "priority, Trinity with a fixed r, and Trinity with its control loop. Emulated LLM stages over a replay "
           "of real searches with measured extend times; median over seeds, bars min-max; each policy has its own marker and a small "
           "sideways offset, so policies that coincide (fixed r and strict prefill priority often equal Trinity) stay "
           "visible. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)


PARAM_LABELS = {"r_min": "r_min (least prefill share)", "r_max": "r_max (most prefill share)",
                "tau_pre_ms": "τ_pre (ms)", "delta_tokens": "δ, retrieval interval (tokens)",
                "deadline_factor": "L_pre,max (x full-occupancy search time)", "control_ms": "control period (ms)"}


@FIGURES.figure("sched_sweep", records=("sched",), title="scheduler parameters swept one at a time")
def sched_sweep_fig(inputs: dict[str, list[Path]], out_png: Path) -> list[Path]:
    plotting.apply_style()
    df = _read(inputs["sched"])
    sw = df[df.row == "sweep"] if "row" in df else df.iloc[:0]
    col = plotting.colors(df[df.row == "run"].policy.unique())   # the scheduler figure's colours
    params = list(dict.fromkeys(sw.sweep_param)) if len(sw) else []
    fig, axes = plt.subplots(2, max(1, len(params)), figsize=(3.6 * max(1, len(params)) + 1, 6.2),
                             layout="constrained", squeeze=False, sharey="row")
    if not params:
        for ax in axes.ravel():
            plotting.not_run(ax, "no scheduler.sweep.params in the profile")
        return plotting.save(fig, out_png, "Scheduler parameter sweep: not run (the profile sweeps nothing).")
    rows = [("pre_within_deadline", "share of prefill within deadline"), ("dec_stall_fraction", "decode stall fraction")]
    for j, name in enumerate(params):
        g = sw[sw.sweep_param == name]
        for i, (c, ylabel) in enumerate(rows):
            ax = axes[i, j]
            _policy_medians(ax, g, "sweep_value", c, col, label=j == 0 and i == 0)
            ax.set(xlabel=PARAM_LABELS.get(name, name), ylabel=ylabel if j == 0 else None)
        axes[0, j].axhspan(0.99, 1.0, color="0.85", zorder=0, lw=0)
        axes[0, j].set_title(f"{PARAM_LABELS.get(name, name).split(' (')[0]} (load {g.load_frac.iloc[0]:.2f})",
                             fontsize="small")
    axes[0, 0].set_ylim(0, 1.03)
    axes[1, 0].set_ylim(0, max(0.05, float(sw.dec_stall_fraction.max()) * 1.15))
    plotting.legend_below(fig, ncol=5)
    cap = (f"Scheduler parameters the paper leaves open, swept one at a time ({', '.join(params)}; the others as "
           f"configured) at prefill load {sw.load_frac.iloc[0]:.2f} of capacity plus the decode share: top, share of "
           f"prefill retrievals within L_pre,max (grey band: the 0.99 target and above); bottom, decode stall fraction. Median "
           f"over {sw.repeat.nunique()} seeds, bars min-max. Emulated LLM stages over a replay of real searches "
           f"with measured extend times. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)

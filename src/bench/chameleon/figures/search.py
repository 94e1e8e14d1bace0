"""Chameleon section 6.2 figures: Figure 9 (search latency per batch size) and throughput.

Our runs (the profile's datasets, e.g. 20k vectors) and the authors' (1B vectors) are never on one
absolute axis: ours are drawn in absolute units in their own panel, and both are compared as speed-ups
over their own CPU baseline (the authors' 8-core CPU, 16 cores for RALM-L)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...core.judging import intervals
from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis, paper_values
from ._draw import dataset_order, label, log_dots, nice_log_limits, not_run_text, plain_log_ticks, where

PAPER_CPU = {"SIFT1000M": "8CPU", "Deep1000M": "8CPU", "RALM-S1000M": "8CPU", "RALM-L1000M": "16CPU"}
PAPER_MARK = {"fpga-cpu": "P", "fpga-gpu": "*"}
PAPER_LINE = {"fpga-cpu": "-", "fpga-gpu": ":"}
PAPER_SCALE = "1B vectors"


def paper_arch(pds: str, config: str) -> str:
    """The authors' arch of our configuration on their dataset (RALM-L needs two memory nodes)."""
    n = 2 if pds == "RALM-L1000M" else 1
    return {"fpga-cpu": f"{n}FPGA-8CPU", "fpga-gpu": f"{n}FPGA-1GPU"}.get(config, PAPER_CPU.get(pds, "8CPU"))


def _scale(g: pd.DataFrame) -> str:
    n = int(g.n_base.iloc[0]) if "n_base" in g and g.n_base.notna().any() else None
    return f"{n / 1000:g}k vectors" if n else "the profile's scale"


def _paper_speedups(pds: str) -> dict[str, pd.Series]:
    pl = paper_values.latency()
    p = pl[pl.dataset == pds]
    base = p[p.arch == PAPER_CPU.get(pds)].set_index("batch_size").median_ms
    return {c: (base / p[p.arch == paper_arch(pds, c)].set_index("batch_size").median_ms).dropna()
            for c in PAPER_MARK}


def _batch_axis(ax, batches) -> None:
    ax.set(xscale="log", yscale="log", xlabel="batch size")
    plain_log_ticks(ax.yaxis)
    ax.set_xticks(sorted(batches), [str(b) for b in sorted(batches)])
    ax.xaxis.set_minor_locator(plt.NullLocator())


def _speedup_panel(ax, df: pd.DataFrame, g: pd.DataFrame, col: dict) -> None:
    """Our speed-ups over our CPU baseline at our scale, as the ledger rows judge them: per batch size the
    median batch latency of CPU over the configuration's, with the row's interval (a bootstrap over the
    fresh processes, then the batches; ``analysis.speedup_cells``). The paper's are in their own panel."""
    for (cfg, lab), h in g[g.config != "cpu"].groupby(["config", "label"]):
        cells = analysis.speedup_cells(df[df.dataset == g.dataset.iloc[0]], cfg)
        if cells.empty:
            continue
        ax.errorbar(cells.batch_size, cells.ratio, yerr=[cells.ratio - cells.low, cells.high - cells.ratio],
                    marker="o", ms=4, capsize=2, color=col[lab], label=lab)
    ax.axhline(1, color="grey", lw=0.8)
    plotting.panel_scale(ax, _scale(g))
    _batch_axis(ax, g.batch_size.unique())
    ax.set_ylabel("speed-up over CPU (median latency)")


def _paper_panel(ax, pds: str | None, batches) -> None:
    """The authors' FPGA-CPU and FPGA-GPU speed-ups over their CPU at 1B vectors: a panel of their own, each
    marker at its batch size."""
    if not pds:
        plotting.not_run(ax, "no paper dataset for this one")
        return
    for c, s in _paper_speedups(pds).items():
        plotting.paper_marks(ax, s.index, s.values,
                             plotting.label_source(f"{c.upper()} over CPU ({PAPER_SCALE})", "paper"),
                             scale=PAPER_SCALE, marker=PAPER_MARK[c], linestyle=PAPER_LINE[c], linewidth=1)
    ax.axhline(1, color="grey", lw=0.8)
    plotting.panel_scale(ax, PAPER_SCALE)
    _batch_axis(ax, batches)


def _latency_dots(ax, g: pd.DataFrame, order: list, col: dict) -> None:
    """Every timed batch as a small dot (hollow: still preempted after its reruns), the median as a large one
    and min-max as a bar, per batch size and configuration side by side (a violin of a modelled series with
    no spread collapses to a hairline)."""
    labs = sorted(g.label.unique())
    w = 0.8 / max(len(labs), 1)
    rng = np.random.default_rng(0)
    pre = g.preempted.fillna(False).astype(bool) if "preempted" in g else pd.Series(False, index=g.index)
    for j, lab in enumerate(labs):
        for i, b in enumerate(order):
            sel = (g.label == lab) & (g.batch_size == b)
            v = g[sel].latency_ms.to_numpy(float)
            if not v.size:
                continue
            x = i + (j - (len(labs) - 1) / 2) * w
            xs = x + rng.uniform(-w / 4, w / 4, v.size)
            hollow = pre[sel].to_numpy(bool)
            ax.plot(xs[~hollow], v[~hollow], ".", ms=3, alpha=0.45, color=col[lab])
            if hollow.any():
                ax.plot(xs[hollow], v[hollow], "o", ms=4, mfc="none", color=col[lab])
                if PREEMPTED_LABEL not in ax.get_legend_handles_labels()[1]:   # one grey key for every colour
                    ax.plot([], [], "o", ms=4, mfc="none", color="0.35", label=PREEMPTED_LABEL)
            ax.errorbar(x, np.median(v), yerr=[[np.median(v) - v.min()], [v.max() - np.median(v)]], fmt="o",
                        ms=6, color=col[lab], ecolor=col[lab], capsize=2, label=lab if i == 0 else None)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_xticks(range(len(order)), [str(b) for b in order])


PREEMPTED_LABEL = "a batch still preempted after its reruns (hollow)"


def _preempted_text(lat: pd.DataFrame) -> str:
    if "preempted" not in lat:
        return ""
    n = int(lat.preempted.fillna(False).astype(bool).sum())
    reruns = int(lat.batch_reruns.fillna(0).sum()) if "batch_reruns" in lat else 0
    return (f"{reruns} timed batches were run again because another process took a core from one of our threads "
            f"during them; {n} of {len(lat)} stayed preempted after their reruns and are drawn hollow.")


@figure("fig9", records=("search",), title="Figure 9: vector-search latency per batch size",
        claims=("fpga-cpu-vs-cpu-latency", "fpga-gpu-vs-cpu-latency", "cpu-gpu-vs-cpu-latency"))
def fig9(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["search"]
    prov = df.attrs["provenance"]
    lat = analysis.search_latency(df).copy()
    lat["label"] = [label(c, s) for c, s in zip(lat.config, lat.source)]
    col = plotting.colors(lat.label)
    dsets = dataset_order(lat.dataset, prov)
    fig, axes = plotting.start(3, len(dsets), w=4, h=3.4 + 1 / len(dsets),
                               gridspec_kw={"width_ratios": [1.5, 1, 1]})
    for a1, a2, a3, ds in zip(axes[0::3], axes[1::3], axes[2::3], dsets):
        g = lat[lat.dataset == ds]
        pds = paper_values.paper_dataset(ds)
        order = sorted(g.batch_size.unique())
        _latency_dots(a1, g, order, col)
        a1.set(xlabel="batch size", ylabel="latency per batch (ms)")
        a1.set_title(f"{ds}: ours, {_scale(g)}", fontsize="medium")
        _speedup_panel(a2, df, g, col)
        a2.set_title("ours: speed-up over CPU", fontsize="medium")
        _paper_panel(a3, pds, g.batch_size.unique())
        a3.set_title(f"paper: {pds}, {PAPER_SCALE}", fontsize="medium")
        lo, hi = zip(a2.get_ylim(), a3.get_ylim())   # one y range for ours and the paper's, side by side
        for a in (a2, a3):
            a.set_ylim(min(lo), max(hi))
    plotting.legend_below(fig, ncol=3)
    counts = [intervals.n_processes(g[g.config == "cpu"]) for _, g in lat.groupby("dataset")]
    return plotting.save(fig, out_png, FIG9_CAPTION.format(
        not_run=not_run_text(df), where=where(prov), preempted=_preempted_text(lat),
        processes=f"{min(counts)} fresh process{'es' if min(counts) != 1 else ''}" if counts else "the processes"))


FIG9_CAPTION = (
    "Figure 9 (reproduced): vector-search latency per batch. The paper (section 6.2): 'Each white dot in the "
    "violin plots denotes a median latency'; its speed-ups, and the ledger rows', are ratios of those medians. "
    "Left: ours, every timed batch (small dots), the median (large dot) and min-max (bar) per dataset, batch "
    "size and configuration, at our scale (the profile's datasets). Middle: what the ledger rows judge: the "
    "median batch latency of our CPU baseline over each configuration's at the same batch size, with the row's "
    "95% interval (a bootstrap over {processes}, then the batches of each). Right, in a panel of their own at "
    "the same y range: the authors' speed-ups at their 1B-vector scale (FPGA-CPU and FPGA-GPU over their 8-core "
    "CPU, 16 cores for RALM-L), each marker at its batch size. Absolute values are not compared across scales. "
    "FPGA-CPU and FPGA-GPU are modelled (our measured index scan + the ChamVS node model + the authors' "
    "per-batch host cost). {preempted} The authors' CPU-GPU ran CPU-only (a defect of their code) and is not "
    "drawn. {not_run} {where}.")


def _paper_throughput_panel(ax, dsets: list) -> None:
    """The authors' FPGA-CPU and FPGA-GPU throughput over their CPU's (1B vectors): a panel of their own, the two
    configurations in their own slots of each dataset (slot positions declared, as our bars' are)."""
    pt = paper_values.throughput()
    cfgs = list(PAPER_MARK)
    w = 0.8 / len(cfgs)
    for j, c in enumerate(cfgs):
        xs, ys = [], []
        for i, ds in enumerate(dsets):
            pds = paper_values.paper_dataset(ds)
            p = pt[pt.dataset == pds].set_index("arch").median_qps
            arch = paper_arch(pds or "", c)
            if pds and arch in p and PAPER_CPU.get(pds) in p:
                xs.append(i + (j - (len(cfgs) - 1) / 2) * w)
                ys.append(p[arch] / p[PAPER_CPU[pds]])
        plotting.paper_marks(ax, xs, ys, plotting.label_source(f"{c.upper()} over CPU ({PAPER_SCALE})", "paper"),
                             scale=PAPER_SCALE, marker=PAPER_MARK[c], markersize=12)
    plotting.panel_scale(ax, PAPER_SCALE)


@figure("throughput", records=("search",), title="vector-search throughput, speed-up over CPU")
def throughput(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["search"]
    prov = df.attrs["provenance"]
    t = analysis.search_throughput(df)
    med = analysis.throughput_medians(df)
    med["label"] = [label(c, s) for c, s in zip(med.config, med.source)]
    col = plotting.colors(med.label)
    dsets = dataset_order(med.dataset, prov)
    fig, (a1, a2, a3) = plotting.start(3, w=4, h=4.2)
    labs = sorted(med.label.unique())
    w = 0.8 / max(len(labs), 1)
    for j, lab in enumerate(labs):
        m = med[med.label == lab].set_index("dataset").reindex(dsets)
        x = np.arange(len(dsets)) + (j - (len(labs) - 1) / 2) * w
        cpu = med[med.config == "cpu"].set_index("dataset").qps.reindex(dsets)
        log_dots(a1, x, m.qps, color=col[lab], label=lab)
        a2.bar(x, m.qps / cpu, w, color=col[lab])
    plotting.panel_scale(a2, _scale(t))
    _paper_throughput_panel(a3, dsets)
    nice_log_limits(a1, med.qps)   # every value between two labelled ticks
    a1.set(ylabel="queries/s (median of runs)", title=f"ours: {int(t.batch_size.iloc[0])} queries, one batch, "
           f"{_scale(t)}")
    a2.set(ylabel="speed-up over CPU (queries/s ratio)", title=f"ours: speed-up over CPU, {_scale(t)}")
    a3.set(title=f"paper: speed-up over CPU, {PAPER_SCALE}")
    top = 1.08 * max(a2.get_ylim()[1], a3.get_ylim()[1])
    for a in (a2, a3):   # one y range for ours and the paper's, side by side
        a.axhline(1, color="grey", lw=0.8)
        a.set_ylim(0, top)
    names = {a3: [paper_values.paper_dataset(ds) or ds for ds in dsets]}
    for a in (a1, a2, a3):
        a.set_xticks(np.arange(len(dsets)), names.get(a, dsets), rotation=20)
        a.set_xlim(-0.6, len(dsets) - 0.4)
    plotting.legend_below(fig, ncol=3)
    cap = (f"Vector-search throughput. Left: ours in queries/s (all queries in one batch, median of runs) at our "
           f"scale. Middle: each configuration's throughput over our CPU baseline (bars). Right, in a panel of "
           f"their own at the same y range: the authors' (FPGA-CPU and FPGA-GPU over their 8-core CPU, 16 cores "
           f"for RALM-L; 1B vectors, 10,000-query batches), each in its slot of the dataset. "
           f"The authors' 8CPU-1GPU ran CPU-only (defect "
           f"in their code) and is not drawn. "
           f"FPGA-CPU and FPGA-GPU modelled. {not_run_text(df)} {where(prov)}.")
    return plotting.save(fig, out_png, cap)



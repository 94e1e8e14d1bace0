"""Chameleon section 6.2 figures: Figure 9 (search latency per batch size) and throughput.

Our runs (the profile's datasets, e.g. 20k vectors) and the authors' (1B vectors) are never on one
absolute axis: ours are drawn in absolute units in their own panel, and both are compared as speed-ups
over their own CPU baseline (the authors' 8-core CPU, 16 cores for RALM-L)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...core import plotting
from ...core.figures import figure
from .. import analysis, paper_values
from ._draw import (dataset_order, label, log_dots, nice_log_limits, not_run_text, paper_point, plain_log_ticks,
                    where)

PAPER_CPU = {"SIFT1000M": "8CPU", "Deep1000M": "8CPU", "RALM-S1000M": "8CPU", "RALM-L1000M": "16CPU"}
PAPER_MARK = {"fpga-cpu": "P", "fpga-gpu": "*"}
PAPER_DX_PT = {"fpga-cpu": -6.0, "fpga-gpu": 6.0}   # the two authors' markers at one x, drawn apart (points)


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


def _speedup_panel(ax, g: pd.DataFrame, col: dict, pds: str | None) -> None:
    med = g.groupby(["label", "batch_size"]).latency_ms.median()
    cpu = g[g.config == "cpu"].groupby("batch_size").latency_ms.median()
    for lab in med.index.get_level_values(0).unique():
        s = cpu / med[lab]
        ax.plot(s.index, s.values, marker="o", color=col[lab], label=lab)
    if pds:
        for c, s in _paper_speedups(pds).items():
            paper_point(ax, s.index, s.values, f"{c.upper()} over CPU (1B vectors)", PAPER_MARK[c], PAPER_DX_PT[c])
    ax.axhline(1, color="grey", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="batch size", ylabel="speed-up over CPU (median latency)")
    plain_log_ticks(ax.yaxis)
    ax.set_xticks(sorted(g.batch_size.unique()), [str(b) for b in sorted(g.batch_size.unique())])
    ax.xaxis.set_minor_locator(plt.NullLocator())


def _latency_dots(ax, g: pd.DataFrame, order: list, col: dict) -> None:
    """Every timed batch as a small dot, the median as a large one and min-max as a bar, per batch size and
    configuration side by side (a violin of a modelled series with no spread collapses to a hairline)."""
    labs = sorted(g.label.unique())
    w = 0.8 / max(len(labs), 1)
    rng = np.random.default_rng(0)
    for j, lab in enumerate(labs):
        for i, b in enumerate(order):
            v = g[(g.label == lab) & (g.batch_size == b)].latency_ms.to_numpy(float)
            if not v.size:
                continue
            x = i + (j - (len(labs) - 1) / 2) * w
            ax.plot(x + rng.uniform(-w / 4, w / 4, v.size), v, ".", ms=3, alpha=0.45, color=col[lab])
            ax.errorbar(x, np.median(v), yerr=[[np.median(v) - v.min()], [v.max() - np.median(v)]], fmt="o",
                        ms=6, color=col[lab], ecolor=col[lab], capsize=2, label=lab if i == 0 else None)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_xticks(range(len(order)), [str(b) for b in order])


@figure("fig9", records=("search",), title="Figure 9: vector-search latency per batch size")
def fig9(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["search"]
    prov = df.attrs["provenance"]
    lat = analysis.search_latency(df).copy()
    lat["label"] = [label(c, s) for c, s in zip(lat.config, lat.source)]
    col = plotting.colors(lat.label)
    dsets = dataset_order(lat.dataset, prov)
    fig, axes = plotting.start(2, len(dsets), w=6, h=3.4 + 1 / len(dsets), gridspec_kw={"width_ratios": [1.6, 1]})
    for a1, a2, ds in zip(axes[0::2], axes[1::2], dsets):
        g = lat[lat.dataset == ds]
        pds = paper_values.paper_dataset(ds)
        order = sorted(g.batch_size.unique())
        _latency_dots(a1, g, order, col)
        a1.set(xlabel="batch size", ylabel="latency per batch (ms)")
        a1.set_title(f"{ds}: ours, {_scale(g)}", fontsize="medium")
        _speedup_panel(a2, g, col, pds)
        a2.set_title(f"speed-up over CPU: ours ({_scale(g)}) and paper ({pds}, 1B)", fontsize="medium")
    plotting.legend_below(fig, ncol=3)
    return plotting.save(fig, out_png, FIG9_CAPTION.format(not_run=not_run_text(df), where=where(prov)))


FIG9_CAPTION = (
    "Figure 9 (reproduced): vector-search latency per batch. Left: ours, every timed batch (small dots), the median "
    "(large dot) and min-max (bar) per dataset, batch size and configuration, at our scale (the profile's "
    "datasets). Right: speed-up of each configuration over the CPU baseline at the same batch size (median "
    "latencies): ours (lines) beside the authors' (markers, their 1B-vector datasets: FPGA-CPU and FPGA-GPU over "
    "their 8-core CPU, 16 cores for RALM-L; drawn 6 points left and right of their batch size so they stay "
    "apart). Absolute values are not compared across scales. fpga-* are modelled "
    "(measured index scan + node model + the authors' per-batch host cost). The authors' CPU-GPU ran CPU-only (a "
    "defect of their code) and is not drawn. {not_run} {where}.")


def _paper_throughput_speedups(ax, dsets: list, labs: list, w: float) -> None:
    """The authors' FPGA-CPU and FPGA-GPU throughput over their CPU's, beside our bar of the same configuration."""
    pt = paper_values.throughput()
    fpga = label("fpga-cpu", "modelled")
    for i, ds in enumerate(dsets):
        pds = paper_values.paper_dataset(ds)
        p = pt[pt.dataset == pds].set_index("arch").median_qps
        for c, mk in PAPER_MARK.items():
            arch = paper_arch(pds or "", c)
            if pds and arch in p and PAPER_CPU.get(pds) in p:
                # over our fpga-cpu bar, the two 12 points apart; else either side of the dataset's centre
                x = i + (labs.index(fpga) - (len(labs) - 1) / 2) * w if fpga in labs else i
                paper_point(ax, [x], [p[arch] / p[PAPER_CPU[pds]]], f"{c.upper()} over CPU (1B vectors)", mk,
                            PAPER_DX_PT[c] * (1 if fpga in labs else 3))


@figure("throughput", records=("search",), title="vector-search throughput, speed-up over CPU")
def throughput(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["search"]
    prov = df.attrs["provenance"]
    t = analysis.search_throughput(df)
    med = analysis.throughput_medians(df)
    med["label"] = [label(c, s) for c, s in zip(med.config, med.source)]
    col = plotting.colors(med.label)
    dsets = dataset_order(med.dataset, prov)
    fig, (a1, a2) = plotting.start(2, w=6, h=4.6)
    labs = sorted(med.label.unique())
    w = 0.8 / max(len(labs), 1)
    for j, lab in enumerate(labs):
        m = med[med.label == lab].set_index("dataset").reindex(dsets)
        x = np.arange(len(dsets)) + (j - (len(labs) - 1) / 2) * w
        cpu = med[med.config == "cpu"].set_index("dataset").qps.reindex(dsets)
        log_dots(a1, x, m.qps, color=col[lab], label=lab)
        a2.bar(x, m.qps / cpu, w, color=col[lab])
    _paper_throughput_speedups(a2, dsets, labs, w)
    nice_log_limits(a1, med.qps)   # every value between two labelled ticks
    a1.set(ylabel="queries/s (median of runs)", title=f"ours: all {int(t.batch_size.iloc[0])} "
           f"queries in one batch, {_scale(t)}")
    a2.set(ylabel="speed-up over CPU (queries/s ratio)", title="speed-up over CPU: ours and paper (1B, 10,000 queries)")
    a2.axhline(1, color="grey", lw=0.8)
    for a in (a1, a2):
        a.set_xticks(np.arange(len(dsets)), dsets)
    plotting.legend_below(fig, ncol=3)
    cap = (f"Vector-search throughput. Left: ours in queries/s (all queries in one batch, median of runs) at our "
           f"scale. Right: each configuration's throughput over the CPU baseline, ours (bars) and the authors' "
           f"(markers: FPGA-CPU and FPGA-GPU over their 8-core CPU, 16 cores for RALM-L; 1B vectors, "
           f"10,000-query batches; the two drawn a few points apart). The authors' 8CPU-1GPU ran CPU-only (defect "
           f"in their code) and is not drawn. "
           f"fpga-* modelled. {not_run_text(df)} {where(prov)}.")
    return plotting.save(fig, out_png, cap)



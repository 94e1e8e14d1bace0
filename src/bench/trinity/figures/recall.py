"""recall@k against queries/s (Trinity section 3.2, ann-benchmarks style): the extend engine beside faiss
HNSW and exact brute force, from the recall records."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from ._common import NO_PAPER, system_style, words


@figure("recall_qps", records=("recall",), title="recall@k against queries/s",
        claims=("target-vs-hnsw-*", "target-vs-exact-*"))
def recall_qps(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["recall"]
    m = analysis.searches(df)
    rcol = analysis.recall_column(m)
    datasets = sorted(m.dataset.unique())
    base = m.system.str.replace(r"-p\d+$", "", regex=True)   # engine-continuous-p2: continuous's colour, dashed
    fig, axes = plotting.start(len(datasets), w=5.5 + 2 / len(datasets), h=4.2)
    for ax, ds in zip(axes, datasets):
        for sysname, g in m[m.dataset == ds].groupby("system"):
            s = g.groupby("value").agg(qps=("qps", "median"), lo=("qps", "min"), hi=("qps", "max"), r=(rcol, "first"))
            pv = sysname != base[g.index[0]]
            st = system_style(base[g.index[0]])
            ax.errorbar(s.r, s.qps, yerr=[s.qps - s.lo, s.hi - s.qps], marker="s" if pv else st["marker"],
                        ls="--" if pv else "-", color=st["color"], mfc="none" if pv else st["mfc"],
                        zorder=4 if sysname.startswith("exact-") else 2,   # the anchor stays visible at recall 1
                        ms=11 if sysname.startswith("exact-") else 6,
                        label=words(sysname))
        ax.axvline(0.95, color="0.5", ls=":", lw=1)
        ax.set(yscale="log", xlabel=rcol.replace("recall_at_", "recall@"), ylabel="queries/s (median)", title=ds)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize="small")
    nr = df[df.source == "not_run"]
    if len(nr):   # systems with no curve: named in the figure, with why (a key with no entries, only its title)
        why = dict.fromkeys(f"{words(sysname)}: {w}" for sysname, w in zip(nr.system, nr.why.fillna("no reason recorded")))
        note = "\n".join(textwrap.fill(t, 48, subsequent_indent="  ") for t in why)
        fig.legend([], [], title=f"not run (no curve):\n{note}", loc="outside right lower", alignment="left",
                   title_fontproperties={"size": "small"})
    cap = (f"{rcol.replace('recall_at_', 'recall@')} against queries/s (ann-benchmarks style): the extend engine at "
           "batch 1, static and continuous batching sweeping top-M (dashed: continuous with more parents per extend), "
           "faiss IndexHNSWFlat sweeping efSearch, and exact brute force on the engine's device (one matmul + topk, "
           "recall 1: the anchor a graph engine must beat) and, where CUDA and cuvs are installed, cuVS CAGRA "
           "sweeping itopk (the reference curve), "
           f"same data and threads ({int(m.threads.iloc[0])}), {int(m.n_queries.max())} queries a run; median of "
           "the measured runs over the step's fresh processes, bars min-max; dotted: "
           "recall 0.95. " + "".join(f"Not run: {w}. " for w in nr.why) + NO_PAPER)
    return plotting.save(fig, out_png, cap)

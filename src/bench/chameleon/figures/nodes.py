"""Chameleon section 4.3: disaggregated memory nodes over TCP, coordinator wall time, slowest node, overhead
and the single-process scan per batch size; the fault-handling checks in the caption."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from ._draw import where

NODE_SERIES = {"wall_ms": "coordinator wall time", "node_max_ms": "slowest node's scan",
               "overhead_ms": "coordinator overhead (wall - slowest node)",
               "single_process_ms": "single-process scan of the same batch"}


@figure("nodes", records=("nodes",), title="disaggregated memory nodes over TCP",
        claims=("target-nodes-identical", "check-nodes-fault-handling"))
def nodes(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["nodes"]
    prov = df.attrs["provenance"]
    lat = analysis.node_latency(df)
    col = plotting.colors(NODE_SERIES.values())
    fig, (ax,) = plotting.start(w=7, h=4.6)
    for key, name in NODE_SERIES.items():
        g = lat.groupby("batch_size")[key]
        med, q1, q3 = g.median(), g.quantile(0.25), g.quantile(0.75)
        ax.errorbar(med.index, med, yerr=[med - q1, q3 - med], marker="o", capsize=3, color=col[name], label=name)
    bs = sorted(int(b) for b in lat.batch_size.unique())
    ax.set(xscale="log", yscale="log", xlabel="batch size (queries)", ylabel="ms per batch (median, IQR)")
    ax.set_xticks(bs, [str(b) for b in bs])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    plotting.legend_below(fig, ncol=2)
    cap = (f"Disaggregated memory nodes: {int(df.n_nodes.iloc[0])} node processes over TCP; coordinator wall time, "
           f"slowest node's scan, coordinator overhead (wall - slowest node) and the single-process scan of the "
           f"same batch. Checks (rows of kind check): "
           + "; ".join(f"{r.check}: {'pass' if r.passed else 'FAIL'}" for r in analysis.node_checks(df).itertuples())
           + f". {where(prov)}.")
    return plotting.save(fig, out_png, cap)

"""Chameleon section 3.2: the PQ scan of the same probed lists, the project's torch kernel against faiss;
GB/s per core against the paper's 1.0-1.2 GB/s per core."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from ._draw import dataset_order, not_run_text, where


@figure("scan", records=("scan",), title="torch PQ scan against faiss on the same lists",
        claims=("target-torch-scan-within-2x", "target-scan-gbps-per-core", "target-torch-scan-identical"))
def scan(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["scan"]
    prov = df.attrs["provenance"]
    d = analysis.scan_measured(df)
    dsets, impls = dataset_order(d.dataset, prov), sorted(d.impl.unique())
    col = plotting.colors(impls)
    fig, (a1, a2) = plotting.start(2, w=5, h=4.4)
    w = 0.8 / len(impls)
    for j, impl in enumerate(impls):
        g = d[d.impl == impl].groupby("dataset")
        x = np.arange(len(dsets)) + (j - (len(impls) - 1) / 2) * w
        s = g.seconds.agg(["median", "min", "max"]).reindex(dsets)
        a1.bar(x, s["median"], w, yerr=[s["median"] - s["min"], s["max"] - s["median"]], color=col[impl],
               label=f"{impl} (measured)", capsize=3)
        a2.bar(x, g.gbps_per_core.median().reindex(dsets), w, color=col[impl])
    a2.axhspan(1.0, 1.2, color=plotting.PAPER_COLOR, alpha=0.15, lw=0, zorder=0.5,   # behind the bars
               label=plotting.label_source("faiss about 1.0-1.2 GB/s per core (Xeon 8259CL)", "paper"))
    for a, yl in ((a1, "scan time (s, median, min-max)"), (a2, "PQ-code GB/s per core (median)")):
        a.set_axisbelow(True)   # grid lines behind the bars too
        a.set_xticks(np.arange(len(dsets)), dsets)
        a.set(ylabel=yl, xlabel="")
    plotting.legend_below(fig, ncol=3)
    cap = (f"PQ scan of the same probed lists: faiss search_preassigned vs the project's torch kernel (lookup "
           f"tables, gather-sum, top-K) on {int(d.threads.iloc[0])} thread(s), {int(d.n_queries.iloc[0])} queries "
           f"per dataset; GB/s counts m-byte PQ codes. The paper quotes about 1.0-1.2 GB/s per core for faiss "
           f"(band). {not_run_text(df, 'device')} {where(prov)}.")
    return plotting.save(fig, out_png, cap)

"""Chameleon section 3.2: the PQ scan of the same probed lists, the project's torch kernel against faiss;
GB/s per core against the paper's 1.0-1.2 GB/s per core."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.judging import intervals
from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from ._draw import dataset_order, not_run_text, where


IMPL_WORDS = {"faiss": "faiss", "torch": "our torch kernel"}


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
               label=f"{IMPL_WORDS.get(impl, impl)} (measured)", capsize=3)
        est = [intervals.bootstrap_ci(h.gbps_per_core, groups=analysis.clusters(h)) for _, h in
               d[d.impl == impl].groupby("dataset")]
        e = pd.DataFrame([tuple(v) for v in est], index=sorted(d[d.impl == impl].dataset.unique()),
                         columns=["est", "lo", "hi"]).reindex(dsets)
        a2.bar(x, e.est, w, yerr=[e.est - e.lo, e.hi - e.est], color=col[impl], capsize=3)
    f = d[d.impl == "faiss"]
    if len(f):
        pooled = intervals.bootstrap_ci(f.gbps_per_core, groups=analysis.clusters(f))
        a2.axhspan(pooled[1], pooled[2], facecolor="none", edgecolor="0.25", hatch="///", lw=0.8, zorder=0.6,
                   label=f"the ledger row: faiss, all datasets, {pooled[0]:.2f} [{pooled[1]:.2f}, {pooled[2]:.2f}]")
    a2.axhspan(1.0, 1.2, color=plotting.PAPER_COLOR, alpha=0.15, lw=0, zorder=0.5,   # behind the bars
               label=plotting.label_source("faiss about 1.0-1.2 GB/s per core (Xeon 8259CL)", "paper"))
    for a, yl in ((a1, "scan time (s, median, min-max)"), (a2, "PQ-code GB/s per core (median)")):
        a.set_axisbelow(True)   # grid lines behind the bars too
        a.set_xticks(np.arange(len(dsets)), dsets)
        a.set(ylabel=yl, xlabel="")
    a2.set_ylabel("PQ-code GB/s per core (median, 95% interval)")
    plotting.legend_below(fig, ncol=3)
    cap = (f"PQ scan of the same probed lists: faiss search_preassigned vs the project's torch kernel (lookup "
           f"tables, gather-sum, top-K) on {int(d.threads.iloc[0])} thread(s), {int(d.n_queries.iloc[0])} queries "
           f"per dataset; GB/s counts m-byte PQ codes. The paper (section 2.3): 'the throughput peaks at roughly "
           f"1 GB/s per core when scanning PQ codes (1.2 GB/s on Intel(R) Xeon(R) Platinum 8259CL)' (band). Right: "
           f"the median per dataset with its 95% interval (a bootstrap over the fresh processes, then the scans), "
           f"and, shaded grey, what the ledger row judges: faiss over all datasets, clustered by process and "
           f"dataset. {not_run_text(df, 'device')} {where(prov)}.")
    return plotting.save(fig, out_png, cap)

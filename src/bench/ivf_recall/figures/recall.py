"""Recall@k and queries/s against nprobe, drawn from the recall records only."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis

CAPTION = """IVF-PQ k-recall@k (k = {ks}) and queries/s against nprobe, per dataset ({datasets}), profile
``{profile}``. Measured on {cpu} with {threads} thread(s); queries/s is the median of {repeats}
measured runs of the whole query set in one batch (warm-up excluded), bars show min-max. Basis of
ESPN Figure 5 and of Chameleon's choice of nprobe; the papers report no value for these datasets at
this scale, so no paper value is drawn."""


@figure("recall_vs_nprobe", records=("recall",), title="recall and queries/s against nprobe",
        claims=("check-recall-rises-with-nprobe",))
def recall_vs_nprobe(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    prov = data["recall"].attrs["provenance"]
    df = analysis.measured(data["recall"])
    ks = [c.rsplit("_", 1)[1] for c in analysis.recall_columns(df)]
    rec, q = analysis.recall_long(df), analysis.qps(df)

    fig, (a1, a2) = plotting.start(2, w=5, h=4)
    from matplotlib.lines import Line2D

    # colour = recall@k, line style and marker = dataset; two titled legends below the panel
    styles = {ds: (["-", "--", ":", "-."][i % 4], ["o", "X", "s", "^", "D"][i % 5])
              for i, ds in enumerate(sorted(rec.dataset.unique()))}
    kcol = {k: plotting.COLORBLIND[i % 3] for i, k in enumerate(dict.fromkeys(rec.k))}
    for (k, ds), g in rec.groupby(["k", "dataset"], sort=False):
        g = g.sort_values("nprobe")
        a1.plot(g.nprobe, g.recall, ls=styles[ds][0], marker=styles[ds][1], ms=5, color=kcol[k], label=f"_{k} {ds}")
    a1.set(ylim=(0, 1.02), xlabel="nprobe", ylabel="k-recall@k", title="recall against nprobe")
    a1.set_xscale("log", base=2)
    first = a1.legend([Line2D([], [], color=c, lw=2) for c in kcol.values()], list(kcol), title="k", ncol=1,
                      fontsize="small", loc="upper left", bbox_to_anchor=(0, -0.16), frameon=False)
    a1.add_artist(first)
    a1.legend([Line2D([], [], color="0.3", ls=st[0], marker=st[1]) for st in styles.values()], list(styles),
              title="dataset", ncol=1, fontsize="small", loc="upper left", bbox_to_anchor=(0.5, -0.16), frameon=False)
    # datasets: the left panel's line styles and markers, in colours the recall@k series do not use
    markers = ["o", "X", "s", "^", "D"]
    for i, (ds, g) in enumerate(q.groupby("dataset")):
        a2.errorbar(g["nprobe"], g["median"], yerr=[g["median"] - g["min"], g["max"] - g["median"]],
                    marker=markers[i % len(markers)], ls=["-", "--", ":", "-."][i % 4], capsize=3,
                    color=plotting.COLORBLIND[3 + i % 7], label=plotting.label_source(ds, "measured"))
    a2.set_xscale("log", base=2)
    a2.set_yscale("log")
    a2.set(xlabel="nprobe", ylabel="queries/s (median)", title="throughput against nprobe")
    a2.legend(fontsize="small", loc="upper left", bbox_to_anchor=(0, -0.18), ncol=2)
    caption = CAPTION.format(ks=", ".join(ks), datasets=", ".join(sorted(df.dataset.unique())),
                             profile=prov.get("profile"), cpu=prov.get("cpu_model"),
                             threads=df.threads.iloc[0], repeats=int(df.groupby(["dataset", "nprobe"]).size().iloc[0]))
    return plotting.save(fig, out_png, caption)

"""ESPN Figure 7 (paper section 5.2): the prefetcher's hit rate against the prefetch step."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core import plotting
from ...core.figures import figure

from .. import analysis as A
from .. import paper_values as PV
from . import _shared as S


@figure("fig7", records=("hitrate",), title="prefetch hit rate against prefetch step")
def fig7(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["hitrate"]
    df = A.hitrate(df)
    g = df.groupby(["corpus", "nprobe", "rerank_n", "step"]).hit_rate.mean().reset_index()
    g["series"] = [f"ours: {c}, nprobe {e}, top {n}" for c, e, n in zip(g.corpus, g.nprobe, g.rerank_n)]
    col = plotting.colors(g.series)
    fig, (ax,) = plotting.start(w=7, h=4.5)
    for s, d in g.groupby("series", sort=False):
        ax.plot(d.step * 100, d.hit_rate * 100, marker="o" if "full" in s else "s", color=col[s], label=s,
                ls="-" if d.rerank_n.iloc[0] == g.rerank_n.max() else "--")
    pts = pd.DataFrame(PV.FIG7_POINTS, columns=["ds", "eta", "step", "hr"])
    marks = {("v1", 0): "*", ("v1", 1): "P", ("v2", 0): "o", ("v2", 1): "D"}
    for i, ((ds, eta), p) in enumerate(pts.groupby(["ds", "eta"], sort=True)):
        k = sorted(pts[pts.ds == ds].eta.unique()).index(eta)
        hollow = ({"markerfacecolor": "none", "markeredgewidth": 1.4, "markeredgecolor": plotting.PAPER_COLOR}
                  if ds == "v2" else {})
        ax.plot(p.step * 100 + (i - 1.5) * 1.5, p.hr * 100,   # set apart so none sits on another or on ours
                **{**plotting.PAPER_STYLE, "marker": marks[(ds, k)], "markersize": 13 if marks[(ds, k)] == "*" else 9,
                   "zorder": 6, **hollow},
                label=f"paper: MS MARCO {ds}, nprobe {eta} (section 5.2)")
    ax.set(xlabel="prefetch step (% of nprobe)", ylabel="hit rate (%)", title="Figure 7: prefetch hit rate")
    plotting.legend_below(fig, ncol=2)
    caption = ("Figure 7: fraction of the final top-n candidates that the prefetcher had read after step x nprobe "
               "lists. Dark markers: values stated in the paper's section 5.2 (MS MARCO v1, 8.8M passages, filled; v2, "
               "138M, hollow; one marker per nprobe, set a little apart where they coincide). Where the table is grown with synthetic filler records, the 'real passages only' curves "
               "use an index of the collection's passages alone (same list size, same fraction of lists probed).")
    return plotting.save(fig, out_png, caption) + S.table(g.drop(columns="series"), out_png)


"""ESPN Figure 7 (paper section 5.2): the prefetcher's hit rate against the prefetch step."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure

from .. import analysis as A
from .. import paper_values as PV
from . import _shared as S


PAPER_SCALE = {"v1": "MS MARCO v1, 8.8M passages", "v2": "MS MARCO v2, 138M passages"}
PAPER_LOOK = {("v1", 0): ("*", "-", 13), ("v1", 1): ("P", "--", 10), ("v2", 0): ("o", ":", 10),
              ("v2", 1): ("D", "-.", 9)}


def _paper_panel(ax) -> None:
    """The paper's section 5.2 hit rates in a panel of their own, each marker at its true step."""
    pts = pd.DataFrame(PV.FIG7_POINTS, columns=["ds", "eta", "step", "hr"])
    for (ds, eta), p in pts.groupby(["ds", "eta"], sort=True):
        k = sorted(pts[pts.ds == ds].eta.unique()).index(eta)
        mk, ls, size = PAPER_LOOK[(ds, k)]
        hollow = ({"markerfacecolor": "none", "markeredgewidth": 1.4, "markeredgecolor": plotting.PAPER_COLOR}
                  if ds == "v2" else {})
        plotting.paper_marks(ax, p.step * 100, p.hr * 100, f"paper: MS MARCO {ds}, nprobe {eta} (section 5.2)",
                             scale=PAPER_SCALE[ds], marker=mk, markersize=size, linestyle=ls, linewidth=1,
                             zorder=6, **hollow)
    plotting.panel_scale(ax, "MS MARCO")
    ax.set(xlabel="prefetch step (% of nprobe)", title="paper: MS MARCO v1 (8.8M), v2 (138M)", xlim=(0, 35))


@figure("fig7", records=("hitrate",), title="prefetch hit rate against prefetch step",
        claims=("hit-rate-over-90", "hit-rate-over-90-real-passages"))
def fig7(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["hitrate"]
    df = A.hitrate(df)
    g = df.groupby(["corpus", "nprobe", "rerank_n", "step"]).hit_rate.mean().reset_index()
    g["series"] = [f"ours: {c}, nprobe {e}, top {n}" for c, e, n in zip(g.corpus, g.nprobe, g.rerank_n)]
    col = plotting.colors(g.series)
    fig, (ax, pa) = plotting.start(2, w=5.2, h=4.5, sharey=True, gridspec_kw={"width_ratios": [1.5, 1]})
    for s, d in g.groupby("series", sort=False):
        ax.plot(d.step * 100, d.hit_rate * 100, marker="o" if "full" in s else "s", color=col[s], label=s,
                ls="-" if d.rerank_n.iloc[0] == g.rerank_n.max() else "--")
    plotting.panel_scale(ax, "our collection")
    _paper_panel(pa)
    ax.set(xlabel="prefetch step (% of nprobe)", ylabel="hit rate (%)", title="ours: prefetch hit rate")
    plotting.legend_below(fig, ncol=2)
    caption = ("Figure 7: fraction of the final top-n candidates that the prefetcher had read after step x nprobe "
               "lists. Left: ours. Right, in a panel of its own (another collection, another scale): the values "
               "stated in the paper's section 5.2 (MS MARCO v1, 8.8M passages, filled markers; v2, 138M, hollow; "
               "one line per nprobe), each at its true step; v1's two nprobes meet at 90% at 30%. Where the table "
               "is grown with synthetic filler records, the 'real passages only' curves use an index of the "
               "collection's passages alone (same list size, same fraction of lists probed).")
    return plotting.save(fig, out_png, caption) + S.table(g.drop(columns="series"), out_png)


"""Figure 2 of Trinity (section 3.1): three placements of the search GPUs, from the placement records
(an analytic model: modelled, not measured)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from ._common import NO_PAPER


NAMES = {"coupled": "coupled (one search device per LLM server)", "colocated_prefill": "co-located with prefill",
         "independent_pool": "independent search pool"}


@figure("fig2_placement", records=("placement",), title="Figure 2: three placements (modelled)",
        claims=("claim-independent-pool",))
def fig2_placement(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["placement"]
    col = plotting.colors(df.placement.unique())
    fig, axes = plotting.start(4, w=3.75, h=4)
    panels = [("search_devices", "search devices"), ("search_util", "search utilisation u(Q)"),
              ("prefill_latency_s", "prefill retrieval latency (ms)"), ("llm_gpus", "GPUs left for the LLM")]
    over = df[df.overloaded.astype(bool)] if "overloaded" in df else df.iloc[:0]
    for ax, (colname, title) in zip(axes, panels):
        for name, g in df.groupby("placement"):
            y = g[colname] * (1e3 if colname.endswith("_s") else 1)
            ax.plot(g.load_x_device, y, marker="o", color=col[name],
                    label=plotting.label_source(NAMES.get(name, name.replace("_", " ")), "modelled"))
        for r in over[over[colname].isna()].itertuples():   # overloaded, so no value here: say so where it would be
            ax.plot(r.load_x_device, 0.04, marker="x", ms=9, mew=2, color=col[r.placement], ls="none",
                    transform=ax.get_xaxis_transform(), clip_on=False, label="overloaded at this load (no value)")
        ax.set(xscale="log", xlabel="retrievals/s (x one device's throughput at its knee)", title=title)
        ticks = sorted(df.load_x_device.round(3).unique())
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
    plotting.legend_below(fig, ncol=3)
    cap = ("Figure 2 of Trinity as an analytic model (modelled, not measured): coupled (one search device per LLM "
           "server), co-located with prefill, and an independent pool sized at the knee of the measured search "
           f"roofline. Assumptions: {df.assumptions.iloc[0]}. The paper fixes one search GPU per LLM node (Figure 2a); "
           f"the cluster ({df.cluster.iloc[0] if 'cluster' in df else 'see the method'}) is ours, the paper states none. Utilisation is the Figure 1 fit on this machine's "
           "device (a CPU stand-in where no GPU ran). A cross just above the x axis: the placement is overloaded at that "
           "load, so it has no value there. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)

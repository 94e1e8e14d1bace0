"""Figure 1 of Trinity (section 2) measured on this machine: utilisation against batch size per stage with
the paper's fit u(X) = min(u_max, (X/X_sat)^alpha), from the roofline records."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from ..system import roofline
from ._common import NO_PAPER


def _unsaturated(m: pd.DataFrame, f: dict) -> str:
    """A warning where the stage has not saturated within the batches run: medians above the fitted
    plateau, or a throughput gain still rising at the largest batch."""
    above = [f"{x:g}" for x, u in m.u.items() if u > f["u_max"] * 1.02]
    gain = m.w / m.w.iloc[0]
    rising = len(gain) > 1 and gain.iloc[-1] > 1.05 * gain.iloc[-2]
    words = ([f"medians above the fitted u_max at X = {', '.join(above)}"] if above else []) + \
        (["gain still rising at the largest X (not saturated within the batches run)"] if rising else [])
    return f" ({'; '.join(words)})" if words else ""


@figure("fig1_roofline", records=("roofline",), title="Figure 1: utilisation against batch size",
        claims=("claim-saturation-search-vs-prefill", "claim-saturation-search-vs-decode"))
def fig1_roofline(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = analysis.measured(data["roofline"])
    col = plotting.colors(df.stage.unique())
    fig, (a1, a2) = plotting.start(2, w=7.5, h=4.2)
    notes = []
    for stage, m in analysis.stage_medians(df).groupby(level="stage"):
        m = m.droplevel("stage")
        f = analysis.stage_fit(m)
        lbl = f"{stage}: X_sat={f['x_sat']:.3g},\nalpha={f['alpha']:.2f}, knee={f['x_knee']:.3g}"
        a1.errorbar(m.index, m.u, yerr=[m.u - m.lo, m.hi - m.u], marker="o", ls="none", color=col[stage], label=lbl)
        xs = np.geomspace(m.index.min(), m.index.max(), 100)
        a1.plot(xs, roofline.u_model(xs, f["u_max"], f["x_sat"], f["alpha"]), color=col[stage], lw=1.2, ls="--")
        a2.plot(m.index, m.w / m.w.iloc[0], marker="o", color=col[stage], label=f"_{stage}")
        notes.append(f"{stage}: u_max={f['u_max']:.3g}, X_sat={f['x_sat']:.3g}, alpha={f['alpha']:.2f}, "
                     f"knee={f['x_knee']:.3g}" + _unsaturated(m, f))
    dev = str(df.device.iloc[0])
    proxy = "GPU" if dev.startswith("cuda") else "CPU proxy for GPU utilisation"
    a1.set(xscale="log", yscale="log", xlabel="batch size X (queries Q for search, sequences B for prefill/decode)",
           ylabel=f"u = FLOP/s / peak FLOP/s ({proxy})", title="utilisation; dashed: fit min(u_max, (X/X_sat)^alpha)")
    a2.set(xscale="log", yscale="log", xlabel="batch size X", ylabel="throughput / throughput at the smallest X",
           title="gain from batching (flat: saturated)")
    handles, labels = a1.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize="small")
    prov = data["roofline"].attrs["provenance"]
    cap = (f"Figure 1 of Trinity measured on this machine ({prov.get('cpu_model', 'CPU')}, device "
           f"{df.device.iloc[0]}): the extend engine (one extend with Q busy slots), and prefill/decode of the shared "
           f"random-weight Llama-architecture model (transformers, SDPA, static KV cache). Utilisation is achieved FLOP/s over a measured GEMM peak "
           f"{df.peak_flops.iloc[0] / 1e9:.1f} GFLOP/s on {dev} ({proxy}); points: median of the timed runs, bars "
           f"min-max. Right: each stage's throughput (search: distance tasks/s; LM: tokens/s) over its own value at "
           f"the smallest batch, so a plateau is where batching stops paying. Fits: "
           + "; ".join(notes) + ". " + NO_PAPER)
    return plotting.save(fig, out_png, cap)

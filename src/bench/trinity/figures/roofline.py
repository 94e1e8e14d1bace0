"""Figure 1 of Trinity (section 2) measured on this machine: utilisation against batch size per stage with
the paper's fit u(X) = min(u_max, (X/X_sat)^alpha), each stage's knee with the interval the ledger uses, the
knee ratios the saturation rows judge, and whether each stage saturated inside its sweep, by the same
statistics as the rows (:func:`..analysis.saturations`)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.judging import fidelity
from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from ..system import roofline
from ..verdicts import paper
from ._common import NO_PAPER, words

DEFAULTS = {"flat_bar": 0.1, "knee_boot": 50, "knee_factor": 2.0}   # the schema's, for records that do not say


def _judged_by(df: pd.DataFrame, name: str) -> float:
    """What the claims judged these records by (recorded by the roofline step; the schema's default before)."""
    return float(df[name].iloc[0]) if name in df else DEFAULTS[name]


def _state(s: analysis.Saturation, bar: float) -> str:
    g, lo, hi = s.gain
    if not np.isfinite(lo):
        flat = "gain at the end of the sweep not measured"
    else:
        verdict = "flattened" if hi <= bar else "still rising" if lo > bar else "undecided"
        flat = (f"{verdict}: gain per doubling {g:+.0%} [{lo:+.0%}, {hi:+.0%}] from batch {s.x_low:g} to "
                f"{s.x_top:g} over {s.gain.clusters} fresh processes (flat: below {bar:+.0%})")
    knee = "inside" if s.knee_inside else "outside (extrapolated)"
    return (f"{words(s.stage)}: knee {s.knee[0]:.3g} [{s.knee[1]:.3g}, {s.knee[2]:.3g}], {knee} the measured "
            f"batches {s.x_min:g}-{s.x_max:g}; plateau u_max {s.u_max:.2f}; {flat}")


def _curves(a1, a2, df: pd.DataFrame, sat: dict, col: dict) -> None:
    for stage, m in analysis.stage_medians(df).groupby(level="stage"):
        m, s = m.droplevel("stage"), sat[stage]
        f = s.fit
        a1.errorbar(m.index, m.u, yerr=[m.u - m.lo, m.hi - m.u], marker="o", ls="none", color=col[stage],
                    label=words(stage))
        xs = np.geomspace(m.index.min(), max(m.index.max(), s.knee[2]), 100)
        a1.plot(xs, roofline.u_model(xs, f["u_max"], f["x_sat"], f["alpha"]), color=col[stage], lw=1.2, ls="--",
                label="_fit")
        a1.errorbar([s.knee[0]], [f["u_max"]], xerr=[[s.knee[0] - s.knee[1]], [s.knee[2] - s.knee[0]]],
                    marker="|" if s.knee_inside else "x", ms=14, mew=2.5, color=col[stage], capsize=4, label="_knee")
        a2.plot(m.index, m.w / m.w.iloc[0], marker="o", color=col[stage], label=f"_{stage}")


def _ratios(ax, sat: dict, rp_factor: float, col: dict, judged: bool) -> None:
    """The saturation rows' quantity: |log2| of the search knee over the other stage's, with the ledger's
    interval, against the row's threshold."""
    for i, other in enumerate(("prefill", "decode")):
        if "search" not in sat or other not in sat:
            continue
        r, lo, hi = analysis.knee_ratio(sat["search"].knees, sat[other].knees, analysis.FLAT_LEVEL)
        ax.errorbar([i], [r], yerr=[[r - lo], [hi - r]], marker="D", ms=8, capsize=4, color=col[other], ls="none",
                    label="_ratio")
    ax.axhline(np.log2(rp_factor), color="0.3", ls=":", lw=1.4, label=f"knees {rp_factor:g}x apart (the rows' bar)")
    ax.set_xticks([0, 1], ["search vs\nprefill", "search vs\ndecode"])
    ax.set_xlim(-0.6, 1.6)
    ax.set(ylabel="|log2 knee ratio|", title="what the saturation rows judge" +
           ("" if judged else "\n(CPU stand-in: drawn, not judged)"))


@figure("fig1_roofline", records=("roofline",), title="Figure 1: utilisation against batch size",
        claims=("claim-saturation-search-vs-prefill", "claim-saturation-search-vs-decode"))
def fig1_roofline(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = analysis.measured(data["roofline"])
    sat = analysis.saturations(df, int(_judged_by(df, "knee_boot")), analysis.FLAT_LEVEL)
    col = plotting.colors(df.stage.unique())
    fig, (a1, a2, a3) = plotting.start(3, w=4.6, h=4.2)
    _curves(a1, a2, df, sat, col)
    dev = str(df.device.iloc[0])
    gpu = "gpu" in fidelity.ran_on(df)
    a1.axhline(1.0, color="0.5", lw=0.8, label="u = 1 (the GEMM peak)")
    a1.set(xscale="log", yscale="log", xlabel="batch size (queries for search, sequences for prefill and decode)",
           ylabel="u = FLOP/s / GEMM peak FLOP/s", title="utilisation; dashed: fit; bar at u_max: knee [interval]")
    a2.set(xscale="log", yscale="log", xlabel="batch size", ylabel="throughput / throughput at the smallest batch",
           title="gain from batching (flat: saturated)")
    bar = _judged_by(df, "flat_bar")
    _ratios(a3, sat, _judged_by(df, "knee_factor"), col, gpu)
    plotting.legend_below(fig, ncol=4)
    prov = data["roofline"].attrs.get("provenance", {})
    u_top = float(analysis.stage_medians(df).u.max())
    cap = (f"Figure 1 of Trinity measured on this machine ({prov.get('cpu_model', 'CPU')}, device {dev}"
           f"{'' if gpu else ': a CPU stand-in for the paper GPU, drawn beside the saturation rows, never judging them'}). "
           f"The paper (section 2): \"{paper.SATURATION}\". Ours: u = achieved FLOP/s over the device's GEMM peak, "
           f"the best of float32 n x n GEMMs of several sizes ({df.peak_flops.iloc[0] / 1e9:.1f} GFLOP/s, n = "
           f"{int(df.peak_n.iloc[0]) if 'peak_n' in df else '?'}); the highest median u here is {u_top:.2f}"
           + (" (above 1: the measured peak is not one)" if u_top > 1 else "") + ". Points: median of the timed "
           "runs, bars min-max; the bar at each plateau: the knee with the bootstrap interval the ledger uses (a cross: "
           "the knee lies outside the measured batches). Right: each stage's throughput over its own value at the "
           "smallest batch. Each stage, by the rows' own statistics: " + "; ".join(_state(s, bar) for s in sat.values())
           + f". {NO_PAPER}")
    return plotting.save(fig, out_png, cap)

"""The replay checked against the live engine (the method behind Trinity's serving rows, sections 3.2 and
3.3), from the trace records' check points: replay / live for each point, policy and quantity, one dot per
fresh trace process and the ledger's t-interval over them, against the harness's band."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from ..verdicts import replay
from ._common import NO_PAPER


@figure("replay_check", records=("trace",), title="the replay against the live engine",
        claims=("check-replay-vs-live",))
def replay_check(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    pairs = analysis.check_pairs(data["trace"])
    fig, (ax,) = plotting.start(1, w=10, h=4.6)
    if pairs.empty:
        plotting.not_run(ax, "no check points in the trace records (live check off)")
        return plotting.save(fig, out_png, "The replay against the live engine: not run (no check points).")
    points = replay.error_points(pairs)
    for i, (name, est, dots, _) in enumerate(points):
        yerr = [[est[0] - est[1]], [est[2] - est[0]]] if np.isfinite(est[1]) else None
        ax.errorbar([i], [est[0]], yerr=yerr, marker="D", ms=7, capsize=4, ls="none", color=plotting.COLORBLIND[0],
                    label="_c" if i else plotting.label_source("replay / live: geometric mean, t-interval over the "
                                                               "fresh processes", "measured"))
        ax.plot(np.full(len(dots), i + 0.2), dots, ls="none", marker="o", ms=4, color="0.45",
                label="_p" if i else "each fresh trace process")
    lo, hi = replay.BAND
    ax.axhspan(lo, hi, color="0.9", zorder=0, label=f"the harness's band: within {hi - 1:.0%}")
    ax.axhline(1.0, color="0.3", lw=0.8, label="_one")
    ax.set_xticks(range(len(points)), [p[0].replace(", ", "\n", 2) for p in points], fontsize="small")
    ax.set(yscale="log", ylabel="replay / live", title="the replay of traced searches against the live engine")
    plotting.legend_below(fig, ncol=3)
    n = pairs.process_uid.nunique()
    cap = ("The replay behind every serving row, checked against the live engine: in each of the trace step's "
           f"{n} fresh processes, right after tracing, the live engine (warmed) and the replay of that process's own "
           "trace served the same seeded arrivals at each check point; replay / live of each quantity (dots: each "
           "process; diamonds: geometric mean with its t-interval over the processes, the ledger's check row). The "
           "serving rows widen their intervals by the largest error the matching interval allows, so no difference "
           "smaller than the replay's error is judged. Measured live engine against the emulated replay. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)


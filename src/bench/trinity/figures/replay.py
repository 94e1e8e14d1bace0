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


def _tick(p: replay.Point) -> str:
    """A short two-line tick: the quantity, then the policy (the caption and the ledger name them whole)."""
    q = p.quantity.replace(" latency", "").replace("decode ", "").replace(" wait", "")
    return f"{q}\n{p.policy.replace(' batching', '')}"


@figure("replay_check", records=("trace",), title="the replay against the live engine",
        claims=("check-replay-vs-live",))
def replay_check(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    pairs = analysis.check_pairs(data["trace"])
    points = replay.error_points(pairs) if len(pairs) else []
    wheres = list(dict.fromkeys(p.where for p in points)) or ["-"]
    fig, axes = plotting.start(len(wheres), w=4.4, h=4.4, sharey=True)
    if not points:
        plotting.not_run(axes[0], "no check points in the trace records (live check off)")
        return plotting.save(fig, out_png, "The replay against the live engine: not run (no check points).")
    lo, hi = replay.BAND
    for ax, where in zip(axes, wheres):
        mine = [p for p in points if p.where == where]
        for i, p in enumerate(mine):
            est = p.estimate
            yerr = [[est[0] - est[1]], [est[2] - est[0]]] if np.isfinite(est[1]) else None
            ax.errorbar([i], [est[0]], yerr=yerr, marker="D", ms=7, capsize=4, ls="none", color=plotting.COLORBLIND[0],
                        label=plotting.label_source("replay / live: geometric mean, t-interval over the fresh "
                                                    "processes", "measured"))
            ax.plot(np.full(len(p.per_process), i + 0.22), p.per_process, ls="none", marker="o", ms=4, color="0.45",
                    label="each fresh trace process")
        ax.axhspan(lo, hi, color="0.88", zorder=0, label=f"the harness's band: within {hi - 1:.0%}")
        ax.axhline(1.0, color="0.3", lw=0.8, label="_one")
        ax.set_xticks(range(len(mine)), [_tick(p) for p in mine], fontsize="small")
        ax.set_xlim(-0.6, len(mine) - 0.4)
        ax.set(yscale="log", title=where)
    axes[0].set_ylabel("replay / live")
    plotting.legend_below(fig, ncol=3)
    n = pairs.process_uid.nunique()
    cap = ("The replay behind every serving row, checked against the live engine: in each of the trace step's "
           f"{n} fresh processes, right after tracing, the live engine (warmed) and the replay of that process's own "
           "trace served the same seeded arrivals at each check point; replay / live of each quantity (dots: each "
           "process; diamonds: geometric mean with its t-interval over the processes, the ledger's check row): p95 "
           "latency and throughput of static and continuous batching at each load point; decode tokens/s and the "
           "prefill p95 wait of FIFO and Trinity at the scheduler rows' load. The "
           "serving rows widen their intervals by the largest error the matching interval allows, so no difference "
           "smaller than the replay's error is judged. Measured live engine against the emulated replay. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)


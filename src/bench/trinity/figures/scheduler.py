"""Stage-aware scheduling against its baselines (Trinity section 3.3, Figure 4) and the scheduler's open
parameters swept one at a time, from the sched records (emulated LLM stages over a replay of real searches)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...core import plotting
from ...core.figures import figure
from .. import analysis
from ._common import NO_PAPER, POLICY_MARKERS


def _policy_medians(ax, df, x, c, col, scale=1.0, label=True) -> None:
    """One line per policy: the median of ``c`` over seeds against ``x``, bars min-max (emulated runs).
    Each policy has its own marker and a small sideways offset, so policies that coincide stay visible."""
    pols = sorted(df.policy.unique())
    xs = np.sort(df[x].unique())
    step = float(np.min(np.diff(xs))) if len(xs) > 1 else 1.0
    for i, pol in enumerate(pols):
        s = df[df.policy == pol].groupby(x)[c].agg(["median", "min", "max"]) * scale
        dx = (i - (len(pols) - 1) / 2) * 0.12 * step
        ax.errorbar(s.index + dx, s["median"], yerr=[s["median"] - s["min"], s["max"] - s["median"]],
                    marker=POLICY_MARKERS[i % len(POLICY_MARKERS)], ms=6, mew=1.5, mfc="none" if i % 2 else None,
                    capsize=2,
                    color=col.get(pol, "0.3"), label=plotting.label_source(pol, "emulated") if label else None)


@figure("scheduler", records=("sched",), title="stage-aware scheduling against baselines")
def scheduler_fig(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["sched"]
    runs, ctl = analysis.sched_runs(df), df[df.row == "control"]
    col = plotting.colors(runs.policy.unique())
    fig, axes = plotting.start(3, 2, w=14 / 3, h=3.75)
    axes[5].axis("off")
    panels = [("pre_p95_wait_s", "prefill p95 wait (ms), TTFT proxy", 1e3),
              ("pre_within_deadline", "share of prefill within deadline", 1),
              ("dec_stall_fraction", "decode stall fraction", 1), ("tokens_per_s", "emulated decode tokens/s", 1)]
    for ax, (c, title, k) in zip(axes, panels):
        _policy_medians(ax, runs, "total_load", c, col, scale=k)
        ax.set(xlabel="offered load (prefill + decode, x capacity)", title=title)
    axes[0].axhline(runs.deadline_s.iloc[0] * 1e3, color="0.5", ls=":", lw=1)
    axes[1].axhline(0.99, color="0.5", ls=":", lw=1)
    if len(ctl):
        groups = list(ctl[ctl.repeat == 0].groupby("total_load"))
        cmap = plt.cm.viridis   # loads, not policies: a sequential map (policy colours are taken)
        for i, (load, g) in enumerate(groups):
            axes[4].plot(g.t_s, g.r, marker=".", color=cmap(0.85 * i / max(1, len(groups) - 1)),
                         label=f"_r at load {load:.2f}")
        axes[4].set(xlabel="emulated time (s)", ylabel="prefill share r",
                    title="trinity control loop: r (seed 0)")
        from matplotlib.lines import Line2D
        axes[5].legend([Line2D([], [], color=cmap(0.85 * i / max(1, len(groups) - 1)), marker=".")
                        for i in range(len(groups))], [f"offered load {load:.2f}" for load, _ in groups],
                       title="control loop panel", loc="center", fontsize="small")
    else:
        plotting.not_run(axes[4], "trinity policy not in the profile")
    plotting.legend_below(fig, axes[0], ncol=5)
    cap = ("Prefill retrievals (open loop, deadline L_pre,max, dotted in the first panel) and decode streams (a "
           "retrieval every delta tokens, stalled until it returns) through one FIFO queue, strict prefill or decode "
           "priority, Trinity with a fixed r, and Trinity with its control loop. Emulated LLM stages over a replay "
           "of real searches with measured extend times; median over seeds, bars min-max; each policy has its own marker and a small "
           "sideways offset, so policies that coincide (fixed r and strict prefill priority often equal Trinity) stay "
           "visible. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)


PARAM_LABELS = {"r_min": "r_min (least prefill share)", "r_max": "r_max (most prefill share)",
                "tau_pre_ms": "τ_pre (ms)", "delta_tokens": "δ, retrieval interval (tokens)",
                "deadline_factor": "L_pre,max (x full-occupancy search time)", "control_ms": "control period (ms)"}


@figure("sched_sweep", records=("sched",), title="scheduler parameters swept one at a time")
def sched_sweep_fig(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["sched"]
    sw = df[df.row == "sweep"] if "row" in df else df.iloc[:0]
    col = plotting.colors(analysis.sched_runs(df).policy.unique())   # the scheduler figure's colours
    params = list(dict.fromkeys(sw.sweep_param)) if len(sw) else []
    n = max(1, len(params))
    fig, flat = plotting.start(n, 2, w=3.6 + 1 / n, h=3.1, sharey="row")
    axes = [flat[:n], flat[n:]]     # rows: share within deadline, decode stall fraction
    if not params:
        for ax in flat:
            plotting.not_run(ax, "no scheduler.sweep.params in the profile")
        return plotting.save(fig, out_png, "Scheduler parameter sweep: not run (the profile sweeps nothing).")
    rows = [("pre_within_deadline", "share of prefill within deadline"), ("dec_stall_fraction", "decode stall fraction")]
    for j, name in enumerate(params):
        g = sw[sw.sweep_param == name]
        for i, (c, ylabel) in enumerate(rows):
            ax = axes[i][j]
            _policy_medians(ax, g, "sweep_value", c, col, label=j == 0 and i == 0)
            ax.set(xlabel=PARAM_LABELS.get(name, name), ylabel=ylabel if j == 0 else None)
        axes[0][j].axhspan(0.99, 1.0, color="0.85", zorder=0, lw=0)
        axes[0][j].set_title(f"{PARAM_LABELS.get(name, name).split(' (')[0]} (offered load "
                             f"{g.total_load.iloc[0]:.2f}: prefill {g.load_frac.iloc[0]:.2f} + decode)", fontsize="small")
    axes[0][0].set_ylim(0, 1.03)
    axes[1][0].set_ylim(0, max(0.05, float(sw.dec_stall_fraction.max()) * 1.15))
    plotting.legend_below(fig, ncol=5)
    cap = (f"Scheduler parameters the paper leaves open, swept one at a time ({', '.join(params)}; the others as "
           f"configured) at prefill load {sw.load_frac.iloc[0]:.2f} of capacity plus the decode share: top, share of "
           f"prefill retrievals within L_pre,max (grey band: the 0.99 target and above); bottom, decode stall fraction. Median "
           f"over {sw.repeat.nunique()} seeds, bars min-max. Emulated LLM stages over a replay of real searches "
           f"with measured extend times. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)

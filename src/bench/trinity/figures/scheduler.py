"""Stage-aware scheduling against its baselines (Trinity section 3.3, Figure 4) and the scheduler's open
parameters swept one at a time, from the sched records (emulated LLM stages over a replay of real searches)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from ..verdicts import paper
from ._common import NO_PAPER, policy_colors, policy_style, words

TARGET = 0.99   # the share of prefill retrievals within the deadline the scheduler aims at
_EPS = 1e-3


def _nines(ax, where: str) -> None:
    """A y axis for a share within the deadline stretched towards 1 ("nines": 0, 0.9, 0.99 and 1 about
    evenly spaced), so the 0.99 target and points between it and 1 stay apart; the target dotted."""
    ax.set_yscale("function", functions=(lambda y: -np.log10(np.clip(1 + _EPS - y, _EPS / 10, None)),
                                         lambda z: 1 + _EPS - 10.0 ** -z))
    ax.set_ylim(-0.4, 1 + 0.6 * _EPS)   # room for the markers at 0 and at 1
    ax.set_yticks([0, 0.5, 0.9, 0.99, 1.0], ["0", "0.5", "0.9", "0.99", "1"])
    ax.yaxis.set_minor_locator(plt.NullLocator())
    ax.axhline(TARGET, color="0.2", ls=":", lw=1.4, zorder=1, label=f"target: {TARGET:g} within the deadline ({where})")


def _policy_medians(ax, df, x, c, col, scale=1.0, label=True) -> None:
    """One line per policy: the median of ``c`` over seeds against ``x``, bars min-max (emulated runs).
    Each policy has its own colour and marker (by name, the same in every figure) and a small sideways
    offset, so policies that coincide stay visible."""
    pols = sorted(df.policy.unique())
    xs = np.sort(df[x].unique())
    step = float(np.min(np.diff(xs))) if len(xs) > 1 else 1.0
    for i, pol in enumerate(pols):
        s = df[df.policy == pol].groupby(x)[c].agg(["median", "min", "max"]) * scale
        dx = (i - (len(pols) - 1) / 2) * 0.12 * step
        st = policy_style(pol)
        ax.errorbar(s.index + dx, s["median"], yerr=[s["median"] - s["min"], s["max"] - s["median"]],
                    marker=st["marker"], ms=6, mew=1.5, mfc=st["mfc"], capsize=2, color=col.get(pol, st["color"]),
                    label=plotting.label_source(words(pol), "emulated") if label else None)


def _judged(runs: pd.DataFrame, pairs: pd.DataFrame, axes) -> str:
    """The load the scheduler rows are judged at, marked in each panel, and what they read there (the same
    estimates as the ledger: :func:`..verdicts.scheduling.estimates`)."""
    from ..verdicts import scheduling

    load = runs.judged_load.iloc[0] if "judged_load" in runs else None
    if load is None or pd.isna(load):
        return "No listed load overloads the engine: the scheduler rows have no setting."
    at = runs[np.isclose(runs.load_frac, load)]
    tri, ff = at[at.policy == "trinity"], at[at.policy == "fifo"]
    if tri.empty or ff.empty:
        return "Trinity and FIFO were not both run at the judged load."
    total = float(at.total_load.iloc[0])
    for ax in axes[:4]:
        ax.axvline(total, color="0.75", lw=6, zorder=0, label="the load the ledger judges")
    est = scheduling.estimates(tri, ff, pairs)
    txt = {k: f"{e[0]:.3g} [{e[1]:.3g}, {e[2]:.3g}]" for k, (e, _, _) in est.items()}
    return (f"At the judged load (total {total:.2f} x capacity, grey band) the ledger reads, each interval over the "
            f"fresh trace processes and widened by the replay's error against the live engine: Trinity within the "
            f"deadline {txt['share']}, FIFO {txt['fifo_share']}; decode stall Trinity / FIFO {txt['stall']}; decode "
            f"tokens/s Trinity / FIFO {txt['tokens']}.")


@figure("scheduler", records=("sched", "trace"), title="stage-aware scheduling against baselines",
        claims=("claim-sched-ttft-without-starving", "target-sched-deadline", "target-sched-stall"))
def scheduler_fig(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["sched"]
    runs, ctl = analysis.sched_runs(df), df[df.row == "control"]
    col = policy_colors(runs.policy.unique())
    fig, axes = plotting.start(3, 2, w=14 / 3, h=3.75)
    axes[5].axis("off")
    panels = [("pre_p95_wait_s", "prefill p95 wait (ms), TTFT proxy", 1e3),
              ("pre_within_deadline", "share of prefill within deadline", 1),
              ("dec_stall_fraction", "decode stall fraction", 1), ("tokens_per_s", "emulated decode tokens/s", 1)]
    for ax, (c, title, k) in zip(axes, panels):
        _policy_medians(ax, runs, "total_load", c, col, scale=k)
        ax.set(xlabel="offered load (prefill + decode, x capacity)", title=title)
    axes[0].axhline(runs.deadline_s.iloc[0] * 1e3, color="0.5", ls="--", lw=1, zorder=1,
                    label="deadline L_pre,max (p95 wait panel)")
    judged = _judged(runs, analysis.check_pairs(data["trace"]), axes)
    _nines(axes[1], "share panel")
    plotting.legend_below(fig, ncol=4)
    if len(ctl):
        _control_panel(axes[4], axes[5], ctl[ctl.repeat == 0])
    else:
        plotting.not_run(axes[4], "Trinity's policy not in the profile")
    cap = ("Prefill retrievals (open loop, deadline L_pre,max, dashed in the first panel) and decode streams (a "
           "retrieval every delta tokens, stalled until it returns) through one FIFO queue, strict prefill or decode "
           "priority, Trinity with a fixed r, and Trinity with its control loop. The paper (section 3.3): \""
           + paper.TTFT.paper + "\". Emulated LLM stages over a replay of real searches with measured extend "
           "times; median over seeds, bars min-max; each policy has its own marker and a small sideways offset, so "
           "policies that coincide stay visible; the same colour and marker per policy as in the parameter sweep. "
           + judged + " Second panel: dotted, the 0.99 target; its axis is stretched towards 1, so 0.9, 0.99 and 1 "
           "lie about evenly apart. Control-loop panel: Trinity's prefill share r over time at each offered load "
           "(greys, light to dark with load; loads whose r never differs drawn as one line, named after all of "
           "them). " + NO_PAPER)
    return plotting.save(fig, out_png, cap)


LOAD_MARKERS = "P<Xh>p*"   # loads of the control-loop panel: none of the policies' markers


def _control_panel(ax, key_ax, ctl) -> None:
    """Trinity's prefill share r over time per offered load, in greys (no policy's colour) with markers no
    policy uses. Loads whose r series are identical are drawn as one line named after all of them (the
    key says they coincide), so no line hides another and every key entry has its own line."""
    from matplotlib.lines import Line2D

    series = {}   # identical r series -> the loads that have it, in load order
    for load, g in ctl.groupby("total_load"):
        g = g.sort_values("t_s")
        series.setdefault(tuple(np.round(g.r.to_numpy(), 6)), []).append((load, g))
    n = len(series)
    handles, labels = [], []
    for i, members in enumerate(series.values()):
        grey = str(round(0.65 - 0.65 * i / max(1, n - 1), 2))     # lighter to black with load
        # where lines of different loads still meet, the lighter one's smaller marker is drawn on top
        kw = dict(color=grey, marker=LOAD_MARKERS[i % len(LOAD_MARKERS)], ms=5 + 1.5 * i, mew=1.2, lw=1.5,
                  zorder=3 + n - i)
        g = members[0][1]     # their readings' times differ by about a millisecond
        ax.plot(g.t_s, g.r, label=f"_r at loads {[m[0] for m in members]}", **kw)
        handles.append(Line2D([], [], **kw))
        loads = [f"{m[0]:.2f}" for m in members]
        flat = len(set(g.r.round(6))) == 1
        labels.append(f"{loads[0]}" if len(loads) == 1 else
                      f"{', '.join(loads)}: coincide" + (f" at r = {g.r.iloc[0]:g}" if flat else ""))
    ax.set(xlabel="emulated time (s)", ylabel="prefill share r", title="trinity control loop: r (seed 0)")
    lo, hi = float(ctl.r.min()), float(ctl.r.max())
    pad = 0.1 * max(hi - lo, 0.1)
    ax.set_ylim(lo - pad, hi + pad)
    key_ax.legend(handles, labels, title="control loop panel: offered load", loc="center", fontsize="small")


PARAM_LABELS = {"r_min": "r_min (least prefill share)", "r_max": "r_max (most prefill share)",
                "tau_pre_ms": "τ_pre (ms)", "delta_tokens": "δ, retrieval interval (tokens)",
                "deadline_factor": "L_pre,max (x full-occupancy search time)", "control_ms": "control period (ms)"}


@figure("sched_sweep", records=("sched",), title="scheduler parameters swept one at a time")
def sched_sweep_fig(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["sched"]
    sw = df[df.row == "sweep"] if "row" in df else df.iloc[:0]
    col = policy_colors(sw.policy.unique())   # the scheduler figure's colours and markers, by policy name
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
        _nines(axes[0][j], "top row")
        axes[0][j].set_title(PARAM_LABELS.get(name, name).split(" (")[0])
    axes[1][0].set_ylim(0, max(0.05, float(sw.dec_stall_fraction.max()) * 1.15))
    plotting.legend_below(fig, ncol=5)
    cap = (f"Scheduler parameters the paper leaves open, swept one at a time ({', '.join(params)}; the others as "
           f"configured) at prefill load {sw.load_frac.iloc[0]:.2f} of capacity plus the decode share (offered load "
           f"{sw.total_load.iloc[0]:.2f} x capacity in every panel): top, share of "
           f"prefill retrievals within L_pre,max (dotted: the 0.99 target; the axis is stretched towards 1, so 0.9, 0.99 and 1 lie about evenly apart); bottom, decode stall fraction. Median "
           f"over {sw.repeat.nunique()} seeds, bars min-max. Emulated LLM stages over a replay of real searches "
           f"with measured extend times. " + NO_PAPER)
    return plotting.save(fig, out_png, cap)

"""WindVE's Figure 2 (query numbers over a day), stood for by our bursty open-loop trace: the paper's
figure is an illustration, a shape without values, so there is nothing of the paper's to draw; ours is the
bursty schedule the serving step replays (seconds, not a day), drawn from its per-request records."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from .labels import admission, source_words

CONFIGS = ("accelerator_only", "offload")
OFFERED = "#949494"
BURST = "#ece133"


def _rates(ax, curve: pd.DataFrame, col: dict, windows, names: dict) -> None:
    """Offered rate (intended sends) against the rate of outcomes, stacked by who answered."""
    t = np.r_[curve.t_s.to_numpy(), curve.t_s.iloc[-1] + curve.bin_s.iloc[0]]
    bottom = np.zeros(len(curve))
    for part in ("accelerator", "CPU"):
        v = curve[f"{part}_rps"].to_numpy()
        if v.any() or part == "accelerator":
            ax.stairs(bottom + v, t, baseline=bottom, fill=True, color=col[part], alpha=0.85,
                      label=f"answered by the {names[part]}")
        bottom = bottom + v
    for part in ("refused (429)", "lost"):
        v = curve[f"{part}_rps"].to_numpy()
        if v.any():
            ax.plot(t, np.r_[v, v[-1]], drawstyle="steps-post", color=col[part], lw=1.6, label=part)
    off = curve.offered_rps.to_numpy()
    ax.plot(t, np.r_[off, off[-1]], drawstyle="steps-post", color=OFFERED, lw=2.2, ls="--",
            label="offered (intended sends)")
    _shade(ax, windows)
    ax.set(ylabel="requests/s", xlim=(0, t[-1]))
    ax.set_ylim(bottom=0)


def _latency(ax, reqs: pd.DataFrame, col: dict, slo: float, windows, end: float, names: dict) -> None:
    """Each request's latency from its intended send time, at that time, by who answered (the colours and
    labels of the rate panels: one legend entry per outcome)."""
    for part, marker in (("accelerator", "o"), ("CPU", "s"), ("refused (429)", "x"), ("lost", "v")):
        g = reqs[reqs.outcome == part]
        if len(g):
            ax.plot(g.intended_s, g.latency_s, marker, ms=4, mew=1.2, color=col[part], ls="none", zorder=3,
                    label=part if part in ("refused (429)", "lost") else f"answered by the {names[part]}")
    ax.axhline(slo, color="0.3", ls=":", lw=1.2, label=f"SLO ({slo:g} s)")
    _shade(ax, windows)
    top = 1.08 * max(float(np.nanmax(reqs.latency_s)) if len(reqs) else 0.0, slo)
    ax.set(xlabel="intended send time (s from the run's start)", ylabel="latency from intended send (s)",
           xlim=(0, end), ylim=(-0.04 * top, top))   # refusals answer at once: keep them off the axis line


def _shade(ax, windows) -> None:
    for i, (a, b) in enumerate(windows):
        ax.axvspan(a, b, color=BURST, alpha=0.3, lw=0, zorder=0, label="burst window (as scheduled)" if i == 0 else None)


@figure("fig2_load_curve", records=("serving",),
        title="Figure 2 stand-in: our bursty open-loop trace (offered vs answered rate over time)")
def fig2_load_curve(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["serving"]
    reqs = analysis.open_requests(df)
    fig, axes = plotting.start(2, 2, w=5.2, h=3.1, sharex="col")
    if reqs.empty:
        for ax in axes:
            plotting.not_run(ax, "no per-request open-loop rows (records written before they were recorded)")
        return plotting.save(fig, out_png, "Figure 2 stand-in: not drawn, the records carry no per-request "
                                           "open-loop rows.")
    runs = df[(df.kind == "openloop") & (df.arrivals == "bursty")].set_index("config")
    col = plotting.colors(analysis.RATE_PARTS)
    end = float(np.nanmax(reqs.done_s))
    run0 = runs.iloc[0]
    bin_s = analysis.bin_width(end, run0.get("burst_s", np.nan))
    curve = analysis.load_curve(reqs, bin_s)
    slo = float(reqs.slo_s.iloc[0])
    src, acc_words = source_words(None, reqs)
    names = {"accelerator": plotting.label_source("accelerator", src), "CPU": "CPU"}
    for j, cfg in enumerate(CONFIGS):
        top, bottom = axes[j], axes[2 + j]
        words = cfg.replace("_", " ")
        if cfg not in set(reqs.config):
            for ax in (top, bottom):
                plotting.not_run(ax, f"no bursty run {cfg.replace('_', ' ')} in the records")
            continue
        windows = analysis.burst_windows(runs.loc[cfg], end)
        _rates(top, curve[curve.config == cfg], col, windows, names)
        top.set_title(f"({'ab'[j]}) {words}: rate per {1000 * bin_s:.3g} ms", fontsize="medium")
        _latency(bottom, reqs[reqs.config == cfg], col, slo, windows, end, names)
        bottom.set_title(f"({'cd'[j]}) {words}: each request", fontsize="medium")
    fig.suptitle("Stands for WindVE Fig. 2 (query numbers over a day): our synthetic bursty open-loop trace, over "
                 "seconds, not a day.\nThe paper's curve is a shape without values: nothing of it is drawn.",
                 fontsize="small")
    plotting.legend_below(fig, ncol=4)
    return plotting.save(fig, out_png, _caption(run0, reqs, bin_s, slo, acc_words))


def _caption(run: pd.Series, reqs: pd.DataFrame, bin_s: float, slo: float, acc_words: str) -> str:
    counts = ", ".join(f"{c.replace('_', ' ')} {int(k)}" for c, k in reqs.groupby("config").size().items())
    bursts = analysis.bursts_sent(reqs, run)
    shape = (f"{float(run['burst_factor']):g}x the mean rate for {float(run['burst_s']):g} s of every "
             f"{float(run['period_s']):g} s" if pd.notna(run.get("burst_factor", np.nan))
             else "bursts above the mean rate for part of each period")
    span = f"their intended sends spanning {float(reqs.intended_s.max()):.3g} s"
    if bursts:
        span += f" ({bursts} burst{'s' if bursts != 1 else ''})"
    return ("Stands for the paper's Figure 2, an illustration of how an application's query numbers change over a "
            "day: the paper draws a shape and gives no values, so no paper series is drawn and no number of ours is "
            "compared with it. Ours is the synthetic bursty open-loop trace the serving step replays (beyond the "
            f"paper): Poisson arrivals at a mean {float(run['offered_rps']):.3g} requests/s "
            f"({float(run['load_factor']):g}x the accelerator-only capacity, its max concurrency / SLO), {shape}, "
            f"over seconds, not a day; requests per run: {counts}, {span}. Top: the offered rate (intended send "
            f"times per {1000 * bin_s:.3g} ms bin) against the rate of answers by the time they came back, stacked "
            "by the device that answered, with refusals (429) and losses. Bottom: each request's latency from its "
            f"intended send time (no coordinated omission) against the SLO {slo:g} s, coloured as above (dots: "
            "accelerator, squares: CPU, crosses: refused, triangles: lost). Left without, right with CPU offload, "
            f"at the fine-tuned depths. {_late(reqs, slo)} Admission: {admission(reqs)}. {acc_words} The CPU instance "
            "is measured.")


def _late(reqs: pd.DataFrame, slo: float) -> str:
    """The answers that came back after the SLO, per run and device group, counted from the records."""
    late = analysis.late_answers(reqs, slo)
    if late.empty:
        return "No request was answered."
    parts = [f"{r.config.replace('_', ' ')}, {r.outcome}: {int(r.late)} of {int(r.answered)} ({r.share:.0%})"
             for r in late.itertuples()]
    head = ("Answered after the SLO (latency from the intended send above the dotted line): " if late.late.any()
            else "Every answer came back within the SLO: ")
    return head + "; ".join(parts) + "."

"""Latency jitter of static against continuous batching (Trinity section 3.2, "smoother P50/P95"), from the
load records: how much each window's p50 and p95 move over a run, against load, and the smoothing claim's
ratio as the ledger row computes it on the CPU replay, drawn and not judged (the row needs a GPU) (paired seed by seed, widened by the replay's error against the live engine)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from ..verdicts import batching, paper
from ._common import NO_PAPER, policy_colors, policy_style, words


def _ratio_panel(ax, g: pd.DataFrame, claim_load: float, pairs, col) -> list[str]:
    near, arrival, b = batching.smooth_setting(g, claim_load)
    est = batching.smooth_estimates(g, claim_load, pairs)
    m = b[b.policy == "static"].merge(b[b.policy == "continuous"], on=["repeat", "load_frac", "arrival"],
                                      suffixes=("_s", "_c"))
    notes = []
    for i, q in enumerate(("p50", "p95")):
        r = m[f"{q}_jitter_s_s"] / m[f"{q}_jitter_s_c"]
        ax.plot(np.full(len(r), i - 0.15) + np.linspace(-0.05, 0.05, len(r)), r, ls="none", marker="o", ms=5,
                color="0.45", label="_seeds" if i else "each seed (static / continuous)")
        e, err = est[q]
        ax.errorbar([i + 0.15], [e[0]], yerr=[[e[0] - e[1]], [e[2] - e[0]]], marker="D", ms=8, capsize=5,
                    color=col["continuous"], ls="none",
                    label="_ledger" if i else plotting.label_source(
                        "ledger: median [interval, widened by the replay's error]", "emulated"))
        notes.append(f"{q} {e[0]:.2f} [{e[1]:.2f}, {e[2]:.2f}] ({err.text()})")
    ax.axhline(1.0, color="0.3", ls=":", lw=1.4, label="1: no smoothing (the row's bar)")
    ax.set_xticks([0, 1], ["p50 jitter", "p95 jitter"])
    ax.set_xlim(-0.6, 1.6)
    ax.set(yscale="log", ylabel="jitter, static / continuous", title=f"the claim, drawn (needs a GPU):\n{arrival} arrivals at {near:g}")
    return notes


@figure("smoothing", records=("load", "trace"), title="latency jitter: static against continuous batching",
        claims=("claim-continuous-smooth-p95-*",))
def smoothing(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = analysis.replayed(data["load"])
    if "p95_jitter_s" not in df:
        fig, (ax,) = plotting.start(1)
        plotting.not_run(ax, "the load records hold no jitter (recorded before it was measured)")
        return plotting.save(fig, out_png, "Latency jitter: not run (the load records hold no jitter).")
    pairs = analysis.check_pairs(data["trace"])
    col = policy_colors(df.policy.unique())
    claim_load = float(df.claim_load.iloc[0]) if "claim_load" in df else 0.3
    fig, axes = plotting.start(3, w=4.6, h=4)
    _, arrival, _ = batching.smooth_setting(df, claim_load)
    g = df[df.arrival == arrival]
    for ax, q in zip(axes, ("p50", "p95")):
        for k, (pol, gp) in enumerate(g.groupby("policy")):
            s = gp.groupby("load_frac")[f"{q}_jitter_s"].agg(["median", "min", "max"]) * 1e3
            mk = policy_style(pol)
            ax.errorbar(s.index + (k - 0.5) * 0.015, s["median"], yerr=[s["median"] - s["min"], s["max"] - s["median"]],
                        marker=mk["marker"], mfc=mk["mfc"], mew=1.5, capsize=2, color=col[pol],
                        label=plotting.label_source(words(pol), "emulated") if q == "p50" else None)
        ax.set(yscale="log", xlabel="offered load (x capacity)", ylabel=f"{q} jitter (ms)",
               title=f"spread of each window's {q}, {arrival} arrivals")
    notes = _ratio_panel(axes[2], df, claim_load, pairs, col)
    plotting.legend_below(fig, ncol=3)
    win = int(df.windows.median())
    cap = (f"Latency jitter, static against continuous batching. The paper (section 3.2): \"{paper.SMOOTH.paper}\". "
           f"Ours: a run's requests in arrival order cut into windows ({win} a run, median), each window's p50 and "
           "p95 latency, and their standard deviation over the run (the jitter; the level of either is not what the "
           "row judges). Left and middle: median over seeds, bars min-max, against load (the two policies drawn a "
           "little apart). Right: the smoothing "
           f"claim's quantity on the CPU replay (drawn, not judged: the row needs a GPU), static over continuous seed by seed at its setting: {'; '.join(notes)}. "
           "Replay of real searches with measured extend times (emulated serving). " + NO_PAPER)
    return plotting.save(fig, out_png, cap)

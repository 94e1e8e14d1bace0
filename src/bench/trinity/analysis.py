"""Tidy aggregates of Trinity's records that the figures and the claims share (the study's one analysis
layer): the measured runs of each record kind, the replayed load curves, the scheduler's main grid, the
roofline medians per (stage, batch size) and their u(X) fit (Figure 1), and the sustained load under a p95
bound (section 3.2's smoothing claim)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .system import roofline


def measured(df: pd.DataFrame) -> pd.DataFrame:
    """The measured runs (warm-up excluded)."""
    return df[df.phase == "measured"] if "phase" in df else df


def searches(recall: pd.DataFrame) -> pd.DataFrame:
    """The recall records' measured runs of the systems that ran (not-run rows dropped)."""
    return recall[(recall.phase == "measured") & (recall.source == "measured")]


def recall_column(df: pd.DataFrame) -> str:
    """The ``recall_at_K`` column of a recall record set."""
    return [c for c in df if c.startswith("recall_at_")][0]


def replayed(load: pd.DataFrame) -> pd.DataFrame:
    """The load records of the replay (the live-engine check rows dropped)."""
    return load[load.engine == "replay"]


def sched_runs(sched: pd.DataFrame) -> pd.DataFrame:
    """The scheduler's main grid (one row per policy, load and seed; no control or sweep rows)."""
    return sched[sched.row == "run"]


def stage_medians(roof: pd.DataFrame) -> pd.DataFrame:
    """Per (stage, batch size X) over the measured runs: utilisation median/min/max, work/s median."""
    return (measured(roof).groupby(["stage", "x"])
            .agg(u=("u", "median"), lo=("u", "min"), hi=("u", "max"), w=("work_per_s", "median")))


def stage_fit(medians: pd.DataFrame) -> dict[str, float]:
    """Figure 1's fit u(X) = min(u_max, (X/X_sat)^alpha) of one stage's medians (index X, column u)."""
    return roofline.fit(medians.index, medians.u)


def stage_runs(roof: pd.DataFrame) -> dict[str, list[tuple[float, np.ndarray]]]:
    """Per stage: (X, utilisation of every measured run at X), by X (what a bootstrap of the fit resamples)."""
    return {stage: [(x, gx.u.to_numpy()) for x, gx in g.groupby("x")] for stage, g in measured(roof).groupby("stage")}


def sustained(curve: pd.DataFrame, bound: float) -> float:
    """Offered load (requests/s) at which p95 first crosses ``bound`` (linear interpolation); the largest load
    when it never does; 0 when even the lowest load misses it."""
    c = curve.sort_values("offered_rps")
    x, y = c.offered_rps.to_numpy(), c.p95_s.to_numpy()
    over = np.nonzero(y > bound)[0]
    if not over.size:
        return float(x[-1])
    i = over[0]
    if i == 0:
        return 0.0
    return float(x[i - 1] + (bound - y[i - 1]) * (x[i] - x[i - 1]) / (y[i] - y[i - 1]))

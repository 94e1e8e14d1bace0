"""Tidy aggregates of Trinity's records that the figures and the claims share (the study's one analysis
layer): the measured runs of each record kind, the replayed load curves, the scheduler's main grid, the
roofline medians per (stage, batch size), their u(X) fit (Figure 1) and each stage's gain at the end of its
batch sweep (whether it saturated inside the sweep, section 2's premise), and the sustained load under a p95
bound (section 3.2's smoothing claim)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..core.judging import intervals
from .system import roofline


FLAT_LEVEL = 0.95   # the level of the end-gain interval: the claims' premise and the sweep's stop use it alike


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
    when it never does (a lower bound: the search's bracket says so); NaN when even the lowest load misses it
    (no load was sustained: no value, never a 0 standing for one)."""
    c = curve.sort_values("offered_rps")
    x, y = c.offered_rps.to_numpy(), c.p95_s.to_numpy()
    over = np.nonzero(y > bound)[0]
    if not over.size:
        return float(x[-1])
    i = over[0]
    if i == 0:
        return float("nan")
    return float(x[i - 1] + (bound - y[i - 1]) * (x[i] - x[i - 1]) / (y[i] - y[i - 1]))


def stage_process_runs(roof: pd.DataFrame) -> dict[str, dict[object, dict[float, np.ndarray]]]:
    """Per stage, per fresh process (:func:`bench.core.judging.intervals.process_of`), per batch X: the
    utilisation of every measured run (what a two-level bootstrap of the fit resamples)."""
    m = measured(roof)
    proc = pd.Series(intervals.process_of(m), index=m.index)
    out: dict[str, dict[object, dict[float, np.ndarray]]] = {}
    for (stage, pid, x), g in m.groupby([m.stage, proc, m.x]):
        out.setdefault(stage, {}).setdefault(pid, {})[x] = g.u.to_numpy()
    return out


def _pooled_medians(procs: dict, chosen: list, rng: np.random.Generator | None) -> tuple[list, list]:
    """Per X: the median of the chosen processes' runs at X (each resampled within when ``rng`` is given)."""
    pooled: dict[float, list[np.ndarray]] = {}
    for pid in chosen:
        for x, v in procs[pid].items():
            pooled.setdefault(x, []).append(v if rng is None else rng.choice(v, v.size))
    xs = sorted(pooled)
    return xs, [float(np.median(np.concatenate(pooled[x]))) for x in xs]


def knees(roof: pd.DataFrame, seed: int, n_boot: int) -> dict[str, np.ndarray]:
    """Per stage, the knee of the fit u(X) = min(u_max, (X/X_sat)^alpha): element 0 on every run, then
    ``n_boot - 1`` refits of two-level resamples (the fresh processes with replacement first, then the timed
    runs at each X within each chosen process), so the spread between processes is in the interval."""
    rng = np.random.default_rng(seed)
    out = {}
    for stage, procs in stage_process_runs(roof).items():
        keys = list(procs)
        ks = []
        for b in range(max(1, n_boot)):
            chosen = keys if b == 0 else [keys[i] for i in rng.integers(0, len(keys), len(keys))]
            xs, u = _pooled_medians(procs, chosen, None if b == 0 else rng)
            ks.append(roofline.fit(xs, u)["x_knee"] if len(xs) >= 3 else np.nan)
        out[stage] = np.array(ks)
    return out


def knee_ratio(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """|log2| of the ratio of two stages' knees (element 0: the estimate; the rest: bootstrap refits) with
    its percentile interval at ``level``."""
    r = np.abs(np.log2(np.asarray(a, float) / np.asarray(b, float)))
    boots = r[1:][np.isfinite(r[1:])]
    if not boots.size:
        return float(r[0]), float(r[0]), float(r[0])
    lo, hi = np.percentile(boots, [50 * (1 - level), 50 * (1 + level)])
    # a refit's knee jumps between fits (a min of two curves), so the percentile interval can miss the
    # estimate itself: widened to hold it (only ever wider)
    return float(r[0]), float(min(lo, r[0])), float(max(hi, r[0]))


def end_gain(roof: pd.DataFrame, stage: str, level: float = 0.95, n_boot: int = 2000,
             seed: int = 0) -> dict[str, float]:
    """The stage's gain per batch doubling at the end of its sweep, with a bootstrap interval that holds the
    run-to-run noise: what "the gain flattened inside the sweep" asks of the records.

    The statistic: over the last two doublings of the batches every fresh process measured (X_top / 4 to
    X_top; in general the third-largest to the largest batch), the median utilisation's gain per doubling,
    ``(u(X_top) / u(X_low)) ** (1 / log2(X_top / X_low)) - 1`` (the slope of log u against log2 X; a least-squares
    line through the three equally spaced batches has this slope, the middle one carries no weight). Two
    doublings, as the sweep's own rule asks for two flat batches in a row, and a ratio of medians rather than
    "the best batch before", whose max favours flatness in noisy data. Each process's ratio is taken on its own
    runs and the log-ratios are averaged over processes: a pooled median across processes whose levels differ
    jumps between the levels from one batch to the next (run-to-run offsets are no gain). The interval
    resamples the fresh processes with replacement first, then each chosen process's timed runs at each of the
    two batches, and reads the percentiles at ``level``.

    Returns est, lo, hi (NaN when fewer than three common batches or a non-positive utilisation), x_low,
    x_top, processes (how many fresh processes)."""
    runs = stage_process_runs(roof).get(stage, {})
    xs = sorted(set.intersection(*(set(v) for v in runs.values()))) if runs else []
    out = {"est": np.nan, "lo": np.nan, "hi": np.nan, "x_low": np.nan, "x_top": np.nan, "processes": len(runs)}
    if len(xs) < 3:
        return out
    x_low, x_top = xs[-3], xs[-1]
    out.update(x_low=x_low, x_top=x_top)
    doublings = float(np.log2(x_top / x_low))
    with np.errstate(divide="ignore", invalid="ignore"):
        logr = {k: np.log(np.median(v[x_top])) - np.log(np.median(v[x_low])) for k, v in runs.items()}
        if not np.isfinite(list(logr.values())).all():
            return out
        rng = np.random.default_rng(seed)
        keys = list(runs)
        pick = rng.integers(0, len(keys), (n_boot, len(keys)))
        # each (resample, slot) that draws process k resamples k's runs afresh at both batches
        draws = np.stack([_resampled_logratio(runs[k], x_low, x_top, rng, (n_boot, len(keys))) for k in keys])
        boot = draws[pick, np.arange(n_boot)[:, None], np.arange(len(keys))[None, :]].mean(axis=1)
    per = lambda lr: float(np.expm1(lr / doublings))   # noqa: E731 - log-ratio -> gain per doubling
    est = per(np.mean(list(logr.values())))
    boot = boot[np.isfinite(boot)]
    lo, hi = (per(b) for b in np.percentile(boot, [50 * (1 - level), 50 * (1 + level)])) if boot.size else (est, est)
    out.update(est=est, lo=min(lo, est), hi=max(hi, est))   # widened to hold the estimate (only ever wider)
    return out


def _resampled_logratio(v: dict[float, np.ndarray], x_low: float, x_top: float, rng: np.random.Generator,
                        shape: tuple[int, int]) -> np.ndarray:
    """log(median u at x_top) - log(median u at x_low) of ``shape`` resamples of one process's timed runs."""
    med = {x: np.median(v[x][rng.integers(0, v[x].size, (*shape, v[x].size))], axis=-1) for x in (x_low, x_top)}
    return np.log(med[x_top]) - np.log(med[x_low])


CHECK_KEYS = ("process_uid", "check", "arrival", "load_frac", "policy", "seed")


def check_pairs(trace: pd.DataFrame) -> pd.DataFrame:
    """The replay's check points (the trace step's ``row=check`` rows), the live engine and the replay of the
    same process's trace side by side: one row per (fresh trace process, check, point, policy) with each
    quantity as ``<q>_live`` and ``<q>_replay``."""
    if "row" not in trace:
        return pd.DataFrame()
    c = trace[trace.row == "check"].copy()
    if c.empty:
        return pd.DataFrame()
    if "process_uid" not in c:
        c["process_uid"] = c["process"].astype(str) if "process" in c else "0"
    c["arrival"] = c["arrival"].fillna("-")
    keys = [k for k in CHECK_KEYS if k in c]
    live, rep = (c[c.engine == e].drop(columns=["engine"]) for e in ("live", "replay"))
    return live.merge(rep, on=keys, suffixes=("_live", "_replay"))


def point_pairs(pairs: pd.DataFrame, check: str, arrival: str | None = None, load: float | None = None) -> pd.DataFrame:
    """The check pairs of one check point: ``check`` ("load" or "sched"), the arrival process (where it
    has a point of its own; else any), the point nearest ``load`` (where given)."""
    if pairs.empty:
        return pairs
    g = pairs[pairs.check == check]
    if arrival is not None and (g.arrival == arrival).any():
        g = g[g.arrival == arrival]
    if load is not None and len(g):
        near = g.load_frac.iloc[(g.load_frac - load).abs().argmin()]
        g = g[np.isclose(g.load_frac, near)]
    if len(g) and g.arrival.nunique() > 1:   # one point: the first arrival process at that load
        g = g[g.arrival == sorted(g.arrival.unique())[0]]
    return g


def per_process_error(g: pd.DataFrame, q: str, policy: str, versus: str | None = None,
                      absolute: bool = False) -> pd.Series:
    """The replay's error on quantity ``q`` in each fresh trace process: log(replay / live) of ``policy``'s
    value, of its ratio to ``versus``'s where given (the error of a policy ratio, whose common part
    cancels), or replay - live where ``absolute`` (a share). A process where one side is zero and the other
    not has an infinite error (kept: the replay's error there is unbounded); one where both are, none."""
    def side(pol):
        return g[g.policy == pol].set_index("process_uid")[[f"{q}_live", f"{q}_replay"]]
    a = side(policy)
    if absolute:
        return (a[f"{q}_replay"] - a[f"{q}_live"]).dropna()
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.log(a[f"{q}_replay"]) - np.log(a[f"{q}_live"])
        if versus is not None:
            b = side(versus)
            e = e - (np.log(b[f"{q}_replay"]) - np.log(b[f"{q}_live"]))
    return e.dropna()


@dataclasses.dataclass(frozen=True)
class Saturation:
    """What the records say about one stage's saturation (Figure 1), as the claims judge it and the figure
    draws it: the fit, the knee (element 0) and its bootstrap refits, the knee's interval and whether it lies
    inside the measured batches, and the gain per doubling at the end of the sweep with its interval over the
    fresh processes."""

    stage: str
    fit: dict
    knees: np.ndarray
    knee: tuple[float, float, float]
    x_min: float
    x_max: float
    gain: intervals.Estimate
    x_low: float
    x_top: float
    stopped: str

    @property
    def u_max(self) -> float:
        return float(self.fit["u_max"])

    @property
    def knee_inside(self) -> bool:
        return bool(self.x_min <= min(self.knee[0], self.knee[1]) and max(self.knee[0], self.knee[2]) <= self.x_max)


def _knee_interval(k: np.ndarray, level: float) -> tuple[float, float, float]:
    """The knee (element 0) and the percentile interval of its refits, widened to hold the knee itself: a
    refit's knee jumps between fits (a min of two curves), so the percentile interval can miss it (as in
    :func:`knee_ratio`; only ever wider)."""
    ok = k[1:][np.isfinite(k[1:])]
    lo, hi = np.percentile(ok, [50 * (1 - level), 50 * (1 + level)]) if ok.size else (k[0], k[0])
    return float(k[0]), float(min(lo, k[0])), float(max(hi, k[0]))


def _medians(g: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    med = g.groupby("x").u.median()
    return med.index.to_numpy(float), med.to_numpy(float)


def saturations(roof: pd.DataFrame, n_boot: int, level: float = FLAT_LEVEL, seed: int = 0) -> dict[str, Saturation]:
    """Per stage, its :class:`Saturation` from the measured roofline runs."""
    m = measured(roof)
    ks = knees(m, seed, n_boot)
    out = {}
    for stage, g in m.groupby("stage"):
        e = end_gain(m, stage, level)
        stops = ", ".join(sorted(set(g.sweep_stopped.dropna().astype(str)))) if "sweep_stopped" in g else ""
        out[stage] = Saturation(
            stage, roofline.fit(*_medians(g)), ks[stage], _knee_interval(ks[stage], level),
            float(g.x.min()), float(g.x.max()),
            intervals.Estimate(e["est"], e["lo"], e["hi"], clusters=int(e["processes"]), level=level),
            float(e["x_low"]), float(e["x_top"]), stops)
    return out


def class_extends(trace: pd.DataFrame) -> dict[int, float]:
    """Mean extends per request of each top-M the trace searched (its measured request rows)."""
    if "row" not in trace:
        return {}
    req = measured(trace[trace.row == "request"])
    return {int(k): float(v) for k, v in req.groupby("top_m").extends.mean().items()} if len(req) else {}

"""What Trinity's serving rows share: each replayed run's cluster (the fresh trace process it replayed),
policy ratios paired run by run, and the replay's error against the live engine (measured at the trace
step's check points, :func:`..analysis.check_pairs`), which a replayed row's interval carries so that a
difference smaller than that error is never judged."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from ...core.judging import claims, intervals
from .. import analysis

STUDY = "trinity"
RUN_KEYS = ("repeat", "load_frac", "arrival")   # a load run's arrivals: its seed, load and arrival process
PAIRED = "ratios paired run by run (the two policies replayed the same arrivals on the same trace process)"
CLUSTER_COLS = ("process_uid", "dataset", "trace_process", "trace_uid")


def trace_by(rows: pd.DataFrame) -> tuple[str, ...]:
    """The column naming the fresh trace process a replayed row replayed (``trace_uid``, else the older
    ``trace_process``)."""
    return ("trace_uid",) if "trace_uid" in rows else ("trace_process",) if "trace_process" in rows else ()


def clusters(rows: pd.DataFrame) -> np.ndarray:
    """Each replayed row's cluster: the fresh trace process it replayed, within its own step process and
    dataset (:func:`bench.core.judging.intervals.process_of`)."""
    return intervals.process_of(rows, by=trace_by(rows))


def n_traces(rows: pd.DataFrame) -> int:
    return len(np.unique(clusters(rows))) if len(rows) else 0


def traces_words(rows: pd.DataFrame) -> str:
    """How the replayed seeds' interval holds the live engine's run-to-run noise, in words."""
    n = n_traces(rows)
    return (f"interval over seeds, the {n} fresh trace processes they replayed resampled first" if n > 1 else
            "every seed replayed one trace process")


def paired(num: pd.DataFrame, den: pd.DataFrame, col: str, keys: tuple = ("repeat",),
           flip: bool = False) -> intervals.Estimate:
    """``num``'s ``col`` over ``den``'s (``den`` over ``num`` where ``flip``), run by run: rows equal on ``keys``
    and on their trace process replayed the same arrivals (one seed) on the same trace, so each pair gives one
    ratio; the median of the ratios, with a bootstrap over the fresh trace processes first, then the pairs."""
    on = list(keys) + [c for c in CLUSTER_COLS if c in num and c in den]
    m = num.merge(den, on=on, suffixes=("_n", "_d"))
    a, b = m[f"{col}_n"], m[f"{col}_d"]
    r = ((b / a) if flip else (a / b)).replace([np.inf, -np.inf], np.nan)
    ok = r.notna().to_numpy()
    return intervals.bootstrap_ci(r[ok].to_numpy(), groups=clusters(m)[ok])


@dataclasses.dataclass(frozen=True)
class ReplayError:
    """The replay's error on one quantity at one check point: the t-interval over the fresh trace processes
    of each process's error (log(replay / live), of a policy ratio where ``versus``; replay - live where
    ``absolute``); ``margin``: the largest error the interval allows (NaN from fewer than three processes,
    infinite where a process's error is: one side served none of what the other served)."""

    what: str
    estimate: intervals.Estimate
    absolute: bool
    point: str
    unbounded: int = 0    # processes whose error is infinite

    @property
    def margin(self) -> float:
        e = self.estimate
        if self.unbounded:
            return float("inf")
        if e.clusters is None or e.clusters < intervals.MIN_PROCESSES or any(map(math.isnan, e)):
            return float("nan")
        return float(max(abs(e[1]), abs(e[2])))

    def text(self) -> str:
        e, n = self.estimate, self.estimate.clusters or 0
        head = f"the replay's error on {self.what} against the live engine ({self.point}"
        if self.unbounded:
            return (f"{head}): unbounded in {self.unbounded} fresh trace process(es), where one of the live engine "
                    "and the replay served none of what the other served: no difference is judged")
        if math.isnan(self.margin):
            return f"{head}) rests on {n} fresh trace process(es), fewer than {intervals.MIN_PROCESSES}: not known"
        if self.absolute:
            val, bound = f"{e[0]:+.3f} [{e[1]:+.3f}, {e[2]:+.3f}]", f"±{self.margin:.3f}"
        else:
            val = f"{math.exp(e[0]):.3f}x [{math.exp(e[1]):.3f}, {math.exp(e[2]):.3f}]"
            bound = f"x/÷ {math.exp(self.margin):.3f}"
        return (f"{head}, replay {'-' if self.absolute else '/'} live, t-interval over {n} fresh trace processes): "
                f"{val}; the interval is widened by its largest error, {bound}, so a difference smaller than the "
                "replay's error is not judged")


def replay_error(pairs: pd.DataFrame, check: str, q: str, policy: str, *, versus: str | None = None,
                 absolute: bool = False, arrival: str | None = None, load: float | None = None,
                 what: str = "") -> ReplayError:
    """The replay's error on ``q`` (a policy's value, or its ratio to ``versus``'s) at the check point of
    ``check`` nearest ``arrival`` and ``load``."""
    g = analysis.point_pairs(pairs, check, arrival, load)
    e = analysis.per_process_error(g, q, policy, versus, absolute) if len(g) else pd.Series(dtype=float)
    point = (f"{g.arrival.iloc[0]} arrivals at {g.load_frac.iloc[0]:g} x capacity" if check == "load" and len(g)
             else f"prefill load {g.load_frac.iloc[0]:g}" if len(g) else "no check point")
    finite = e[np.isfinite(e)]
    return ReplayError(what or q, intervals.t_interval(finite.to_numpy()), absolute, point, int((~np.isfinite(e)).sum()))


def widened(est: intervals.Estimate, err: ReplayError) -> intervals.Estimate:
    """``est``'s interval widened by the replay's largest error (a factor for a ratio, a difference for a
    share, kept inside [0, 1]); NaN bounds where the error is not known (no interval to judge)."""
    m = err.margin
    if math.isnan(m) or math.isinf(m):
        return intervals.Estimate(est[0], float("nan"), float("nan"), est.clusters, est.level)
    if err.absolute:
        return intervals.Estimate(est[0], max(0.0, est[1] - m), min(1.0, est[2] + m), est.clusters, est.level)
    return intervals.Estimate(est[0], est[1] * math.exp(-m), est[2] * math.exp(m), est.clusters, est.level)


# the work settings a small profile may shrink to pay for three fresh processes, in words, by their path
WORK = {("recall", "batch_queries"): "queries a recall run", ("trace_queries",): "traced queries per top-M",
        ("trace_calibration",): "calibration rounds of the trace", ("roofline", "sweep_budget_s"):
        "seconds of added roofline doublings", ("roofline", "max_doublings"): "roofline doublings",
        ("scheduler", "duration_s"): "emulated seconds of a scheduler run",
        ("roofline", "search_batches"): "roofline search batch sizes", ("roofline", "prefill_batches"):
        "roofline prefill batch sizes", ("roofline", "decode_batches"): "roofline decode batch sizes"}


def _get(p, path: tuple) -> float:
    for name in path:
        p = getattr(p, name)
    return p


def _less(words: str, ours, default) -> str:
    """``words`` with ours and the default where ours is less work ("" where it is not): a number below the
    default, or a list of batch sizes with fewer entries."""
    if isinstance(ours, tuple):
        return (f"{words} {'/'.join(map(str, ours))} ({len(ours)} of the default {len(default)})"
                if len(ours) < len(default) else "")
    return f"{words} {ours:g} (default {default:g})" if ours < default else ""


def shrunk(params, paths) -> str:
    """The work settings of ``paths`` this profile set below the schema's defaults, in words ("" for none): the
    scale text says what a small profile shrank (never its repeats)."""
    from .. import STUDY

    base = STUDY.parameters({})
    out = [_less(WORK[p], _get(params, p), _get(base, p)) for p in paths]
    out = [o for o in out if o]
    return f"; this profile shrank its work (not its repeats): {', '.join(out)}" if out else ""


def of_dataset(pairs: pd.DataFrame, ds: str) -> pd.DataFrame:
    """The check pairs of the trace of dataset ``ds`` (all of them where the pairs name no dataset)."""
    return pairs[pairs.dataset == ds] if len(pairs) and "dataset" in pairs else pairs


def busy(rows: pd.DataFrame, pairs: pd.DataFrame) -> bool:
    """Whether a replayed row's timings were measured on a busy machine: its own step's rows, or the trace
    processes whose extend times it replays (their check rows carry the trace step's flag)."""
    flags = [c for c in ("machine_busy_live", "machine_busy_replay") if c in pairs]
    return claims.busy(rows) or any(bool(pairs[c].fillna(False).astype(bool).any()) for c in flags)

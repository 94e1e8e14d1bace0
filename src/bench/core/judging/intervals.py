"""Intervals a verdict can rest on, and what each holds.

Every interval here is an :class:`Estimate`: the (estimate, low, high) triple, which unpacks as before, plus
how many independent clusters (fresh processes) it resamples and its level. Variation lives at several
levels (Kalibera and Jones, ISMM 2013): process start, iteration inside a process, measurement inside an
iteration; an interval that resamples only the iterations of one process describes that process, not the
method. So:

- :func:`bootstrap_ci` and :func:`ratio_ci` resample the fresh processes first, then the values within each
  (a hierarchical bootstrap, Saravanan, Berman and Sober 2020), when given each value's cluster;
- :func:`process_of` gives those clusters by construction: the unique id of the fresh process a row came
  from (``process_uid``, written by :mod:`bench.core.measuring.step`) joined with the process number a
  step's own fresh processes carry, the dataset and any configuration column the caller names, never a
  number that repeats across datasets or configurations;
- :func:`proportion_ci` is the Clopper-Pearson interval of k of n, :func:`cluster_proportion_ci` the
  Korn-Graubard interval where the trials come in clusters that share their noise;
- :data:`MIN_PROCESSES`: a timed row resting on fewer fresh processes decides nothing
  (:func:`bench.core.judging.claims.claim`).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
import pandas as pd

MIN_PROCESSES = 3   # fresh processes a timed row's interval must resample before it decides anything


class Estimate(tuple):
    """(estimate, low, high), unpacking as a triple, with ``clusters`` (the independent fresh processes the
    interval resampled; None where it resampled no processes, e.g. queries of a deterministic quantity) and
    ``level``."""

    clusters: int | None
    level: float

    def __new__(cls, estimate: float, low: float, high: float, clusters: int | None = None,
                level: float = 0.95) -> "Estimate":
        self = super().__new__(cls, (float(estimate), float(low), float(high)))
        self.clusters = clusters
        self.level = level
        return self

    @property
    def estimate(self) -> float:
        return self[0]

    @property
    def ci(self) -> tuple[float, float]:
        return self[1], self[2]


def _nan_estimate(clusters: int | None = None, level: float = 0.95) -> Estimate:
    return Estimate(float("nan"), float("nan"), float("nan"), clusters, level)


def process_of(rows: pd.DataFrame, by: Sequence[str] = ()) -> np.ndarray:
    """The cluster of each row: the fresh process it came from, unique across steps, datasets and
    configurations. It joins ``process_uid`` (each fresh process the step skeleton starts has its own id),
    ``process`` (the process number a step's own fresh processes carry: a worker, a service, a round),
    ``dataset`` and the columns ``by`` (a configuration that ran in processes of its own), so process 0 of one
    dataset or configuration is never process 0 of another."""
    cols = [c for c in ("process_uid", "process", "dataset", *by) if c in rows]
    if not cols:
        return np.zeros(len(rows), dtype=int)
    key = rows[cols[0]].astype(str)
    for c in cols[1:]:
        key = key + "|" + rows[c].astype(str)
    return key.to_numpy()


def n_processes(rows: pd.DataFrame, by: Sequence[str] = ()) -> int:
    """How many fresh processes the rows came from (at least one)."""
    return max(1, len(np.unique(process_of(rows, by)))) if len(rows) else 0


def processes_text(rows: pd.DataFrame, by: Sequence[str] = ()) -> str:
    """How many fresh processes the rows came from, for a reason."""
    n = n_processes(rows, by)
    return f"{n} fresh processes, resampled first" if n > 1 else "one process"


def _resampled(stat: Callable, a: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``stat`` of ``n_boot`` resamples of ``a``: one vectorised call when ``stat`` takes ``axis``."""
    idx = rng.integers(0, a.size, (n_boot, a.size))
    try:
        return np.asarray(stat(a[idx], axis=1), dtype=float)
    except TypeError:
        return np.array([stat(a[i]) for i in idx], dtype=float)


def _hierarchical(stat: Callable, a: np.ndarray, groups: np.ndarray, n_boot: int,
                  rng: np.random.Generator) -> np.ndarray:
    """``stat`` of ``n_boot`` two-level resamples: the processes (``groups``) with replacement, then the
    values within each chosen process; so the spread between processes is in the interval. Where every
    process holds as many values (the usual design) the resamples are drawn at once."""
    order = np.argsort(groups, kind="stable")
    a, groups = a[order], groups[order]
    names, starts, sizes = np.unique(groups, return_index=True, return_counts=True)
    m = len(names)
    if np.all(sizes == sizes[0]):
        s = int(sizes[0])
        chosen = rng.integers(0, m, (n_boot, m))
        idx = (starts[chosen][:, :, None] + rng.integers(0, s, (n_boot, m, s))).reshape(n_boot, m * s)
        try:
            return np.asarray(stat(a[idx], axis=1), dtype=float)
        except TypeError:
            return np.array([stat(a[i]) for i in idx], dtype=float)
    padded = _NAN_STATS.get(stat)
    if padded is not None:
        return _ragged(padded, a, starts, sizes, n_boot, rng)
    parts = [a[st:st + n] for st, n in zip(starts, sizes)]
    out = np.empty(n_boot)
    for b in range(n_boot):
        picked = [parts[i] for i in rng.integers(0, m, m)]
        out[b] = stat(np.concatenate([x[rng.integers(0, x.size, x.size)] for x in picked]))
    return out


_NAN_STATS = {np.median: np.nanmedian, np.mean: np.nanmean}   # stats whose NaN-skipping twin takes axis=
_RAGGED_CELLS = 4_000_000   # values per chunk of padded resamples (32 MB of float64)


def _ragged(nanstat: Callable, a: np.ndarray, starts: np.ndarray, sizes: np.ndarray, n_boot: int,
            rng: np.random.Generator) -> np.ndarray:
    """The two-level resamples of :func:`_hierarchical` where processes hold different numbers of values,
    drawn at once: each resample's chosen processes side by side, each padded with NaN to the largest
    process, and ``nanstat`` (a NaN-skipping statistic) taken along each resample, in chunks."""
    m, s = len(sizes), int(sizes.max())
    chunk = max(1, _RAGGED_CELLS // (m * s))
    out = np.empty(n_boot)
    for lo in range(0, n_boot, chunk):
        b = min(chunk, n_boot - lo)
        chosen = rng.integers(0, m, (b, m))
        n = sizes[chosen][:, :, None]
        pos = np.floor(rng.random((b, m, s)) * n).astype(np.int64)
        vals = a[starts[chosen][:, :, None] + np.minimum(pos, n - 1)]
        vals[np.arange(s)[None, None, :] >= n] = np.nan
        out[lo:lo + b] = nanstat(vals.reshape(b, m * s), axis=1)
    return out


def _sample(values, groups) -> tuple[np.ndarray, np.ndarray | None, int | None]:
    """Values without NaN, their groups where there are two or more, and how many groups there are (None
    where no groups were given)."""
    a = np.asarray(values, dtype=float)
    g = None if groups is None else np.asarray(groups)
    keep = ~np.isnan(a)
    a, g = a[keep], (None if g is None else g[keep])
    n = None if g is None else len(np.unique(g))
    return a, (g if g is not None and n > 1 else None), n


def _boots(stat, a, g, n_boot, rng) -> np.ndarray:
    return _resampled(stat, a, n_boot, rng) if g is None else _hierarchical(stat, a, g, n_boot, rng)


def bootstrap_ci(values: Sequence[float], stat: Callable = np.median, n_boot: int = 2000,
                 level: float = 0.95, seed: int = 0, groups: Sequence | None = None) -> Estimate:
    """``stat`` of ``values`` and its percentile-bootstrap interval. ``groups``: the cluster of each value
    (:func:`process_of`): clusters are resampled first, then values within them, and the estimate says how
    many there were."""
    a, g, n = _sample(values, groups)
    if a.size == 0:
        return _nan_estimate(n, level)
    est = float(stat(a))
    if a.size == 1:
        return Estimate(est, est, est, n, level)
    rng = np.random.default_rng(seed)
    boots = _boots(stat, a, g, n_boot, rng)
    lo, hi = np.percentile(boots, [50 * (1 - level), 50 * (1 + level)])
    return Estimate(est, float(lo), float(hi), n, level)


def ratio_ci(num: Sequence[float], den: Sequence[float], stat: Callable = np.median, n_boot: int = 2000,
             level: float = 0.95, seed: int = 0, groups: tuple[Sequence, Sequence] | None = None) -> Estimate:
    """``stat(num) / stat(den)`` and its interval, resampling both samples independently (``groups``: the
    cluster of each value of ``num`` and of ``den``, resampled first; the estimate's clusters are the fewer
    of the two sides')."""
    (a, ga, na), (b, gb, nb) = (_sample(x, g) for x, g in zip((num, den), groups or (None, None)))
    n = None if na is None or nb is None else min(na, nb)
    if a.size == 0 or b.size == 0:
        return _nan_estimate(n, level)
    est = float(stat(a) / stat(b))
    if a.size == 1 and b.size == 1:
        return Estimate(est, est, est, n, level)
    rng = np.random.default_rng(seed)
    boots = _boots(stat, a, ga, n_boot, rng) / _boots(stat, b, gb, n_boot, rng)
    lo, hi = np.percentile(boots, [50 * (1 - level), 50 * (1 + level)])
    return Estimate(est, float(lo), float(hi), n, level)


def t_interval(values: Sequence[float], level: float = 0.95, log: bool = False) -> Estimate:
    """Mean (geometric mean with ``log``) of one value per fresh process and its Student-t interval over
    them: ``clusters`` is how many values there are."""
    from scipy.stats import t

    a = np.asarray([v for v in values if v == v], dtype=float)
    if a.size == 0:
        return _nan_estimate(0, level)
    x = np.log(a) if log else a
    m = float(x.mean())
    if a.size < 2:
        e = math.exp(m) if log else m
        return Estimate(e, float("nan"), float("nan"), int(a.size), level)
    half = float(t.ppf(0.5 + level / 2, a.size - 1) * x.std(ddof=1) / math.sqrt(a.size))
    lo, hi = m - half, m + half
    f = math.exp if log else (lambda v: v)
    return Estimate(f(m), f(lo), f(hi), int(a.size), level)


def proportion_ci(k: int, n: int, level: float = 0.95) -> Estimate:
    """k/n and the Clopper-Pearson exact binomial interval of a proportion. All n passing gives a lower
    bound of ((1 - level)/2)^(1/n), never 1 (0.982 for n = 200). No clusters: the trials are taken as
    independent."""
    from scipy.stats import beta

    if n <= 0 or not 0 <= k <= n:
        return _nan_estimate(None, level)
    a = 1 - level
    lo = 0.0 if k == 0 else float(beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a / 2, k + 1, n - k))
    return Estimate(k / n, lo, hi, None, level)


def cluster_proportion_ci(k: Sequence[float], n: Sequence[float], level: float = 0.95) -> Estimate:
    """k/n pooled and its interval where the trials come in clusters (the fresh processes, or the runs,
    that share their noise): the Korn-Graubard interval (Korn and Graubard 1998, the NCHS method for survey
    proportions). The design-based variance of the pooled share is read from the spread of the clusters'
    counts (ratio estimator, clusters drawn with replacement); the effective size n_eff = p(1-p)/v (never
    above n: a design effect below 1 is not credited) is shrunk by (t_{n-1}/t_{m-1})^2 for the m clusters'
    degrees of freedom, and the Clopper-Pearson interval is drawn at that size. All trials passing keeps the
    Clopper-Pearson floor at the shrunk size, never [1, 1]. Fewer than two clusters: no interval (nothing
    measures the noise between them)."""
    from scipy.stats import beta, t

    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    if k.size == 0 or n.sum() <= 0 or np.any(k < 0) or np.any(k > n):
        return _nan_estimate(int(k.size), level)
    big_n, m = float(n.sum()), k.size
    p = float(k.sum() / big_n)
    if m < 2:
        return Estimate(p, float("nan"), float("nan"), m, level)
    v = m / (m - 1) * float(np.sum((k - p * n) ** 2)) / big_n ** 2
    n_eff = big_n if v <= 0 or p * (1 - p) <= 0 else min(big_n, p * (1 - p) / v)
    a = 1 - level
    n_eff *= (t.ppf(1 - a / 2, max(big_n - 1, 1)) / t.ppf(1 - a / 2, m - 1)) ** 2
    k_eff = p * n_eff
    lo = 0.0 if p <= 0 else float(beta.ppf(a / 2, k_eff, n_eff - k_eff + 1))
    hi = 1.0 if p >= 1 else float(beta.ppf(1 - a / 2, k_eff + 1, n_eff - k_eff))
    return Estimate(p, lo, hi, m, level)

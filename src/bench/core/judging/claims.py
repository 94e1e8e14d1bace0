"""The claims ledger: every headline claim of every paper, the paper's value, ours with an interval, and
a verdict computed from records.

A study's ``claims.py`` builds :class:`Claim` rows from its records with :func:`claim`, which turns an
estimate and its interval into a verdict:

- ``reproduced``: the whole interval is on the paper's side of the threshold;
- ``not reproduced``: the whole interval is on the other side;
- ``inconclusive``: the interval straddles the threshold (a pass within noise is no pass), or the
  machine was busy while the step ran (see :mod:`bench.core.measuring.quiet`);
- ``needs hardware we lack``: the value is modelled, or was not run (no GPU, FPGA, NPU here);
- ``out of reach at this scale``: the claim depends on a scale this profile does not reach (the study says
  why in the reason).

Intervals come from repeats or from a bootstrap over per-query / per-run values (:func:`bootstrap_ci`,
:func:`ratio_ci`), processes first where the step ran in several (:mod:`bench.core.measuring.step`).

The semantics a referee cannot overturn (methods in the module :mod:`bench.core.measuring.sequential`
and the docstrings below), all through :func:`claim`:

- ``band=(lo, hi)``: an equality claim ("within 2%", "no gain", "0.91-1.42x") is a two-sided equivalence
  test (TOST with the 95% interval: alpha 0.025 a side): reproduced only when the whole interval lies in the
  band, not reproduced only when it lies wholly outside it;
- ``configs=[Config(...)]``: a claim over several configurations (every loader, every batch <= N) is judged
  over all of them (intersection-union: reproduced only if every configuration is); the reason names the
  worst one, and ours is the worst one's value;
- ``premises=[Premise(...)]``: the conditions the paper states the claim under, checked from our records;
  a failed one gives "out of reach at this scale" or "needs hardware we lack" naming it, never "not
  reproduced";
- ``observed=(lo, hi)``: a fitted quantity (knee, plateau, crossover) counts only inside the measured range;
- ``circular="..."``: our value is set by a parameter taken from the paper: a sanity check, never judged;
- ``interval="noise" | "spread" | "exact: why" | "binomial"``: what the interval is; a zero-width interval
  without an ``exact: ...`` reason is no evidence (inconclusive); :func:`proportion_ci` gives the
  Clopper-Pearson interval of k of n, :func:`cluster_proportion_ci` the Korn-Graubard interval where the
  trials come in clusters (fresh processes) that share their noise;
- ``search=bracket(levels)``: a search (fine-tuned concurrency, capacity) counts only when bracketed;
- ``one_run="why"``: the interval comes from one run (the repeats of one fresh process): it holds no
  run-to-run noise, so the row shows it and decides nothing. :mod:`bench.core.judging.ledger` joins every study's rows into the ledger (paper claims first,
the harness's targets counted apart, history and stability across runs).
"""
from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from ..measuring import records
from ..base.atomic import write_text

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
NEEDS_HARDWARE, OUT_OF_REACH = "needs hardware we lack", "out of reach at this scale"
NEEDS_TOOL = "needs a tool we lack"   # not run: a program this machine lacks (fio), not hardware
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NEEDS_HARDWARE, NEEDS_TOOL, OUT_OF_REACH)
SOURCES = ("measured", "emulated", "modelled", "not_run")


@dataclasses.dataclass
class Claim:
    study: str
    claim_id: str
    claim: str                # the paper's words (short)
    paper_value: str          # as the paper gives it, e.g. "3.1-3.9x"
    ours: float | None
    ci_low: float | None
    ci_high: float | None
    unit: str
    scale: str                # ours against the paper's, in words
    source: str               # measured / emulated / modelled / not_run
    verdict: str
    reason: str
    threshold: float | None = None
    direction: str = ">="
    machine_busy: bool = False
    threshold_also: float | None = None   # a second paper's threshold the same rule judges (bge and jina)
    band_high: float | None = None   # direction "within": the band is [threshold, band_high]
    interval: str = ""               # what the interval is: noise (fresh processes), spread, exact, binomial
    premise: str = ""                # the premises the claim was judged under, and whether each held

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"{self.claim_id}: unknown verdict {self.verdict!r}; one of {VERDICTS}")
        if self.source not in SOURCES:
            raise ValueError(f"{self.claim_id}: unknown source {self.source!r}; one of {SOURCES}")
        for name in ("claim", "paper_value", "unit", "scale", "reason"):   # np.float64(0.5) -> 0.5
            object.__setattr__(self, name, NUMPY_REPR.sub(r"\1", str(getattr(self, name))))


NUMPY_REPR = re.compile(r"np\.(?:float|int|uint|bool)\w*\((-?[^()]*)\)")


def judge(low: float | None, high: float | None, threshold: float, direction: str = ">=",
          band_high: float | None = None) -> str:
    """The verdict of an interval against a threshold (``>=``: ours must be at least the threshold; ``<=``:
    at most; ``within``: inside the band ``[threshold, band_high]``, a two-sided equivalence test)."""
    if low is None or high is None or any(map(_nan, (low, high))):
        return INCONCLUSIVE
    if direction == ">=":
        return REPRODUCED if low >= threshold else NOT_REPRODUCED if high < threshold else INCONCLUSIVE
    if direction == "<=":
        return REPRODUCED if high <= threshold else NOT_REPRODUCED if low > threshold else INCONCLUSIVE
    if direction == WITHIN:
        if band_high is None:
            raise ValueError("direction 'within' needs band_high")
        if threshold <= low and high <= band_high:
            return REPRODUCED
        return NOT_REPRODUCED if high < threshold or low > band_high else INCONCLUSIVE
    raise ValueError(f"direction must be '>=', '<=' or 'within', got {direction!r}")


WITHIN = "within"


def clears(threshold: float, direction: str = ">=", band_high: float | None = None) -> Callable[[float, float], bool]:
    """``decided(low, high)`` of a two-stage design (:mod:`bench.core.measuring.sequential`) for a threshold or
    band: the interval lies wholly on one side (or wholly in or out)."""
    return lambda lo, hi: judge(lo, hi, threshold, direction, band_high) != INCONCLUSIVE


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def why(verdict: str, lo, hi, threshold: float, direction: str, band_high: float | None = None) -> str:
    """Why ``verdict`` follows from the interval and the threshold (or band), in words."""
    if direction == WITHIN:
        band = f"the band [{_fmt(threshold)}, {_fmt(band_high)}]"
        if _nan(lo) or _nan(hi):
            return f"{verdict}: no interval to judge against {band}"
        iv = f"the interval [{_fmt(lo)}, {_fmt(hi)}]"
        return {REPRODUCED: f"{verdict}: all of {iv} lies inside {band} (two-sided equivalence, TOST at 0.025 a side)",
                NOT_REPRODUCED: f"{verdict}: all of {iv} lies outside {band}",
                INCONCLUSIVE: f"{verdict}: {iv} crosses an edge of {band}, so equivalence is not shown"}[verdict]
    if _nan(lo) or _nan(hi):
        return f"{verdict}: no interval to judge against {direction} {_fmt(threshold)}"
    side = "at least" if direction == ">=" else "at most"
    iv = f"the interval [{_fmt(lo)}, {_fmt(hi)}]"
    return {REPRODUCED: f"{verdict}: all of {iv} is {side} {_fmt(threshold)}",
            NOT_REPRODUCED: f"{verdict}: none of {iv} is {side} {_fmt(threshold)}",
            INCONCLUSIVE: f"{verdict}: {iv} straddles {_fmt(threshold)}, so a pass would be within noise"}[verdict]


@dataclasses.dataclass(frozen=True)
class Config:
    """One configuration of a claim made over several (every loader, every dataset, every batch <= N)."""

    name: str
    ours: float | None
    ci: tuple[float | None, float | None] = (None, None)
    busy: bool = False

    @classmethod
    def of(cls, name: str, estimate_low_high: tuple, busy: bool = False) -> "Config":
        """From an (estimate, low, high) triple as :func:`ratio_ci` and :func:`proportion_ci` return it."""
        e, lo, hi = estimate_low_high
        return cls(name, e, (lo, hi), bool(busy))


@dataclasses.dataclass(frozen=True)
class Premise:
    """A condition the paper states its claim under, checked from our records. ``holds`` None: not measured,
    or measured without deciding (its interval straddles the bar; the evidence says which).
    ``kind``: ``scale`` (a failed one gives "out of reach at this scale") or ``hardware`` ("needs hardware
    we lack"). ``row``: the ledger row (claim id) or record that measures it."""

    name: str
    holds: bool | None
    evidence: str = ""
    kind: str = "scale"
    row: str = ""

    def text(self) -> str:
        state = "holds" if self.holds else "undecided" if self.holds is None else "fails"
        cite = f" (see {self.row})" if self.row else ""
        return f"premise '{self.name}' {state}: {self.evidence}{cite}" if self.evidence else \
            f"premise '{self.name}' {state}{cite}"


def premise(name: str, value: float | None, threshold: float, direction: str = ">=", *, kind: str = "scale",
            row: str = "", unit: str = "", what: str = "") -> Premise:
    """A premise measured as a value against a threshold (``>=`` / ``<=``): holds or fails, with the numbers."""
    if _nan(value):
        return Premise(name, None, f"{what or 'its value'} is not in the records", kind, row)
    ok = value >= threshold if direction == ">=" else value <= threshold
    return Premise(name, bool(ok), f"{what or 'measured'} {_fmt(value)}{(' ' + unit) if unit else ''} "
                   f"against {direction} {_fmt(threshold)}", kind, row)


@dataclasses.dataclass(frozen=True)
class Search:
    """The outcome of a search over levels (fine-tuned concurrency, capacity): the highest level that met
    the target and the lowest above it that failed. Converged only when bracketed: both exist and are
    next to each other among the levels tried."""

    passed: float | None       # highest level that met the target
    failed: float | None       # lowest level above it that failed
    adjacent: bool             # no untried level between them (a step of the search's grid)
    cut_off: str = ""          # why the search stopped, when not bracketed (run limit, top of the grid)

    @property
    def bracketed(self) -> bool:
        return self.passed is not None and self.failed is not None and self.adjacent

    def text(self) -> str:
        if self.bracketed:
            return f"bracketed: {_fmt(self.passed)} met the target, {_fmt(self.failed)} next to it did not"
        if self.passed is None and self.failed is None and self.cut_off:
            return f"not bracketed: {self.cut_off}"
        if self.passed is None:
            return f"not bracketed: no level met the target{'; ' + self.cut_off if self.cut_off else ''}"
        if self.failed is None:
            return (f"not bracketed: {_fmt(self.passed)}, the highest level tried, still met the target"
                    f"{'; ' + self.cut_off if self.cut_off else ''} (a lower bound, not converged)")
        return (f"not bracketed: {_fmt(self.passed)} met the target and {_fmt(self.failed)} failed, with untried "
                f"levels between them{'; ' + self.cut_off if self.cut_off else ''}")


def bracket(levels: Iterable[tuple[float, bool]], step: float | None = None, cut_off: str = "") -> Search:
    """A :class:`Search` from (level, met the target) pairs. The boundary is the highest passing level below
    the lowest failing one; ``step``: the grid's spacing (the pair is adjacent when ``failed - passed <=
    step``); without it, adjacent when no tried level lies between them."""
    tried = sorted(dict(levels).items())
    fails = [lv for lv, ok in tried if not ok]
    passes = [lv for lv, ok in tried if ok]
    if not passes:
        return Search(None, min(fails) if fails else None, False, cut_off)
    first_fail = min((f for f in fails if f > min(passes)), default=None)
    below = [p for p in passes if first_fail is None or p < first_fail]
    best = max(below)
    if first_fail is None:
        return Search(best, None, False, cut_off)
    adjacent = (first_fail - best <= step + 1e-12) if step is not None else \
        not any(best < lv < first_fail for lv, _ in tried)
    return Search(best, first_fail, adjacent, cut_off)


def proportion_ci(k: int, n: int, level: float = 0.95) -> tuple[float, float, float]:
    """(k/n, low, high): the Clopper-Pearson exact binomial interval of a proportion. All n passing gives
    a lower bound of ((1 - level)/2)^(1/n), never 1 (0.982 for n = 200)."""
    from scipy.stats import beta

    if n <= 0 or not 0 <= k <= n:
        return float("nan"), float("nan"), float("nan")
    a = 1 - level
    lo = 0.0 if k == 0 else float(beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a / 2, k + 1, n - k))
    return k / n, lo, hi


def cluster_proportion_ci(k: Sequence[float], n: Sequence[float],
                          level: float = 0.95) -> tuple[float, float, float]:
    """(k/n pooled, low, high) of a proportion whose trials come in clusters (the fresh processes, or the
    runs, that share their noise): the Korn-Graubard interval (Korn & Graubard 1998, the NCHS method for
    survey proportions). The design-based variance of the pooled share is read from the spread of the
    clusters' counts (ratio estimator, clusters drawn with replacement); the effective size n_eff =
    p(1-p)/v (never above n: a design effect below 1 is not credited) is shrunk by (t_{n-1}/t_{m-1})^2 for
    the m clusters' degrees of freedom, and the Clopper-Pearson interval is drawn at that size. All trials
    passing keeps the Clopper-Pearson floor at the shrunk size, never [1, 1]. Fewer than two clusters: no
    interval (nothing measures the noise between them)."""
    from scipy.stats import beta, t

    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    if k.size == 0 or n.sum() <= 0 or np.any(k < 0) or np.any(k > n):
        return float("nan"), float("nan"), float("nan")
    big_n, m = float(n.sum()), k.size
    p = float(k.sum() / big_n)
    if m < 2:
        return p, float("nan"), float("nan")
    v = m / (m - 1) * float(np.sum((k - p * n) ** 2)) / big_n ** 2
    n_eff = big_n if v <= 0 or p * (1 - p) <= 0 else min(big_n, p * (1 - p) / v)
    a = 1 - level
    n_eff *= (t.ppf(1 - a / 2, max(big_n - 1, 1)) / t.ppf(1 - a / 2, m - 1)) ** 2
    k_eff = p * n_eff
    lo = 0.0 if p <= 0 else float(beta.ppf(a / 2, k_eff, n_eff - k_eff + 1))
    hi = 1.0 if p >= 1 else float(beta.ppf(1 - a / 2, k_eff + 1, n_eff - k_eff))
    return p, lo, hi


def _score(lo, hi, threshold, direction, band_high) -> float:
    """How far an interval lies on the paper's side (negative: the other side); the worst configuration
    has the lowest."""
    if _nan(lo) or _nan(hi):
        return -math.inf
    if direction == ">=":
        return lo - threshold
    if direction == "<=":
        return threshold - hi
    return min(lo - threshold, band_high - hi)


def over_all(configs: Sequence[Config], threshold: float, direction: str = ">=",
             band_high: float | None = None) -> tuple[str, Config, str]:
    """(verdict, worst configuration, words) of a claim over every configuration (intersection-union):
    reproduced only when every configuration is, not reproduced when any one is wholly on the other side
    (one counterexample refutes "for all"), else inconclusive; the worst is the configuration of that
    verdict lying least on the paper's side."""
    if not configs:
        raise ValueError("a claim over configurations needs at least one")
    vs = [judge(*c.ci, threshold, direction, band_high) for c in configs]
    verdict = NOT_REPRODUCED if NOT_REPRODUCED in vs else REPRODUCED if all(v == REPRODUCED for v in vs) \
        else INCONCLUSIVE
    cands = [c for c, v in zip(configs, vs) if v == verdict]
    worst = min(cands, key=lambda c: _score(*c.ci, threshold, direction, band_high))
    each = "; ".join(f"{c.name} {_fmt(c.ours)} [{_fmt(c.ci[0])}, {_fmt(c.ci[1])}] {v}" for c, v in zip(configs, vs))
    words = (f"judged over all {len(configs)} configurations the claim covers (reproduced only if every one is); "
             f"worst: {worst.name}; each: {each}")
    return verdict, worst, words


def _zero_width(lo, hi) -> bool:
    return not _nan(lo) and not _nan(hi) and abs(hi - lo) <= 1e-12 * max(1.0, abs(lo))


def claim(study: str, claim_id: str, text: str, paper_value: str, *, ours: float | None = None,
          ci: tuple[float | None, float | None] = (None, None), threshold: float | None = None,
          direction: str = ">=", unit: str = "", scale: str = "", source: str = "measured",
          reason: str = "", machine_busy: bool = False, verdict: str | None = None,
          target: float | None = None, threshold_also: float | None = None,
          band: tuple[float, float] | None = None, configs: Sequence[Config] | None = None,
          premises: Sequence[Premise] = (), observed: tuple[float, float] | None = None,
          circular: str = "", interval: str = "", search: Search | None = None, one_run: str = "") -> Claim:
    """A ledger row with its verdict computed from the interval (or given, for hardware/scale cases); the
    reason ends with why the verdict follows. ``target``: the harness's own threshold on the same
    measurement (one measurement, one row), judged in the reason. The judging keywords (see the module
    docstring): ``band`` (two-sided equivalence), ``configs`` (judged over all), ``premises``, ``observed``
    (the measured range a fitted value must lie in), ``circular`` (a parameter from the paper: sanity check
    only), ``interval`` (noise / spread / ``exact: why`` / binomial), ``search`` (bracketed or not) and
    ``one_run`` (why the interval comes from one run, one fresh process: it holds no run-to-run noise, so the
    row keeps its interval in words and decides nothing)."""
    band_high = None
    if band is not None:
        threshold, band_high, direction = float(band[0]), float(band[1]), WITHIN
    notes = []
    if configs:
        if threshold is None:
            raise ValueError(f"{claim_id}: a claim over configurations needs a threshold or a band")
        cv, worst, words = over_all(configs, threshold, direction, band_high)
        ours, ci = worst.ours, worst.ci
        machine_busy = machine_busy or any(c.busy for c in configs)
        notes.append(words)
    lo, hi = ci
    if not any(map(_nan, (ours, lo, hi))) and not (min(lo, hi) - 1e-9 <= ours <= max(lo, hi) + 1e-9):
        reason = f"interval [{_fmt(lo)}, {_fmt(hi)}] discarded: it does not contain the estimate; {reason}"
        lo = hi = None
    if interval == "spread":
        notes.append("the interval is the spread over configurations, not run-to-run noise")
    elif interval.startswith("exact"):
        notes.append(f"zero-width or exact interval: {interval.partition(':')[2].strip() or 'exact by construction'}")
    elif interval == "binomial":
        notes.append("exact binomial (Clopper-Pearson) 95% interval")
    elif interval:
        notes.append(f"interval: {interval}")
    if premises:
        notes.append("; ".join(p.text() for p in premises))
    if search is not None:
        notes.append(f"search {search.text()}")
    lead = "; ".join([reason] + notes if reason else notes)
    if verdict is None:
        verdict, because = _decide(claim_id, ours, lo, hi, threshold, direction, band_high, source, machine_busy,
                                   premises, observed, circular, interval, search, one_run)
        reason = f"{lead}; {because}" if lead and because else lead or because
        if target is not None and verdict not in (NEEDS_HARDWARE, OUT_OF_REACH) and not circular:
            tv = judge(lo, hi, target, direction if direction != WITHIN else ">=")
            tv = f"{tv} on a quiet machine, {INCONCLUSIVE} here" if machine_busy and tv != INCONCLUSIVE else tv
            reason += f"; the harness's target {direction} {_fmt(target)}: {tv}"
    else:
        reason = lead
    pre = "; ".join(p.text() for p in premises)
    return Claim(study, claim_id, text, paper_value, _f(ours), _f(lo), _f(hi), unit, scale, source,
                 verdict, reason, _f(threshold), direction, bool(machine_busy), _f(threshold_also), _f(band_high),
                 interval, pre)


def _decide(claim_id, ours, lo, hi, threshold, direction, band_high, source, machine_busy, premises, observed,
            circular, interval, search, one_run="") -> tuple[str, str]:
    """(verdict, why) in the order a referee would ask: was it measured, is it circular, do the premises
    hold, did the search converge, was the fitted value observed, is the interval evidence, then the
    interval against the threshold, then the busy machine."""
    if source in ("modelled", "not_run"):
        return NEEDS_HARDWARE, ""
    would = ""
    if threshold is not None and not _nan(lo):
        would = f"; it would read {why(judge(lo, hi, threshold, direction, band_high), lo, hi, threshold, direction, band_high)}"
    if circular:
        return NEEDS_HARDWARE, (f"{NEEDS_HARDWARE}: a sanity check, not judged: our value is set by a parameter "
                                f"taken from the paper ({circular}){would}")
    failed = [p for p in premises if p.holds is False]
    if failed:
        v = NEEDS_HARDWARE if any(p.kind == "hardware" for p in failed) else OUT_OF_REACH
        return v, f"{v}: the paper states the claim under {', '.join(repr(p.name) for p in failed)}, which fails here"
    unknown = [p for p in premises if p.holds is None]
    if unknown:
        return INCONCLUSIVE, (f"{INCONCLUSIVE}: premise {', '.join(repr(p.name) for p in unknown)} undecided "
                              f"(not measured, or its interval straddles its bar)")
    if search is not None and not search.bracketed:
        return INCONCLUSIVE, f"{INCONCLUSIVE}: the search did not converge ({search.text()})"
    if observed is not None:
        a, b = observed
        inside = not any(map(_nan, (ours, lo, hi))) and a <= min(ours, lo) and max(ours, hi) <= b
        if not inside:
            return OUT_OF_REACH, (f"{OUT_OF_REACH}: the fitted value {_fmt(ours)} [{_fmt(lo)}, {_fmt(hi)}] is not "
                                  f"inside the measured range [{_fmt(a)}, {_fmt(b)}], so it is extrapolated, not "
                                  "observed")
    if threshold is None:
        raise ValueError(f"{claim_id}: a measured claim needs a threshold or an explicit verdict")
    if one_run:
        return INCONCLUSIVE, (f"{INCONCLUSIVE}: the interval comes from one run ({one_run}), so it holds no "
                              f"run-to-run noise and decides nothing{would}")
    if _zero_width(lo, hi) and not interval.startswith("exact"):
        return INCONCLUSIVE, (f"{INCONCLUSIVE}: the interval [{_fmt(lo)}, {_fmt(hi)}] has zero width with no "
                              f"reason it is exact (one value, or identical values resampled): no evidence{would}")
    verdict = judge(lo, hi, threshold, direction, band_high)
    because = why(verdict, lo, hi, threshold, direction, band_high)
    if machine_busy and verdict in (REPRODUCED, NOT_REPRODUCED):
        because = (f"{INCONCLUSIVE}: the machine stayed busy during the step after its waits and reruns; on a "
                   f"quiet machine the interval would read {because}")
        verdict = INCONCLUSIVE
    return verdict, because


def _f(x) -> float | None:
    return None if _nan(x) else float(x)


def _resampled(stat: Callable, a: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``stat`` of ``n_boot`` resamples of ``a``: one vectorised call when ``stat`` takes ``axis``."""
    idx = rng.integers(0, a.size, (n_boot, a.size))
    try:
        return np.asarray(stat(a[idx], axis=1), dtype=float)
    except TypeError:
        return np.array([stat(a[i]) for i in idx], dtype=float)


def process_of(rows: pd.DataFrame) -> np.ndarray:
    """The fresh process of each row (``process``, :mod:`bench.core.measuring.step`); 0 where the step ran in one."""
    return rows["process"].to_numpy() if "process" in rows else np.zeros(len(rows), dtype=int)


def n_processes(rows: pd.DataFrame) -> int:
    """How many fresh processes the rows name (``process``; rows without one, or none named, count as one)."""
    return max(1, int(rows["process"].nunique())) if "process" in rows else 1


def processes_text(rows: pd.DataFrame) -> str:
    """How many fresh processes the rows came from, for a reason."""
    n = len(np.unique(process_of(rows)))
    return f"{n} fresh processes, resampled first" if n > 1 else "one process"


def _hierarchical(stat: Callable, a: np.ndarray, groups: np.ndarray, n_boot: int,
                  rng: np.random.Generator) -> np.ndarray:
    """``stat`` of ``n_boot`` two-level resamples: the processes (``groups``) with replacement, then the
    values within each chosen process; so the spread between processes is in the interval."""
    parts = [a[groups == g] for g in np.unique(groups)]
    out = np.empty(n_boot)
    for b in range(n_boot):
        picked = [parts[i] for i in rng.integers(0, len(parts), len(parts))]
        out[b] = stat(np.concatenate([x[rng.integers(0, x.size, x.size)] for x in picked]))
    return out


def _sample(values, groups) -> tuple[np.ndarray, np.ndarray | None]:
    """Values without NaN, and their groups where there are two or more."""
    a = np.asarray(values, dtype=float)
    g = None if groups is None else np.asarray(groups)
    keep = ~np.isnan(a)
    a, g = a[keep], (None if g is None else g[keep])
    return a, (g if g is not None and len(np.unique(g)) > 1 else None)


def _boots(stat, a, g, n_boot, rng) -> np.ndarray:
    return _resampled(stat, a, n_boot, rng) if g is None else _hierarchical(stat, a, g, n_boot, rng)


def bootstrap_ci(values: Sequence[float], stat: Callable = np.median, n_boot: int = 2000,
                 level: float = 0.95, seed: int = 0, groups: Sequence | None = None) -> tuple[float, float, float]:
    """(estimate, low, high): ``stat`` of ``values`` and its percentile-bootstrap interval. ``groups``: the
    process of each value (a step repeated across processes, :mod:`bench.core.measuring.step`): processes are
    resampled first, then values within them."""
    a, g = _sample(values, groups)
    if a.size == 0:
        return float("nan"), float("nan"), float("nan")
    est = float(stat(a))
    if a.size == 1:
        return est, est, est
    rng = np.random.default_rng(seed)
    boots = _boots(stat, a, g, n_boot, rng)
    lo, hi = np.percentile(boots, [50 * (1 - level), 50 * (1 + level)])
    return est, float(lo), float(hi)


def ratio_ci(num: Sequence[float], den: Sequence[float], stat: Callable = np.median, n_boot: int = 2000,
             level: float = 0.95, seed: int = 0,
             groups: tuple[Sequence, Sequence] | None = None) -> tuple[float, float, float]:
    """(estimate, low, high) of ``stat(num) / stat(den)``, resampling both samples independently
    (``groups``: the process of each value of ``num`` and of ``den``, resampled first)."""
    (a, ga), (b, gb) = (_sample(x, g) for x, g in zip((num, den), groups or (None, None)))
    if a.size == 0 or b.size == 0:
        return float("nan"), float("nan"), float("nan")
    est = float(stat(a) / stat(b))
    if a.size == 1 and b.size == 1:
        return est, est, est
    rng = np.random.default_rng(seed)
    boots = _boots(stat, a, ga, n_boot, rng) / _boots(stat, b, gb, n_boot, rng)
    lo, hi = np.percentile(boots, [50 * (1 - level), 50 * (1 + level)])
    return est, float(lo), float(hi)


def frame(rows: Iterable[Claim]) -> pd.DataFrame:
    df = pd.DataFrame([dataclasses.asdict(r) for r in rows])
    if df.empty:
        raise ValueError("no claim rows")
    dup = df[df.duplicated(["study", "claim_id"])]
    if not dup.empty:
        raise ValueError(f"duplicate claim ids: {dup.claim_id.tolist()}")
    return df


def busy(df: pd.DataFrame) -> bool:
    """Whether any row of these records was measured while the machine was busy (bench.core.measuring.quiet)."""
    return bool(df["machine_busy"].any()) if "machine_busy" in df and len(df) else False


def _fmt(x) -> str:
    if _nan(x):
        return "–"
    return f"{x:.3g}"


def ours_text(r) -> str:
    if _nan(r["ours"]):
        return "–"
    txt = _fmt(r["ours"])
    if not _nan(r["ci_low"]) and not _nan(r["ci_high"]):
        txt += f" [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]"
    return f"{txt} {r['unit']}".strip()


def threshold_text(r) -> str:
    """The threshold cell: ``>= 3``, ``<= 1.02``, or ``within [0.98, 1.02]`` for an equivalence band."""
    if _nan(r["threshold"]):
        return "–"
    hi = r.get("band_high") if hasattr(r, "get") else None
    if r["direction"] == WITHIN and hi is not None and not _nan(hi):
        return f"within [{_fmt(r['threshold'])}, {_fmt(hi)}]"
    return f"{r['direction']} {_fmt(r['threshold'])}"


def to_markdown(df: pd.DataFrame, title: str) -> str:
    counts = df.verdict.value_counts()
    lines = [f"# {title}", "",
             "Verdicts: " + ", ".join(f"{v} {counts.get(v, 0)}" for v in VERDICTS), "",
             "Ours: estimate [95% interval]. Source says whether our value was measured, measured on an "
             "emulated device, modelled, or not run. A pass within noise is inconclusive.", "",
             "| study | claim | paper | ours | threshold | scale | source | verdict | reason |",
             "|---|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        thr = threshold_text(r)
        cells = [r["study"], f"**{r['claim_id']}**: {r['claim']}", r["paper_value"], ours_text(r), thr,
                 r["scale"], r["source"], f"**{r['verdict']}**", r["reason"]]
        lines.append("| " + " | ".join(str(c).replace("|", "/").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write(rows: Iterable[Claim], out: str | Path, provenance: dict) -> Path:
    """A study's claims as a record set (``claims.parquet``) and a Markdown table (``claims.md``)."""
    df = frame(rows)
    out = Path(out)
    study = df.study.iloc[0]
    write_text(out.with_suffix(".md"), to_markdown(df, f"Claims ledger: {study}"))
    return records.write(out, df, provenance)

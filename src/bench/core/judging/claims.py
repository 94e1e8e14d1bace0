"""A claim's verdict, computed from records: every headline claim of every paper, the paper's value, ours
with an interval, and a verdict a referee cannot overturn.

A study's ``claims.py`` builds :class:`Claim` rows from its records with :func:`claim`, which turns an
estimate and its interval into a verdict:

- ``reproduced``: the whole interval is on the paper's side of the threshold;
- ``not reproduced``: the whole interval is on the other side;
- ``inconclusive``: the interval straddles the threshold (a pass within noise is no pass), rests on fewer
  fresh processes than :data:`bench.core.judging.intervals.MIN_PROCESSES`, or the machine was busy while the
  step ran (:mod:`bench.core.measuring.quiet`);
- ``needs hardware we lack``: the value is modelled, was not run, or did not run on the hardware the claim's
  mechanism needs (so that hardware would settle it);
- ``out of reach at this scale``: a premise the paper states the claim under fails here;
- ``sanity check, not judged``: our value is set by numbers taken from the paper, and no hardware the claim
  needs is missing (no measurement here could settle it: it checks our arithmetic against the paper's);
  counted apart from the rest.

Intervals come from :mod:`bench.core.judging.intervals` (an :class:`~bench.core.judging.intervals.Estimate`
carries how many fresh processes it resampled). What the paper fixed, the hardware a claim needs and the
paper's definition of its quantity are declared with :mod:`bench.core.judging.fidelity`.

The keywords of :func:`claim`, each a rule core enforces for every study alike:

- ``estimate=``: ours, its interval and its clusters in one (an ``Estimate``); a timed row (a speed, a
  latency, a memory reading: anything measured that is not declared ``quality=``) decides nothing from
  fewer than three fresh processes, or from an interval that does not say how many it resampled;
- ``band=(lo, hi)``: an equality claim ("within 2%", "no gain", "0.91-1.42x") is a two-sided equivalence
  test (TOST with the 95% interval: alpha 0.025 a side);
- ``configs=[Config(...)]``: a claim over several configurations (every loader, every batch <= N) is judged
  over all of them (intersection-union); the reason names the worst one, and ours is the worst one's value;
- ``premises=[Premise(...)]``: the conditions the paper states the claim under (:func:`premise_interval`:
  tested with an interval, as the claim is); a failed one gives "out of reach at this scale" or "needs
  hardware we lack" naming it, never "not reproduced"; a premise whose bar lies past the claim's own
  threshold on a quantity that bounds the claim's (``bounds_claim``) would decide the claim by itself, and
  is refused;
- ``needs=("gpu",)`` with ``ran_on=``: the hardware the claim's mechanism needs
  (:data:`bench.core.judging.fidelity.HARDWARE`) against where the records ran; ``judged_on`` names the
  profile and machine that would judge it;
- ``definition=Definition(...)``: the paper's definition beside ours; where they differ, not judged;
- ``fixed_by=(PaperInput, ...)`` (or ``circular="why"``): our value is set by numbers taken from the
  paper: never judged; "needs hardware we lack" where the claim's hardware is missing (on it the value would be
  measured), else a sanity check;
- ``quantity="..."``: what the row measures; a target on the quantity of a paper row carries that row's
  premises (:func:`check`);
- ``quality="why"``: a load-independent quantity (recall, MRR, a hit rate, a size): deterministic given the
  build, so no fresh processes are needed and a busy machine does not touch it;
- ``observed=(lo, hi)``: a fitted quantity (knee, plateau, crossover) counts only inside the measured range;
- ``interval="noise" | "spread" | "exact: why" | "binomial"``: what the interval is; a zero-width interval
  without an ``exact: ...`` reason is no evidence;
- ``search=bracket(levels)``: a search counts only when bracketed;
- ``one_run="why"``: the interval comes from one run: it holds no run-to-run noise and decides nothing.

:mod:`bench.core.judging.ledger` joins every study's rows into the ledger.
"""
from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Callable, Iterable, Sequence

import pandas as pd

from ..base.atomic import write_text
from ..measuring import records
from . import fidelity
from .intervals import MIN_PROCESSES, Estimate

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
NEEDS_HARDWARE, OUT_OF_REACH = "needs hardware we lack", "out of reach at this scale"
NEEDS_TOOL = "needs a tool we lack"   # not run: a program this machine lacks (fio), not hardware
SANITY = "sanity check, not judged"   # set by the paper's own numbers, with no hardware missing that would settle it
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NEEDS_HARDWARE, NEEDS_TOOL, OUT_OF_REACH, SANITY)
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
    definition: str = ""             # the paper's definition of the quantity (section, words) beside ours
    needs: str | None = None         # the hardware the mechanism needs (comma-separated; "" none; None undeclared)
    ran_on: str = ""                 # the hardware the records ran on
    fixed_by: str = ""               # paper inputs that set our value (comma-separated names): a sanity check
    clusters: float | None = None    # fresh processes the interval resampled
    quantity: str = ""               # what the row measures (a target on a paper row's quantity shares its premises)
    why: str = ""                    # why the verdict follows, in one clause (the reason's end, for a folded cell)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"{self.claim_id}: unknown verdict {self.verdict!r}; one of {VERDICTS}")
        if self.source not in SOURCES:
            raise ValueError(f"{self.claim_id}: unknown source {self.source!r}; one of {SOURCES}")
        for name in ("claim", "paper_value", "unit", "scale", "reason", "definition", "why"):   # np.float64 -> number
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
    clusters: int | None = None   # fresh processes its interval resampled

    @classmethod
    def of(cls, name: str, estimate_low_high: tuple, busy: bool = False) -> "Config":
        """From an (estimate, low, high) triple, an :class:`Estimate` keeping its clusters."""
        e, lo, hi = estimate_low_high
        return cls(name, e, (lo, hi), bool(busy), getattr(estimate_low_high, "clusters", None))


@dataclasses.dataclass(frozen=True)
class Premise:
    """A condition the paper states its claim under, checked from our records. ``holds`` None: not measured,
    or measured without deciding (its interval straddles the bar, or rests on too few processes; the
    evidence says which). ``kind``: ``scale`` (a failed one gives "out of reach at this scale") or
    ``hardware`` ("needs hardware we lack"). ``row``: the ledger row (claim id) or record that measures it.
    ``paper``: the paper's value of the same quantity, beside ours. ``bar``/``direction``: the bar the
    premise's quantity is held to; ``bounds_claim``: that quantity bounds the claim's own from the paper's
    side (a premise bar past the claim's threshold would then decide the claim: :func:`claim` refuses it)."""

    name: str
    holds: bool | None
    evidence: str = ""
    kind: str = "scale"
    row: str = ""
    paper: str = ""
    bar: float | None = None
    direction: str = ">="
    bounds_claim: bool = False

    def text(self) -> str:
        state = "holds" if self.holds else "undecided" if self.holds is None else "fails"
        cite = f" (see {self.row})" if self.row else ""
        paper = f"; the paper: {self.paper}" if self.paper else ""
        return f"premise '{self.name}' {state}: {self.evidence}{paper}{cite}" if self.evidence else \
            f"premise '{self.name}' {state}{paper}{cite}"


def premise(name: str, value: float | None, threshold: float, direction: str = ">=", *, kind: str = "scale",
            row: str = "", unit: str = "", what: str = "", paper: str = "", exact: str = "",
            bounds_claim: bool = False) -> Premise:
    """A premise read as one value against a bar (``>=`` / ``<=``). Only a quantity that is exact given the
    build (``exact``: why: K/N, an index's share of memory from its sizes) is decided from one value; a
    measured one is tested as the claim is, with an interval over fresh processes
    (:func:`premise_interval`), and one reading of it leaves the premise undecided."""
    if _nan(value):
        return Premise(name, None, f"{what or 'its value'} is not in the records", kind, row, paper, threshold,
                       direction, bounds_claim)
    words = f"{what or 'measured'} {_fmt(value)}{(' ' + unit) if unit else ''} against {direction} {_fmt(threshold)}"
    if not exact:
        return Premise(name, None, f"{words}: one reading of a measured quantity, not an interval over fresh "
                       "processes", kind, row, paper, threshold, direction, bounds_claim)
    ok = value >= threshold if direction == ">=" else value <= threshold
    return Premise(name, bool(ok), f"{words} (exact: {exact})", kind, row, paper, threshold, direction, bounds_claim)


def premise_interval(name: str, estimate: tuple, threshold: float, direction: str = ">=", *, kind: str = "scale",
                     row: str = "", unit: str = "", what: str = "", paper: str = "",
                     bounds_claim: bool = False, quality: bool = False) -> Premise:
    """A premise tested with the claim's own statistic: an interval (an :class:`Estimate`, over fresh
    processes unless ``quality``) against a bar. Holds when the whole interval is on the bar's side, fails
    when it is wholly on the other, undecided when it straddles the bar or rests on fewer than
    :data:`MIN_PROCESSES` fresh processes."""
    est, lo, hi = estimate
    clusters = getattr(estimate, "clusters", None)
    u = f" {unit}" if unit else ""
    words = f"{what or 'measured'} {_fmt(est)}{u} [{_fmt(lo)}, {_fmt(hi)}] against {direction} {_fmt(threshold)}"
    args = (kind, row, paper, threshold, direction, bounds_claim)
    if _nan(lo) or _nan(hi):
        return Premise(name, None, f"{words}: no interval", *args)
    if not quality and (clusters is None or clusters < MIN_PROCESSES):
        n = "an unstated number of" if clusters is None else str(clusters)
        return Premise(name, None, f"{words}: from {n} fresh processes, fewer than the {MIN_PROCESSES} an "
                       "interval between runs needs", *args)
    v = judge(lo, hi, threshold, direction)
    holds = True if v == REPRODUCED else False if v == NOT_REPRODUCED else None
    return Premise(name, holds, words + (f" ({clusters} fresh processes)" if clusters else ""), *args)


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


@dataclasses.dataclass(frozen=True)
class Terms:
    """Everything a verdict follows from: the claim's own terms and what the records say about them."""

    claim_id: str
    ours: float | None
    lo: float | None
    hi: float | None
    threshold: float | None
    direction: str
    band_high: float | None
    source: str
    machine_busy: bool
    premises: Sequence[Premise]
    observed: tuple[float, float] | None
    circular: str
    interval: str
    search: Search | None
    one_run: str
    clusters: int | None
    missing: tuple[str, ...]
    ran_on: str
    judged_on: str
    definition: fidelity.Definition | None
    quality: str

    @property
    def timed(self) -> bool:
        """A measured quantity with run-to-run noise: not declared quality, not exact, not a spread."""
        return not self.quality and self.source in ("measured", "emulated") and \
            not self.interval.startswith("exact") and self.interval != "spread"

    @property
    def failed(self) -> list[Premise]:
        """The premises that fail here."""
        return [p for p in self.premises if p.holds is False]

    @property
    def undecided(self) -> list[Premise]:
        """The premises measured without deciding, or not measured."""
        return [p for p in self.premises if p.holds is None]

    def would(self) -> str:
        """What the interval alone would read, or what a failed or undecided premise would make of it first."""
        if self.threshold is None or _nan(self.lo):
            return ""
        if self.failed or self.undecided:
            v = OUT_OF_REACH if self.failed else INCONCLUSIVE
            return (f"; judged, it would read {v} first: premise {_names(self.failed or self.undecided)} "
                    f"{'fails' if self.failed else 'is undecided'}")
        v = judge(self.lo, self.hi, self.threshold, self.direction, self.band_high)
        return f"; it would read {why(v, self.lo, self.hi, self.threshold, self.direction, self.band_high)}"


def claim(study: str, claim_id: str, text: str, paper_value: str, *, ours: float | None = None,
          ci: tuple[float | None, float | None] = (None, None), estimate: Estimate | None = None,
          threshold: float | None = None, direction: str = ">=", unit: str = "", scale: str = "",
          source: str = "measured", reason: str = "", machine_busy: bool = False, verdict: str | None = None,
          target: float | None = None, threshold_also: float | None = None,
          band: tuple[float, float] | None = None, configs: Sequence[Config] | None = None,
          premises: Sequence[Premise] = (), observed: tuple[float, float] | None = None,
          circular: str = "", interval: str = "", search: Search | None = None, one_run: str = "",
          clusters: int | None = None, needs: Sequence[str] | None = None, ran_on: Iterable[str] = (),
          judged_on: str = "", definition: fidelity.Definition | None = None,
          fixed_by: Sequence[fidelity.PaperInput] = (), quantity: str = "", quality: str = "") -> Claim:
    """A ledger row with its verdict computed from its terms (or given, for a row that was not run); the
    reason ends with why the verdict follows. ``target``: the harness's own threshold on the same
    measurement (one measurement, one row), judged in the reason under the same premises. The keywords are
    the rules of the module docstring."""
    if estimate is not None:
        ours, ci = estimate[0], (estimate[1], estimate[2])
        clusters = getattr(estimate, "clusters", None) if clusters is None else clusters
    band_high = None
    if band is not None:
        threshold, band_high, direction = float(band[0]), float(band[1]), WITHIN
    _refuse_deciding_premises(claim_id, premises, threshold, direction)
    notes = []
    if configs:
        if threshold is None:
            raise ValueError(f"{claim_id}: a claim over configurations needs a threshold or a band")
        _, worst, words = over_all(configs, threshold, direction, band_high)
        ours, ci = worst.ours, worst.ci
        machine_busy = machine_busy or any(c.busy for c in configs)
        if any(c.clusters is not None for c in configs):
            clusters = min(c.clusters for c in configs if c.clusters is not None)
        notes.append(words)
    lo, hi = ci
    if not any(map(_nan, (ours, lo, hi))) and not (min(lo, hi) - 1e-9 <= ours <= max(lo, hi) + 1e-9):
        reason = f"interval [{_fmt(lo)}, {_fmt(hi)}] discarded: it does not contain the estimate; {reason}"
        lo = hi = None
    if fixed_by and not circular:
        circular = "; ".join(inp.text() for inp in fixed_by)
    have = frozenset(ran_on)
    terms = Terms(claim_id, ours, lo, hi, threshold, direction, band_high, source, bool(machine_busy) and not quality,
                  premises, observed, circular, interval, search, one_run, clusters,
                  tuple(fidelity.missing(needs or (), have)), fidelity.words(sorted(have)) if have else "",
                  judged_on, definition, quality)
    lead = "; ".join(filter(None, [reason, *notes, *_notes(terms)]))
    because = ""
    if verdict is None:
        verdict, because = _decide(terms)
        reason = f"{lead}; {because}" if lead and because else lead or because
        reason += _target_words(terms, verdict, target)
    else:
        reason = lead
    because = because or (reason.split("; ")[0] if reason else verdict)
    return Claim(study, claim_id, text, paper_value, _f(ours), _f(lo), _f(hi), unit, scale, source,
                 verdict, reason, _f(threshold), direction, terms.machine_busy, _f(threshold_also), _f(band_high),
                 interval, "; ".join(p.text() for p in premises), definition.text() if definition else "",
                 None if needs is None else ",".join(needs), ",".join(sorted(have)),
                 ",".join(inp.name for inp in fixed_by), _f(clusters), quantity, because)


def _refuse_deciding_premises(claim_id: str, premises: Sequence[Premise], threshold, direction: str) -> None:
    """A premise on a quantity that bounds the claim's own, with its bar past the claim's threshold, would
    decide the claim whenever it holds: the row could not fail. That is a bug in the study, refused here."""
    if threshold is None:
        return
    for p in premises:
        if not p.bounds_claim or p.bar is None or p.direction != direction:
            continue
        past = p.bar >= threshold if direction == ">=" else p.bar <= threshold if direction == "<=" else False
        if past:
            raise ValueError(f"{claim_id}: premise {p.name!r} bar {direction} {_fmt(p.bar)} lies past the claim's "
                             f"own threshold {_fmt(threshold)}: a satisfied premise would decide the claim")


def _notes(t: Terms) -> list[str]:
    """What the interval is, the premises, the search, the hardware and the definition, in words."""
    out = []
    if t.interval == "spread":
        out.append("the interval is the spread over configurations, not run-to-run noise")
    elif t.interval.startswith("exact"):
        out.append(f"zero-width or exact interval: {t.interval.partition(':')[2].strip() or 'exact by construction'}")
    elif t.interval == "binomial":
        out.append("exact binomial (Clopper-Pearson) 95% interval")
    elif t.interval:
        out.append(f"interval: {t.interval}")
    if t.quality:
        out.append(f"a load-independent quantity ({t.quality}): a busy machine does not touch it")
    elif t.timed and t.clusters is not None:
        out.append(f"the interval resamples {t.clusters} fresh process{'es' if t.clusters != 1 else ''}")
    if t.premises:
        out.append("; ".join(p.text() for p in t.premises))
    if t.search is not None:
        out.append(f"search {t.search.text()}")
    if t.definition is not None:
        out.append(f"definition: {t.definition.text()}")
    return out


def _target_words(t: Terms, verdict: str, target: float | None) -> str:
    """The harness's own threshold on the same measurement, judged only where the paper's could be."""
    if target is None or verdict in (NEEDS_HARDWARE, OUT_OF_REACH) or t.circular:
        return ""
    if verdict == INCONCLUSIVE and (any(p.holds is None for p in t.premises) or _few(t) or t.one_run):
        return f"; the harness's target {t.direction} {_fmt(target)}: {INCONCLUSIVE} for the same reason"
    tv = judge(t.lo, t.hi, target, t.direction if t.direction != WITHIN else ">=")
    tv = f"{tv} on a quiet machine, {INCONCLUSIVE} here" if t.machine_busy and tv != INCONCLUSIVE else tv
    return f"; the harness's target {t.direction} {_fmt(target)}: {tv}"


def _few(t: Terms) -> bool:
    return t.timed and (t.clusters is None or t.clusters < MIN_PROCESSES)


def _decide(t: Terms) -> tuple[str, str]:
    """(verdict, why) in the order a referee would ask: was it measured, did it run on the hardware it needs,
    is it set by the paper, is it the paper's quantity, do the premises hold, did the search converge,
    was the fitted value observed, is the interval evidence (enough processes, not zero-width), then the
    interval against the threshold, then the busy machine."""
    for check in (_measured, _hardware, _fixed, _same_quantity, _premised, _searched, _observed, _evidence):
        out = check(t)
        if out is not None:
            return out
    verdict = judge(t.lo, t.hi, t.threshold, t.direction, t.band_high)
    because = why(verdict, t.lo, t.hi, t.threshold, t.direction, t.band_high)
    if t.machine_busy and verdict in (REPRODUCED, NOT_REPRODUCED):
        because = (f"{INCONCLUSIVE}: the machine stayed busy during the step after its waits and reruns; on a "
                   f"quiet machine the interval would read {because}")
        verdict = INCONCLUSIVE
    return verdict, because


def _measured(t: Terms):
    return (NEEDS_HARDWARE, "") if t.source in ("modelled", "not_run") else None


def _fixed(t: Terms):
    if not t.circular:
        return None
    return SANITY, (f"{SANITY}: our value is set by numbers taken from the paper ({t.circular}), and no hardware "
                    f"the claim needs is missing, so no measurement here could settle it{t.would()}")


def _hardware(t: Terms):
    if not t.missing:
        return None
    where = t.ran_on or ("an emulated or modelled stand-in" if t.source != "measured" else "this machine's CPU")
    judged = f"; judged on {t.judged_on}" if t.judged_on else ""
    fixed = (f"; here our value is also set by numbers taken from the paper ({t.circular})" if t.circular else "")
    failed = f"; premise {_names(t.failed)} fails here too" if t.failed else ""
    return NEEDS_HARDWARE, (f"{NEEDS_HARDWARE}: the claim's mechanism needs {fidelity.words(t.missing)}, and these "
                            f"records ran on {where}; a stand-in is drawn beside the claim, never judges it"
                            f"{judged}{fixed}{failed}{t.would()}")


def _same_quantity(t: Terms):
    if t.definition is None or t.definition.same:
        return None
    return INCONCLUSIVE, (f"{INCONCLUSIVE}: not judged: our quantity is not the one the paper defines "
                          f"({t.definition.text()}){t.would()}")


def _names(premises: Sequence[Premise]) -> str:
    return ", ".join(repr(p.name) for p in premises)


def _premised(t: Terms):
    if t.failed:
        v = NEEDS_HARDWARE if any(p.kind == "hardware" for p in t.failed) else OUT_OF_REACH
        return v, f"{v}: the paper states the claim under {_names(t.failed)}, which fails here"
    if t.undecided:
        return INCONCLUSIVE, (f"{INCONCLUSIVE}: premise {_names(t.undecided)} undecided "
                              f"(not measured, one reading, too few processes, or its interval straddles its bar)")
    return None


def _searched(t: Terms):
    if t.search is None or t.search.bracketed:
        return None
    return INCONCLUSIVE, f"{INCONCLUSIVE}: the search did not converge ({t.search.text()})"


def _observed(t: Terms):
    if t.observed is None:
        return None
    a, b = t.observed
    if not any(map(_nan, (t.ours, t.lo, t.hi))) and a <= min(t.ours, t.lo) and max(t.ours, t.hi) <= b:
        return None
    return OUT_OF_REACH, (f"{OUT_OF_REACH}: the fitted value {_fmt(t.ours)} [{_fmt(t.lo)}, {_fmt(t.hi)}] is not "
                          f"inside the measured range [{_fmt(a)}, {_fmt(b)}], so it is extrapolated, not observed")


def _evidence(t: Terms):
    """Is the interval evidence: a threshold, more than one run, enough fresh processes, a width."""
    if t.threshold is None:
        raise ValueError(f"{t.claim_id}: a measured claim needs a threshold or an explicit verdict")
    if t.one_run:
        return INCONCLUSIVE, (f"{INCONCLUSIVE}: the interval comes from one run ({t.one_run}), so it holds no "
                              f"run-to-run noise and decides nothing{t.would()}")
    if _few(t):
        n = "an unstated number of" if t.clusters is None else str(t.clusters)
        return INCONCLUSIVE, (f"{INCONCLUSIVE}: the interval resamples {n} fresh processes, fewer than the "
                              f"{MIN_PROCESSES} an interval between runs needs{t.would()}")
    if _zero_width(t.lo, t.hi) and not t.interval.startswith("exact"):
        return INCONCLUSIVE, (f"{INCONCLUSIVE}: the interval [{_fmt(t.lo)}, {_fmt(t.hi)}] has zero width with no "
                              f"reason it is exact (one value, or identical values resampled): no evidence{t.would()}")
    return None


def _f(x) -> float | None:
    return None if _nan(x) else float(x)


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


def is_target(claim_id: str) -> bool:
    """A harness target or implementation check (``target-``, ``check-``), not a paper's claim."""
    return claim_id.startswith(("target-", "check-"))


def check(rows: Sequence[Claim], reproduces_paper: bool = True) -> list[str]:
    """What makes a study's rows unfit for the ledger, each in words (empty: fit): a paper claim that does not
    quote the paper's definition of its quantity or declare the hardware its mechanism needs (``needs=()``
    when a CPU is all it needs), and a target on the quantity of a paper row that drops one of that row's
    premises (a target obeys the premises a paper row does)."""
    bad = []
    paper = [r for r in rows if reproduces_paper and not is_target(r.claim_id)]
    for r in paper:
        if not r.definition:
            bad.append(f"{r.claim_id}: quotes no definition of its quantity (definition=Definition(...))")
        if r.needs is None:
            bad.append(f"{r.claim_id}: declares no hardware (needs=(...), () when a CPU is all it needs)")
    by_quantity = {r.quantity: r for r in paper if r.quantity}
    for r in rows:
        src = by_quantity.get(r.quantity) if is_target(r.claim_id) and r.quantity else None
        if src is None:
            continue
        lacking = sorted(_premise_names(src.premise) - _premise_names(r.premise))
        if lacking:
            bad.append(f"{r.claim_id}: a target on {src.claim_id}'s quantity without its premise(s) {lacking}")
    return bad


def _premise_names(text: str) -> set[str]:
    return set(re.findall(r"premise '([^']+)'", text or ""))


def write(rows: Iterable[Claim], out: str | Path, provenance: dict, reproduces_paper: bool = True) -> Path:
    """A study's claims as a record set (``claims.parquet``) and a Markdown table (``claims.md``), after
    :func:`check` (a row unfit for the ledger is a bug in the study: an error naming it)."""
    rows = list(rows)
    bad = check(rows, reproduces_paper)
    if bad:
        raise ValueError(f"{rows[0].study if rows else '?'} claims unfit for the ledger: " + "; ".join(bad))
    df = frame(rows)
    out = Path(out)
    study = df.study.iloc[0]
    write_text(out.with_suffix(".md"), to_markdown(df, f"Claims ledger: {study}"))
    return records.write(out, df, provenance)

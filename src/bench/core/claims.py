"""The claims ledger: every headline claim of every paper, the paper's value, ours with an interval, and
a verdict computed from records.

A study's ``claims.py`` builds :class:`Claim` rows from its records with :func:`claim`, which turns an
estimate and its interval into a verdict:

- ``reproduced``: the whole interval is on the paper's side of the threshold;
- ``not reproduced``: the whole interval is on the other side;
- ``inconclusive``: the interval straddles the threshold (a pass within noise is no pass), or the
  machine was busy while the step ran (see :mod:`bench.core.quiet`);
- ``needs hardware we lack``: the value is modelled, or was not run (no GPU, FPGA, NPU here);
- ``out of reach at this scale``: the claim depends on a scale this profile does not reach (the study says
  why in the reason).

Intervals come from repeats or from a bootstrap over per-query / per-run values (:func:`bootstrap_ci`,
:func:`ratio_ci`). :mod:`bench.core.ledger` joins every study's rows into the ledger (paper claims first,
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

from . import records
from .atomic import write_text

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

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"{self.claim_id}: unknown verdict {self.verdict!r}; one of {VERDICTS}")
        if self.source not in SOURCES:
            raise ValueError(f"{self.claim_id}: unknown source {self.source!r}; one of {SOURCES}")
        for name in ("claim", "paper_value", "unit", "scale", "reason"):   # np.float64(0.5) -> 0.5
            object.__setattr__(self, name, NUMPY_REPR.sub(r"\1", str(getattr(self, name))))


NUMPY_REPR = re.compile(r"np\.(?:float|int|uint|bool)\w*\((-?[^()]*)\)")


def judge(low: float | None, high: float | None, threshold: float, direction: str = ">=") -> str:
    """The verdict of an interval against a threshold (``>=``: ours must be at least the threshold)."""
    if low is None or high is None or any(map(_nan, (low, high))):
        return INCONCLUSIVE
    if direction == ">=":
        return REPRODUCED if low >= threshold else NOT_REPRODUCED if high < threshold else INCONCLUSIVE
    if direction == "<=":
        return REPRODUCED if high <= threshold else NOT_REPRODUCED if low > threshold else INCONCLUSIVE
    raise ValueError(f"direction must be '>=' or '<=', got {direction!r}")


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def why(verdict: str, lo, hi, threshold: float, direction: str) -> str:
    """Why ``verdict`` follows from the interval and the threshold, in words."""
    if _nan(lo) or _nan(hi):
        return f"{verdict}: no interval to judge against {direction} {_fmt(threshold)}"
    side = "at least" if direction == ">=" else "at most"
    iv = f"the interval [{_fmt(lo)}, {_fmt(hi)}]"
    return {REPRODUCED: f"{verdict}: all of {iv} is {side} {_fmt(threshold)}",
            NOT_REPRODUCED: f"{verdict}: none of {iv} is {side} {_fmt(threshold)}",
            INCONCLUSIVE: f"{verdict}: {iv} straddles {_fmt(threshold)}, so a pass would be within noise"}[verdict]


def claim(study: str, claim_id: str, text: str, paper_value: str, *, ours: float | None,
          ci: tuple[float | None, float | None] = (None, None), threshold: float | None = None,
          direction: str = ">=", unit: str = "", scale: str = "", source: str = "measured",
          reason: str = "", machine_busy: bool = False, verdict: str | None = None,
          target: float | None = None, threshold_also: float | None = None) -> Claim:
    """A ledger row with its verdict computed from the interval (or given, for hardware/scale cases); the
    reason ends with why the verdict follows from the interval and the threshold. ``target``: the
    harness's own threshold on the same measurement (one measurement, one row), judged in the reason."""
    lo, hi = ci
    if not any(map(_nan, (ours, lo, hi))) and not (min(lo, hi) - 1e-9 <= ours <= max(lo, hi) + 1e-9):
        reason = f"interval [{_fmt(lo)}, {_fmt(hi)}] discarded: it does not contain the estimate; {reason}"
        lo = hi = None
    if verdict is None:
        if source in ("modelled", "not_run"):
            verdict = NEEDS_HARDWARE
        elif threshold is None:
            raise ValueError(f"{claim_id}: a measured claim needs a threshold or an explicit verdict")
        else:
            verdict = judge(lo, hi, threshold, direction)
            because = why(verdict, lo, hi, threshold, direction)
            if machine_busy and verdict in (REPRODUCED, NOT_REPRODUCED):
                because = (f"{INCONCLUSIVE}: the machine was busy during the step; on a quiet machine the "
                           f"interval would read {because}")
                verdict = INCONCLUSIVE
            reason = f"{reason}; {because}" if reason else because
            if target is not None:
                tv = judge(lo, hi, target, direction)
                tv = f"{tv} on a quiet machine, {INCONCLUSIVE} here" if machine_busy and tv != INCONCLUSIVE else tv
                reason += f"; the harness's target {direction} {_fmt(target)}: {tv}"
    return Claim(study, claim_id, text, paper_value, _f(ours), _f(lo), _f(hi), unit, scale, source,
                 verdict, reason, threshold, direction, bool(machine_busy), _f(threshold_also))


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
    """The fresh process of each row (``process``, :mod:`bench.core.step`); 0 where the step ran in one."""
    return rows["process"].to_numpy() if "process" in rows else np.zeros(len(rows), dtype=int)


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
    process of each value (a step repeated across processes, :mod:`bench.core.step`): processes are
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
    """Whether any row of these records was measured while the machine was busy (bench.core.quiet)."""
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


def to_markdown(df: pd.DataFrame, title: str) -> str:
    counts = df.verdict.value_counts()
    lines = [f"# {title}", "",
             "Verdicts: " + ", ".join(f"{v} {counts.get(v, 0)}" for v in VERDICTS), "",
             "Ours: estimate [95% interval]. Source says whether our value was measured, measured on an "
             "emulated device, modelled, or not run. A pass within noise is inconclusive.", "",
             "| study | claim | paper | ours | threshold | scale | source | verdict | reason |",
             "|---|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        thr = "–" if _nan(r["threshold"]) else f"{r['direction']} {_fmt(r['threshold'])}"
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


def write_ledger(paths: Sequence[str | Path], out_md: str | Path, out_png: str | Path, profile: str) -> None:
    """The ledger across studies: see :mod:`bench.core.ledger`."""
    from . import ledger

    ledger.write(paths, out_md, out_png, profile)

"""Enough repeats to decide, shared by every study: a fixed two-stage design.

Adding repeats until an interval clears its threshold and then reporting a fixed-n interval inflates false
verdicts (optional stopping). The harness uses the simplest valid design (a fixed two-stage design with a
Bonferroni split of alpha, see the reference notes on judging a claim):

- stage 1 runs ``n1`` repeats in fresh processes; its interval is drawn at level ``1 - alpha/2``;
- if that interval clears the claim's threshold (or band) the step stops; otherwise stage 2 runs ``n2``
  more (its size fixed in advance, never chosen from the data), and the interval over all ``n1 + n2``
  is drawn again at ``1 - alpha/2``;
- whichever look the step stops at, the chance that the reported interval misses the true value is at most
  ``alpha/2 + alpha/2 = alpha`` (union bound over the two looks), so the 95% claim holds under the stopping.

Rows of a step run under this design carry ``stage`` (1 or 2); claims read :data:`LEVEL` for them through
:func:`level_of`. :func:`two_stage` is the generic loop (used by :mod:`bench.core.measuring.step` and by the
coverage test in ``tests/core/test_sequential.py``).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np
import pandas as pd

ALPHA = 0.05
LOOKS = 2
LEVEL = 1 - ALPHA / LOOKS   # each look's interval level (0.975): the design's 95% over both looks
METHOD = (f"fixed two-stage design: stage 2's size fixed in advance, each look's interval at {LEVEL:.3g} "
          f"(alpha {ALPHA} split over {LOOKS} looks, Bonferroni), so the reported interval keeps 95% coverage "
          "whichever look the step stops at")


@dataclasses.dataclass
class Outcome:
    """What the design did: the values of every repeat run, the stages run, the last interval."""

    values: list
    stages: int
    estimate: float
    low: float
    high: float
    decided: bool


def two_stage(draw: Callable[[int, int], Sequence[float]], interval: Callable[[Sequence[float], float], tuple],
              decided: Callable[[float, float], bool], n1: int, n2: int) -> Outcome:
    """Run the design: ``draw(n, stage)`` returns ``n`` fresh values; ``interval(values, level)`` returns
    (estimate, low, high); ``decided(low, high)`` says whether the interval clears the threshold."""
    values = list(draw(n1, 1))
    est, lo, hi = interval(values, LEVEL)
    if decided(lo, hi) or n2 <= 0:
        return Outcome(values, 1, est, lo, hi, decided(lo, hi))
    values += list(draw(n2, 2))
    est, lo, hi = interval(values, LEVEL)
    return Outcome(values, 2, est, lo, hi, decided(lo, hi))


def level_of(rows: pd.DataFrame, default: float = 0.95) -> float:
    """The interval level claims must use for these rows: :data:`LEVEL` when they came from a two-stage
    step (a ``stage`` column), else ``default``."""
    return LEVEL if "stage" in rows and rows["stage"].notna().any() else default


def stages_text(rows: pd.DataFrame) -> str:
    """How many stages the rows came from, for a reason."""
    if "stage" not in rows or not rows["stage"].notna().any():
        return ""
    n = int(np.nanmax(rows["stage"].to_numpy(float)))
    return (f"two-stage design, {n} stage{'s' if n > 1 else ''} run "
            f"({'stage 1 did not clear the threshold' if n > 1 else 'stage 1 cleared it'}), {LEVEL:.3g} a look")

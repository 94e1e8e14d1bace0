"""The scan step's two-stage design (issue 29): stage 2 runs only when stage 1's intervals, over the fresh
processes at the design's level, do not clear both targets."""
from __future__ import annotations

import numpy as np
import pandas as pd

from bench.chameleon.steps.scan import decided


def _rows(ratio: float, gbps: float, spread: float) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for proc in (0, 1):
        for r in range(3):
            for impl in ("faiss", "torch"):
                rows.append({"impl": impl, "device": "cpu", "process": proc, "run": r,
                             "pair_ratio_torch_over_faiss": ratio + spread * rng.normal(),
                             "gbps_per_core": gbps + spread * rng.normal()})
    return pd.DataFrame(rows)


def test_clear_intervals_stop_after_stage_one():
    assert decided(_rows(1.2, 1.5, 0.01), None)


def test_an_interval_straddling_a_target_asks_for_stage_two():
    assert not decided(_rows(1.99, 1.5, 0.05), None)   # torch/faiss straddles 2x
    assert not decided(_rows(1.2, 1.0, 0.05), None)    # GB/s per core straddles 1.0

"""Pieces of the measurement steps that need no service: per-round statistics, the max-concurrency
bounds from rounds, the profile depths a serving step starts from, fine-tuning that never converges."""
from __future__ import annotations

import asyncio

import numpy as np

from bench.windve.system import estimator
from bench.windve.load import level_stat, round_row
from bench.windve.steps.inputs import profile_depths
from bench.windve.steps.serving import bounds

from . import synthetic


def _res(lat, dev="emulated", status=200):
    return {"latency_s": lat, "status": status, "device": dev, "dispatch_us": 2.0}


def test_round_row_and_level_statistic():
    row = round_row([_res(0.1), _res(0.3, "cpu"), _res(0.01, "", 429)], c=3, r=1, phase="measured")
    assert row["n_ok"] == 2 and row["n_busy"] == 1 and row["latency_max_s"] == 0.3
    assert row["latency_max_cpu_s"] == 0.3 and row["latency_max_emulated_s"] == 0.1 and np.isnan(row["latency_max_cuda_s"])
    rows = [dict(row, latency_max_s=v, phase=ph) for v, ph in ((9.0, "warmup"), (0.2, "measured"), (0.4, "measured"),
                                                               (0.3, "measured"))]
    assert level_stat(rows) == 0.3   # median of measured rounds; warm-up excluded


def test_bounds_from_rounds():
    tags = {"pair": "p", "slo_s": 0.5, "config": "offload"}
    rows = [{"kind": "round", **tags, "concurrency": c, "n": c, "n_ok": c, "latency_max_s": t}
            for c, t in ((10, 0.4), (10, 0.45), (12, 0.45), (12, 0.55), (14, 0.6), (14, 0.7))]
    assert bounds(rows, tags, 0.5) == (10, 12)


def test_profile_depths_read_back():
    fit, depths = profile_depths(synthetic.profile_df())
    assert fit["alpha"] == synthetic.LAWS["cpu"][0]
    assert depths[("emulated", "v100-xeon", 0.5)] == int((0.5 - 0.017) / 0.0126)


def test_fine_tune_that_never_meets_the_slo_says_so():
    async def measure(depths):
        return {d: 1.0 for d in depths}

    s = asyncio.run(estimator.fine_tune(measure, {"acc": 4}, slo_s=0.5, max_runs=3))
    assert not s.converged and s.runs == 3


def test_profile_depths_of_a_gpu_run_and_depth_columns():
    from bench.windve.steps.serving import depth_cols

    fit, depths = profile_depths(synthetic.profile_df("cuda"))
    assert ("cuda", "v100-xeon", 0.5) in depths and not any(k[0] == "emulated" for k in depths)
    assert depth_cols({"cuda": 40, "cpu": 8}) == {"depth_acc": 40, "depth_cpu": 8}
    assert depth_cols({"emulated": 40}) == {"depth_acc": 40}

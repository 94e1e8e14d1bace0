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
    """The serving step starts from the median over the profile's fresh service processes."""
    prof = synthetic.profile_df()
    fit, depths = profile_depths(prof)
    fits = prof[(prof.kind == "fit") & (prof.experiment == "base") & (prof.device == "cpu")]
    assert len(fits) == 3 and fit["alpha"] == fits.alpha.median()
    reg = prof[(prof.kind == "depth") & (prof.experiment == "base") & (prof.method == "regression")
               & (prof.device == "emulated") & (prof.pair == "v100-xeon") & (prof.slo_s == 0.5)]
    assert depths[("emulated", "v100-xeon", 0.5)] == int(reg.depth.median())


def test_repeats_are_shared_over_the_service_processes():
    from bench.windve.steps.inputs import first_index, share

    assert [share(12, k, 3) for k in range(3)] == [4, 4, 4]
    assert [share(2, k, 3) for k in range(3)] == [1, 1, 1]     # at least one each: never fewer repeats
    assert [share(5, k, 3) for k in range(3)] == [2, 2, 1]
    assert [first_index(5, k, 3) for k in range(3)] == [0, 2, 4]


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


def test_a_bursty_schedule_with_a_negative_quiet_rate_is_refused_at_the_door():
    """burst_factor x burst_s over the period would make the quiet rate negative: the serving step says so
    before any service starts (it once failed two minutes into the step)."""
    import pytest

    from bench.core.base.errors import ConfigError
    from bench.windve.params import check

    check(synthetic.params(openloop={"burst_s": 0.25, "period_s": 1.0}))
    with pytest.raises(ConfigError, match="quiet rate between bursts would be negative"):
        check(synthetic.params(openloop={"burst_s": 0.25, "period_s": 0.75}))

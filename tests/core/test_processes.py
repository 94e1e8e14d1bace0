"""Repeats across fresh processes (issue #18, verdicts that hold between runs): a step declared
``processes=True`` splits its repeats over fresh interpreters, and intervals resample processes first."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from bench.core.judging import claims

from bench.core.judging import intervals

from bench.core.measuring import records
from bench.core.measuring.step import Context, Result, execute
from bench.core.declaring.study import step


@step("split", processes=True)
def split(ctx: Context) -> Result:
    """Module level, so a spawned interpreter finds it by name."""
    n = ctx.share(5)
    return Result(pd.DataFrame({"pid": [os.getpid()] * n, "run": range(n)}), method="demo")


@step("whole")
def whole(ctx: Context) -> Result:
    return Result(pd.DataFrame({"pid": [os.getpid()], "share": [ctx.share(5)]}), method="demo")


def _ctx(tmp_path, processes: int) -> Context:
    return Context("demo", "s", {"a": 1}, "t", 3, 1, tmp_path / "s.parquet", processes=processes)


def test_share_splits_repeats_evenly_and_never_below_one():
    ctx = Context("d", "s", {}, "t", 0, 1, "x", processes=3)
    from dataclasses import replace
    assert [replace(ctx, process=i).share(5) for i in range(3)] == [2, 2, 1]
    assert [replace(ctx, process=i).share(2) for i in range(3)] == [1, 1, 1]
    assert ctx.shared_total(5) == 5 and ctx.shared_total(2) == 3
    assert replace(ctx, processes=1).share(5) == 5


def test_declared_step_runs_in_fresh_processes(tmp_path):
    execute(_ctx(tmp_path, 3), split)
    df = records.read(tmp_path / "s.parquet")
    assert len(df) == 5 and df.groupby("process").size().tolist() == [2, 2, 1]
    assert df.pid.nunique() == 3 and os.getpid() not in set(df.pid)
    assert df.attrs["provenance"]["processes"]["count"] == 3


def test_undeclared_step_runs_once_here(tmp_path):
    execute(_ctx(tmp_path, 3), whole)
    df = records.read(tmp_path / "s.parquet")
    assert df.pid.tolist() == [os.getpid()] and df.share.tolist() == [5] and "process" not in df


def test_interval_over_processes_covers_the_spread_between_them():
    rng = np.random.default_rng(0)
    per = [rng.normal(m, 0.05, 40) for m in (1.0, 1.3, 1.1)]
    a, g = np.concatenate(per), np.repeat([0, 1, 2], 40)
    _, flat_lo, flat_hi = intervals.bootstrap_ci(a)
    _, lo, hi = intervals.bootstrap_ci(a, groups=g)
    assert hi - lo > 2 * (flat_hi - flat_lo)
    # one process: the same interval as without groups
    assert intervals.bootstrap_ci(a, groups=np.zeros(a.size)) == intervals.bootstrap_ci(a)
    est, rlo, rhi = intervals.ratio_ci(a, a[::-1], groups=(g, g[::-1]))
    assert rlo < est < rhi and rhi - rlo > (intervals.ratio_ci(a, a[::-1])[2] - intervals.ratio_ci(a, a[::-1])[1])
    assert intervals.processes_text(pd.DataFrame({"process": g})).startswith("3 fresh processes")
    assert intervals.processes_text(pd.DataFrame({"x": [1]})) == "one process"


def test_typed_params_with_dict_sections_pickle():
    import pickle

    from bench.chameleon import STUDY

    p = STUDY.parameters({})
    assert pickle.loads(pickle.dumps(p)) == p


def test_unequal_processes_are_resampled_at_once_as_the_loop_would():
    """Processes holding different numbers of values: the two-level resamples drawn at once (padded with NaN)
    give the interval the one-resample-at-a-time loop gives, for the statistics that have a NaN-skipping twin."""
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.normal(10, 1, 50), rng.normal(11, 1, 80), rng.normal(9, 1, 30)])
    g = np.repeat([0, 1, 2], [50, 80, 30])
    for stat in (np.median, np.mean):
        fast = intervals.bootstrap_ci(a, stat=stat, groups=g, n_boot=4000)
        twins = dict(intervals._NAN_STATS)
        intervals._NAN_STATS.clear()
        try:
            loop = intervals.bootstrap_ci(a, stat=stat, groups=g, n_boot=4000)
        finally:
            intervals._NAN_STATS.update(twins)
        assert fast[0] == loop[0] and fast.clusters == loop.clusters == 3
        assert abs(fast[1] - loop[1]) < 0.15 and abs(fast[2] - loop[2]) < 0.15

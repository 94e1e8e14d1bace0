"""The replay's extend times (Trinity section 3.2's engine, replayed by the ``load`` and ``sched`` steps): the
``trace`` step times every launch count in interleaved calibration rounds, and the replay's cost of a partly
full engine comes from those rounds relative to the full engine, so a slow stretch of the host during the
full extends does not make a partly full engine serve more than a full one."""
import numpy as np
import pandas as pd
import pytest

from bench.core.measuring import records
from bench.trinity.steps import inputs
from bench.trinity.system import event_loop


def test_a_calibrated_shape_scales_the_full_engines_times():
    shape = event_loop.calibrated_shape([1, 1, 2, 2, 4, 4], [0.5, 0.5, 0.6, 0.6, 1.0, 1.0], full=4)
    assert shape == pytest.approx({1: 0.5, 2: 0.6, 4: 1.0})
    tm = event_loop.TimeModel([(0, 4, 2.0), (0, 4, 2.2), (0, 1, 0.1)], 0, shape, full=4)
    assert tm.median(4) == pytest.approx(2.1)
    assert tm.median(1) == pytest.approx(1.05), "the full level (2.1) times the calibrated shape (0.5)"
    assert tm.median(3) == pytest.approx(2.1 * 0.6), "the nearest calibrated count (2; ties go low)"
    assert tm.with_seed(1).median(2) == pytest.approx(2.1 * 0.6)
    assert event_loop.calibrated_shape([1, 2], [0.5, 0.6], full=4) == {}, "rounds that never filled the engine"
    bare = event_loop.TimeModel([(0, 4, 2.0), (0, 1, 0.1)], 0)
    assert bare.median(1) == pytest.approx(0.1), "no shape: the nearest measured count, as before"


def _trace_rows(full_s: float, partial_s: float, rounds: bool) -> pd.DataFrame:
    """A trace of capacity 8 (2 launches full, 1 launch at <= 4 slots): the main pass's full extends at
    ``full_s``, its few partial ones at ``partial_s``; calibration rounds (when ``rounds``) at 1.0 ms full
    and 0.6 ms with one launch, measured side by side."""
    ext = [{"row": "extend", "phase": "measured", "tasks": 8, "launches": 2, "dur_s": full_s, "active": 8}] * 40
    ext += [{"row": "extend", "phase": "measured", "tasks": 2, "launches": 1, "dur_s": partial_s, "active": 2}] * 4
    if rounds:
        for r in range(3):
            ext += [{"row": "extend", "phase": "measured", "tasks": 1, "launches": 1, "dur_s": 6e-4, "active": 1,
                     "calibration": True, "round": r},
                    {"row": "extend", "phase": "measured", "tasks": 8, "launches": 2, "dur_s": 1e-3, "active": 8,
                     "calibration": True, "round": r}]
    req = [{"row": "request", "phase": "measured", "qidx": q, "top_m": 16, "extends": 3, "steps": [4, 4, 4],
            "ids": list(range(10)), "recall_at_10": 1.0} for q in range(4)]
    df = pd.DataFrame(ext + req)
    df["dataset"], df["capacity"], df["chunk"], df["slot_lanes"], df["fixed_shape"] = "d", 8, 64, 16, False
    return df


def test_the_replay_keeps_a_full_engine_no_slower_per_slot_than_a_partly_full_one():
    """A slow stretch fell on the main pass's full extends (2.0 ms) but not its partial ones (0.5 ms): 4 busy
    slots (one launch) would then take half the time per slot of 8, so a load sized by the full engine
    would not be that share of what the replay serves. With the calibration rounds, the one-launch cost is
    0.6 of the full engine's current level, as the rounds measured it side by side."""
    stale = inputs.traced_of(_trace_rows(2e-3, 5e-4, rounds=False), 0)
    assert stale.times.median(1) / 4 <= 0.5 * stale.times.median(2) / 8      # the confound, without rounds
    got = inputs.traced_of(_trace_rows(2e-3, 5e-4, rounds=True), 0)
    assert got.t_full == pytest.approx(2e-3), "capacity is sized by the main pass's full extends"
    assert got.times.median(2) == pytest.approx(2e-3)
    assert got.times.median(1) == pytest.approx(0.6 * 2e-3)
    assert got.times.median(1) / 4 > got.times.median(2) / 8


def test_the_trace_times_every_launch_count_in_interleaved_rounds(study):
    """The study's engine (capacity 8, 16 lanes a slot, 64 a launch: 2 launches full) is calibrated at 1, 5
    and 8 busy slots in each of its 3 rounds, so each round holds both launch counts."""
    tr = records.read(study["records"]["trace"][0])
    cal = tr[tr["round"].notna()]
    assert sorted(cal["round"].unique()) == [0, 1, 2]
    for _, rnd in cal.groupby("round"):
        assert set(rnd.launches.astype(int)) == {1, 2}
        assert rnd.active.iloc[0] == 1 and rnd.active.max() == 8
    model = inputs.load_trace_processes(study["records"]["trace"][0], 0)[0].times
    assert model.shape is not None and model.full == 2 and model.shape[2] == 1.0
    # the shape is the rounds' own medians (their timing depends on the machine, so no bound on it here: on a
    # busy machine one launch read 8.3x the full engine's median in one test run)
    med = cal.groupby(cal.launches.astype(int)).dur_s.median()
    assert model.shape[1] == pytest.approx(med[1] / med[2])

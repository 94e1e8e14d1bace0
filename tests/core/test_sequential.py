"""The fixed two-stage design keeps its 95% coverage under stopping on the data (issue 29), checked on
synthetic runs from a known distribution; and the quiet-machine waits and reruns are bounded."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bench.core.judging import claims
from bench.core.measuring import quiet, sequential


def _t_interval(values, level):
    a = np.asarray(values, float)
    m, se = a.mean(), a.std(ddof=1) / np.sqrt(a.size)
    h = stats.t.ppf(0.5 + level / 2, a.size - 1) * se
    return m, m - h, m + h


def _coverage(true_mean: float, threshold: float, level_fn=None, runs: int = 4000, seed: int = 1):
    """Share of simulated runs whose reported interval misses the true mean, and how many went to stage 2."""
    rng = np.random.default_rng(seed)
    decided = claims.clears(threshold)
    miss = second = 0
    for _ in range(runs):
        out = sequential.two_stage(lambda n, stage: rng.normal(true_mean, 1.0, n), level_fn or _t_interval,
                                   decided, n1=5, n2=5)
        miss += not (out.low <= true_mean <= out.high)
        second += out.stages == 2
    return miss / runs, second / runs


def test_two_stage_design_keeps_coverage_when_it_stops_on_the_data():
    miss, second = _coverage(true_mean=0.8, threshold=0.0)   # near the threshold: both looks are used
    assert 0.1 < second < 0.9
    assert miss <= 0.05 + 0.01   # Monte Carlo slack of 4000 runs


def test_naive_stopping_at_the_nominal_level_would_not_be_the_design():
    """The design's looks are at 0.975, not 0.95: the reported interval is wider than a fixed-n 95% one."""
    assert sequential.LEVEL == pytest.approx(0.975)
    out = sequential.two_stage(lambda n, s: np.arange(n, dtype=float), _t_interval, lambda lo, hi: True, 5, 5)
    _, lo95, hi95 = _t_interval(out.values, 0.95)
    assert out.stages == 1 and out.high - out.low > hi95 - lo95


def test_level_of_rows():
    import pandas as pd

    assert sequential.level_of(pd.DataFrame({"x": [1]})) == 0.95
    rows = pd.DataFrame({"x": [1, 2], "stage": [1, 2]})
    assert sequential.level_of(rows) == sequential.LEVEL and "2 stages" in sequential.stages_text(rows)


def test_wait_until_quiet_is_bounded_and_records_the_wait():
    busy = iter([{"busy_share": 0.9}, {"busy_share": 0.9}, {"busy_share": 0.1}])
    got = quiet.wait_until_quiet(bound_s=60, sampler=lambda: next(busy))
    assert got["quiet"] and got["samples"] == 3
    stuck = quiet.wait_until_quiet(bound_s=0.0, sampler=lambda: {"busy_share": 0.9})
    assert not stuck["quiet"] and stuck["samples"] == 1


def test_a_busy_repeat_is_run_again_with_a_bound(monkeypatch, quiet_checks):
    from bench.core.measuring import step

    shares = iter([0.9, 0.1])

    class FakeSpan:
        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.others_share, self.wall_s = next(shares), 0.1

        busy = property(lambda self: self.others_share > quiet.BUSY_SHARE)

        def record(self):
            return {"others_share": self.others_share, "wall_s": self.wall_s, "busy": self.busy}

    monkeypatch.setattr(quiet, "Span", FakeSpan)
    monkeypatch.setattr(quiet, "wait_until_quiet", lambda: {"waited_s": 0.0, "quiet": True})
    calls = []
    res, log = step._attempts(lambda: calls.append(1) or "r", lambda s: True)
    assert res == "r" and len(calls) == 2 and log["reruns"] == 1 and not log["busy"]
    shares = iter([0.9, 0.9, 0.9])
    calls.clear()
    res, log = step._attempts(lambda: calls.append(1) or "r", lambda s: True)
    assert len(calls) == quiet.RERUNS + 1 and log["busy"]   # still busy after the bound: flagged


def test_span_measures_others_share_not_our_own_work():
    with quiet.Span() as s:
        sum(i * i for i in range(300_000))   # our own work is not "others"
    assert 0.0 <= s.others_share <= 1.0 and s.wall_s > 0


def test_span_counts_work_of_a_grandchild_reaped_by_a_living_child_as_ours(tmp_path):
    """A forkserver's ranks are our grandchildren, reaped by the server, not by us: still our work."""
    import subprocess
    import sys
    import time

    done = tmp_path / "reaped"
    spin = "import time\nwhile time.process_time() < 0.3: pass"
    code = (f"import subprocess, sys, time, pathlib; subprocess.run([sys.executable, '-c', {spin!r}]); "
            f"pathlib.Path({str(done)!r}).touch(); time.sleep(30)")
    before = quiet._own_cpu_s()
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 60
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert done.exists()
        assert quiet._tree_delta(before, quiet._own_cpu_s()) >= 0.3   # the grandchild's CPU, via the child
    finally:
        child.kill()
        child.wait()


def test_tree_delta_counts_descendants_from_their_value_at_the_start():
    before = (1.0, {(10, 1.0): 2.0})
    after = (1.5, {(10, 1.0): 2.7, (11, 5.0): 0.4})   # 10 ran 0.7 s more; 11 started since and ran 0.4 s
    assert quiet._tree_delta(before, after) == pytest.approx(0.5 + 0.7 + 0.4)

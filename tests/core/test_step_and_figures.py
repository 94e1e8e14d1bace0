"""The step skeleton, the figure registry, the legend check."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from bench.core.machine import devices

from bench.core.presenting import plotting

from bench.core.measuring import records
from bench.core.presenting.figures import Registry
from bench.core.measuring.step import Context, Result, execute


def test_execute_writes_records_with_quiet_check(tmp_path):
    ctx = Context("demo", "s", {"a": 1}, "t", 3, 1, tmp_path / "s.parquet")
    execute(ctx, lambda c: Result(pd.DataFrame({"x": [1.0, 2.0]}), method="demo"))
    df = records.read(tmp_path / "s.parquet")
    assert set(df.columns) >= {"source", "phase", "machine_busy"}
    prov = df.attrs["provenance"]
    assert prov["method"] == "demo" and prov["seed"] == 3 and "busy" in prov["quiet_check"]
    assert prov["cpu"]["family"] is not None or prov["cpu"] == {}


def test_a_step_that_times_nothing_neither_waits_nor_reruns(tmp_path, monkeypatch, quiet_checks):
    """Issue 29: a modelled step (``timed=False``) ran beside the pipeline's other jobs and waited up to 20 s
    twice for them to stop; it now starts at once, runs once however busy the machine is, and its rows are
    never machine_busy."""
    from bench.core.measuring import quiet
    from bench.core.declaring.study import step

    def no_wait(*a, **k):
        raise AssertionError("waited for a quiet machine")
    monkeypatch.setattr(quiet, "wait_until_quiet", no_wait)

    class Busy:
        busy, others_share, wall_s = True, 0.9, 0.01

        def __enter__(self):
            return self

        def __exit__(self, *a):
            pass

        def record(self):
            return {"others_share": 0.9, "wall_s": 0.01, "busy": True}
    monkeypatch.setattr(quiet, "Span", Busy)
    calls = []

    @step("modelled", timed=False)
    def modelled(ctx):
        calls.append(1)
        return Result(pd.DataFrame({"x": [1.0]}), method="a model", source="modelled")
    execute(Context("demo", "modelled", {}, "t", 3, 1, tmp_path / "m.parquet"), modelled)
    df = records.read(tmp_path / "m.parquet")
    assert calls == [1] and not df.machine_busy.any() and (df.reruns == 0).all()
    assert "times nothing" in df.attrs["provenance"]["quiet_check"]["how"]
    with pytest.raises(ValueError, match="times nothing"):
        step("both", processes=True, timed=False)(lambda c: None)


def test_registry_draw_needs_its_records(tmp_path):
    reg = Registry()

    @reg.figure("f", records=("a",))
    def f(inputs, out):
        return [out]

    assert list(reg) == ["f"] and reg.records_of("f") == ("a",)
    with pytest.raises(ValueError, match="reads record kind"):
        reg.draw("f", {}, tmp_path / "f.png")
    with pytest.raises(ValueError, match="twice"):
        reg.figure("f", records=())(f)


def test_legend_over_data_fails_in_tests(tmp_path):
    fig, ax = plt.subplots(layout="constrained")
    ax.plot(range(10), [5] * 10, label="flat")
    ax.legend(loc="center")
    with pytest.raises(AssertionError, match="covers data"):
        plotting.save(fig, tmp_path / "bad.png")
    fig, ax = plt.subplots(layout="constrained")
    ax.plot(range(10), [5] * 10, label="flat")
    plotting.legend_below(fig)
    assert plotting.legend_overlaps(fig) == []
    plotting.save(fig, tmp_path / "good.png")


def test_storage_of_names_device_and_filesystem(tmp_path):
    s = devices.storage_of(tmp_path)
    assert s["fstype"] and s["mount"]

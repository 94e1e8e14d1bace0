"""A step declared with ``decide`` runs the fixed two-stage design (issue 29): a second stage of as many
fresh processes only when the first stage's interval does not clear its threshold; rows carry ``stage``."""
from __future__ import annotations

import os

import pandas as pd
import pytest

from bench.core.measuring import quiet, records, sequential
from bench.core.measuring.step import Context, Result, execute
from bench.core.declaring.study import step


def _undecided(rows, params) -> bool:
    return False


def _decided(rows, params) -> bool:
    return True


def _body(ctx: Context) -> Result:
    n = ctx.share(4)
    return Result(pd.DataFrame({"pid": [os.getpid()] * n, "value": [1.0 + ctx.process] * n}), method="demo")


@step("undecided", processes=True, decide=_undecided)
def undecided(ctx: Context) -> Result:
    return _body(ctx)


@step("decided", processes=True, decide=_decided)
def decided(ctx: Context) -> Result:
    return _body(ctx)


@pytest.fixture(autouse=True)
def _no_waits(monkeypatch):
    """The design is under test, not the quiet check: no waits, no reruns."""
    monkeypatch.setattr(quiet, "WAIT_BOUND_S", 0.0)
    monkeypatch.setattr(quiet, "RERUNS", 0)


def _ctx(tmp_path) -> Context:
    return Context("demo", "s", {"a": 1}, "t", 3, 1, tmp_path / "s.parquet", processes=2)


def test_an_undecided_first_stage_runs_a_second_of_the_same_size(tmp_path):
    execute(_ctx(tmp_path), undecided)
    df = records.read(tmp_path / "s.parquet")
    assert sorted(df.process.unique()) == [0, 1, 2, 3] and df.groupby("stage").process.nunique().to_dict() == {1: 2, 2: 2}
    prov = df.attrs["provenance"]
    assert prov["sequential"]["stages"] == 2 and "two-stage" in prov["sequential"]["design"]
    assert sequential.level_of(df) == sequential.LEVEL
    assert "reruns" in df and "others_share" in df and "repeats" in prov["quiet_check"]


def test_a_decided_first_stage_stops(tmp_path):
    execute(_ctx(tmp_path), decided)
    df = records.read(tmp_path / "s.parquet")
    assert sorted(df.process.unique()) == [0, 1] and set(df.stage) == {1}
    assert "1 stage run" in sequential.stages_text(df)

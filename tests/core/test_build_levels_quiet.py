"""The step skeleton's conventions a study's author meets (docs/adding-a-study.md): rows of two levels in one
record set (``levels=``, ``records.at_level``), a build's own record set of its time and memory beside its
output (``step.build``, derived as record kind ``<writes>_build``), and the quiet-machine checks off in tests
(``BENCH_QUIET=off``)."""
from __future__ import annotations

import mmap

import numpy as np
import pandas as pd
import pytest

from bench.core.declaring import rules
from bench.core.declaring.study import Study, build_records, step
from bench.core.measuring import measure, quiet, records
from bench.core.measuring.step import Context, Result, build, execute


@step("scan", levels=("run", "query"))
def _two_levels(ctx: Context) -> Result:
    runs = [{"level": "run", "batch": b, "qps": 10.0 * b} for b in (1, 8)]
    queries = [{"level": "query", "query": i, "hits": 10, "k": 10} for i in range(3)]
    return Result(pd.DataFrame(runs + queries), method="demo")


def test_rows_of_two_levels_share_one_record_set(tmp_path):
    out = execute(Context("demo", "scan", {}, "t", 1, 1, tmp_path / "scan.parquet"), _two_levels)
    df = records.read(out)
    runs, queries = records.at_level(df, "run"), records.at_level(df, "query")
    assert list(runs.batch) == [1, 8] and "hits" not in runs and "batch" not in queries
    assert queries.hits.sum() == 30 and queries.attrs["provenance"]["step"] == "scan"
    assert {"machine_busy", "process_uid", "phase", "source"} <= set(queries.columns)
    with pytest.raises(ValueError, match="no rows at level 'batch'; the records hold \\['query', 'run'\\]"):
        records.at_level(df, "batch")


def test_a_level_must_be_declared_and_named_on_every_row(tmp_path):
    ctx = Context("demo", "s", {}, "t", 1, 1, tmp_path / "s.parquet")

    @step("s", levels=("run", "query"))
    def unnamed(c):
        return Result(pd.DataFrame({"level": ["run", None], "x": [1.0, 2.0]}), method="demo")
    with pytest.raises(ValueError, match=r"demo step s: rows at level\(s\) \['\(empty\)'\]"):
        execute(ctx, unnamed)

    @step("s")
    def undeclared(c):
        return Result(pd.DataFrame({"level": ["run"], "x": [1.0]}), method="demo")
    with pytest.raises(ValueError, match="carry a 'level' column, but the step declares no levels"):
        execute(ctx, undeclared)
    with pytest.raises(ValueError, match="levels= names the distinct levels"):
        step("b", kind="build", out="x", levels=("run",))(lambda c: None)
    with pytest.raises(ValueError, match="no 'level' column"):
        records.at_level(pd.DataFrame({"x": [1]}), "run")


@step("index", needs=("manifest",), kind="build", out="{dataset}.npy")
def _index(ctx: Context) -> dict:
    held = mmap.mmap(-1, 2 << 20)   # 2 MiB of fresh pages held while the build runs (a heap allocation could
    held.write(b"x" * (2 << 20))    # reuse pages the test process already has resident, and not raise its RSS)
    x = np.ones((512, 512))
    np.save(ctx.out, x)
    held.close()
    return {"rows": len(x)}


def test_a_build_records_its_time_and_memory_beside_its_output(tmp_path):
    out = tmp_path / "d.npy"
    ctx = Context("demo", "index", {}, "t", 1, 1, out, {"manifest": ["m.json"]}, dataset="d")
    written = build(ctx, _index)
    assert written == tmp_path / "d.npy.build.parquet" == records.paths(build_records(out))["parquet"]
    row = records.read(written).iloc[0]
    assert row.wall_s > 0 and row.cpu_s >= 0 and row.threads == 1
    assert row.peak_rss_mib >= row.rss_start_mib + 1.5, "the build's 2 MiB array is in its peak"
    assert row.out_bytes == out.stat().st_size and row.rows == 512 and row.dataset == "d"
    assert row.peak_rss_from in ("build", "process start") and row.source == "measured"
    prov = records.read_provenance(written)
    assert prov["step"] == "index" and "VmHWM" in prov["method"] and prov["output"] == str(out)


def test_the_rules_give_a_build_its_record_set_as_an_output_and_a_record_kind():
    class _Steps(dict):
        def builds(self):
            return {n: s for n, s in self.items() if s.kind == "build"}

    @step("recall", needs=("manifest", "index"))
    def recall(ctx):
        return None
    st = Study("demo", "demo", "", object, _Steps(index=_index.step, recall=recall.step), "f", None)
    jobs, kinds = rules.derive(st, {"datasets": ["a", "b"]}, results="R", indexes="I", manifest=lambda d: f"M/{d}")
    assert list(jobs["index"]["out"]) == ["out", "build_records"], "--out stays the first file"
    assert jobs["index"]["out"]["build_records"] == "I/demo/{dataset}.npy.build.parquet"
    assert kinds["index_build"] == ["I/demo/a.npy.build.parquet", "I/demo/b.npy.build.parquet"]
    assert jobs["recall"]["needs"]["index"] == "I/demo/{dataset}.npy" and not jobs["recall"]["after"]


def test_quiet_checks_off_neither_wait_sample_nor_rerun(tmp_path, monkeypatch):
    assert not quiet.checks_on(), "tests/conftest.py sets BENCH_QUIET=off"

    def never(*a, **k):
        raise AssertionError("sampled or waited with the checks off")
    monkeypatch.setattr(quiet, "wait_until_quiet", never)
    monkeypatch.setattr(quiet, "sample", never)
    execute(Context("demo", "scan", {}, "t", 1, 1, tmp_path / "s.parquet"), _two_levels)
    prov = records.read_provenance(tmp_path / "s.parquet")["quiet_check"]
    assert prov["before"]["checks"].startswith("off") and "checks off (BENCH_QUIET=off" in prov["how"]
    calls = []
    monkeypatch.setattr(quiet.Span, "busy", property(lambda self: True))
    measure.repeat(lambda: calls.append(1) or __import__("time").sleep(0.11), repeats=2, warmup=0)
    assert len(calls) == 2, "a busy repeat is not run again with the checks off"


def test_quiet_checks_come_back_on_for_tests_of_them(quiet_checks):
    assert quiet.checks_on()

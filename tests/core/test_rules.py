"""bench.core.declaring.rules (issue 31, item 2): a study's jobs and record sets derived from its steps' declarations,
checked on the real declarations of Trinity (per dataset, on the first, a build with two files), WindVE (no
dataset) and Chameleon (a glob need the generic rules refuse, so it keeps its own rule file)."""
from __future__ import annotations

import pytest

from bench.core.declaring import rules

PATHS = {"results": "R", "indexes": "I", "manifest": lambda d: f"M/{d}/manifest.json"}


def _derive(study_name: str, section: dict):
    """The study's jobs from its section as a profile gives it (validated, defaults filled)."""
    import importlib

    from bench.core.declaring import config

    st = importlib.import_module(f"bench.{study_name}").STUDY
    return rules.derive(st, config.validate_section(study_name, section), **PATHS)


def test_per_dataset_first_and_build_files_are_wired_from_the_declaration():
    jobs, records = _derive("trinity", {"datasets": ["a", "b"]})
    assert jobs["graph"]["out"] == {"graph": "I/trinity/{dataset}.graph.ibin", "side": "I/trinity/{dataset}.graph.ibin.json",
                                    "build_records": "I/trinity/{dataset}.graph.ibin.build.parquet"}   # its time, memory
    assert jobs["trace"]["needs"] == {"manifest": "M/{dataset}/manifest.json", "graph": "I/trinity/{dataset}.graph.ibin"}
    assert jobs["trace"]["after"] == {"graph_side": "I/trinity/{dataset}.graph.ibin.json"}   # a build's other files
    assert jobs["trace"]["out"] == {"out": "R/trinity/trace_{dataset}.parquet"} and jobs["trace"]["dataset"] is None
    # on the first dataset: its own file has no suffix, its needs are the first dataset's
    assert jobs["roofline"]["out"] == {"out": "R/trinity/roofline.parquet"} and jobs["roofline"]["dataset"] == "a"
    assert jobs["placement"]["needs"] == {"roofline": "R/trinity/roofline.parquet", "trace": "R/trinity/trace_a.parquet"}
    assert jobs["placement"]["threads"] == 1
    assert records["recall"] == ["R/trinity/recall_a.parquet", "R/trinity/recall_b.parquet"]
    assert records["sched"] == ["R/trinity/sched.parquet"] and "graph" not in records
    assert records["graph_build"] == ["I/trinity/a.graph.ibin.build.parquet", "I/trinity/b.graph.ibin.build.parquet"]


def test_a_study_without_datasets_runs_once():
    jobs, records = _derive("windve", {})
    assert jobs["serving"]["needs"] == {"profile": "R/windve/profile.parquet"}
    assert records == {"profile": ["R/windve/profile.parquet"], "serving": ["R/windve/serving.parquet"]}


def test_a_per_dataset_override_reaches_only_its_dataset():
    from types import SimpleNamespace

    jobs, _ = _derive("ivf_recall", {"datasets": ["a", "b"], "index_overrides": {"b": {"nlist": 64}}})
    params = jobs["index"]["params"]
    assert callable(params)
    assert params(SimpleNamespace(dataset="b"))["index"]["nlist"] == 64
    assert params(SimpleNamespace(dataset="a"))["index"]["nlist"] != 64


def test_wiring_the_declaration_cannot_say_is_refused():
    with pytest.raises(rules.RuleError, match="manifest_"):
        _derive("chameleon", {})


def test_a_per_dataset_step_without_datasets_is_refused():
    from bench.trinity import STUDY

    with pytest.raises(rules.RuleError, match="names none"):
        rules.derive(STUDY, {"datasets": []}, **PATHS)

"""The measurement steps end to end on a small bundle (records written by the core skeleton), the
profile section's schema and its typed parameters, and the build step's bad input."""
from __future__ import annotations

import dataclasses

import pytest

from bench.core.declaring import config

from bench.core.measuring import records
from bench.core.base.errors import ConfigError
from bench.core.measuring.step import Context, execute
from bench.loaders import STUDY


def _params(**over):
    base = {"datasets": ["msmarco-like"], "layers": 1, "max_length": 16, "doc_chars": 100,
            "freeze_embeddings": True, "batch_per_replica": 2, "steps": 2, "warmup_steps": 1,
            "loaders": ["ir_datasets"], "grid": {"dp": [2], "ddp": [2]}, "sample_interval_s": 0.2,
            "run_timeout_s": 60, "rounds": 1,
            "options": {"num_workers": [1], "ramdisk": False, "cold_cache": True, "start_methods": []},
            "loader_only": {"loaders": ["in-memory", "arrow"], "batch_size": 4, "batches": 2, "repeats": 2},
            "workers": {"loaders": ["in-memory"], "num_workers": [1], "batch_size": 4, "batches": 20,
                        "sample_interval_s": 0.05}}
    return config.validate_section("loaders", base | over)


def _ctx(step, bundle, model_dir, tmp_path, **over):
    """The context of one step; the model the build saved is ``model/`` beside the bundle (``model_dir``)."""
    assert model_dir == bundle / "model"
    section = _params(**over)
    return Context("loaders", step, STUDY.parameters(section), "test", 3, 2, tmp_path / f"{step}.parquet",
                   {"bundle": [str(bundle / "bundle.json")]}, "msmarco-like", section=section)


def _step(name):
    return STUDY.steps[name].fn


def test_train_step_writes_runs_steps_and_memory(bundle, model_dir, tmp_path):
    df = records.read(execute(_ctx("train", bundle, model_dir, tmp_path), _step("train")))
    assert set(df.kind) == {"run", "step", "memory"}
    runs = df[df.kind == "run"]
    assert sorted(set(runs.run_id)) == ["ir_datasets/ddp/2", "ir_datasets/dp/2"] and (runs.status == "ok").all()
    # the DDP/DP two-stage design runs its second stage on CUDA only (the claim needs 2 GPUs)
    assert df.attrs["provenance"]["sequential"]["stages"] == 1 and set(df["stage"]) == {1} and len(runs) == 2
    assert (runs.gpus == 0).all() and set(runs.device) == {"cpu"}
    # the smaps check reads the memory every rank holds after its last measured step (round 0)
    assert (runs.n_smaps_checked == 1).all() and (runs.held_vs_measured < 0.10).all()
    assert (df[df.kind == "memory"].phase == "held").sum() == 2
    assert (runs.pss_peak_bytes > 0).all() and (runs.paper_mem_bytes > 0).all()
    steps = df[df.kind == "step"]
    assert set(steps.phase) == {"warmup", "measured"} and set(df.source) == {"measured"}
    assert "machine_busy" in df and df.attrs["provenance"]["method"].startswith("Each run starts its processes from a forkserver")


def test_options_step_records_pin_memory_as_not_run_on_cpu(bundle, model_dir, tmp_path):
    df = records.read(execute(_ctx("options", bundle, model_dir, tmp_path, grid={"dp": [], "ddp": []},
                                   options={"num_workers": [1], "ramdisk": False, "cold_cache": False,
                                            "start_methods": [], "replicas": 1}), _step("options")))
    runs = df[df.kind == "run"].set_index("run_id")
    assert runs.loc["pin_memory=yes", "source"] == "not_run"
    assert runs.loc["pin_memory+num_workers=1", "source"] == "not_run"
    assert runs.loc["num_workers=1", "status"] == "ok" and runs.loc["num_workers=1", "source"] == "measured"
    assert set(df["round"].dropna()) == {0}   # rounds: 1 here; each round reruns every option in fresh processes


def test_loader_only_and_workers_steps(bundle, model_dir, tmp_path):
    lo = records.read(execute(_ctx("loader_only", bundle, model_dir, tmp_path), _step("loader_only")))
    assert set(lo["mode"]) == {"lookup", "lookup+tokenize"} and (lo.samples_per_s > 0).all()
    assert set(lo.phase) == {"warmup", "measured"}
    wk = records.read(execute(_ctx("workers", bundle, model_dir, tmp_path), _step("workers")))
    assert set(wk.role) == {"main", "worker"} and wk.batches.max() > 0


def test_schema_rejects_bad_sections():
    with pytest.raises(ConfigError, match="num_workers"):
        config.validate_section("loaders", {"options": {"num_workers": [-1]}})
    with pytest.raises(ConfigError, match="redis"):
        config.validate_section("loaders", {"loaders": ["redis"]})
    with pytest.raises(ConfigError):
        config.validate_section("loaders", {"unknown_key": 1})


def test_build_needs_a_manifest(tmp_path):
    ctx = Context("loaders", "build", STUDY.parameters(_params()), "t", 0, 1, tmp_path / "bundle.json")
    with pytest.raises(ConfigError, match="--input manifest"):
        _step("build")(ctx)


def test_steps_declare_what_they_read_and_write():
    steps = STUDY.steps
    assert list(steps.builds()) == ["build"] and steps["build"].needs == ("manifest",)
    assert steps["build"].writes == "bundle"
    assert set(steps.measures()) == {"train", "options", "loader_only", "workers"}
    assert all(steps[n].needs == ("bundle",) for n in steps.measures()) and STUDY.unproduced() == []


def test_typed_parameters_match_the_schema_and_the_profiles():
    assert set(config.study_schema("loaders")["properties"]) == {f.name for f in dataclasses.fields(STUDY.params)}
    p = STUDY.parameters(_params())
    assert p.grid.dp == (2,) and p.options.num_workers == (1,) and p.loader_only.loaders == ("in-memory", "arrow")
    assert p.memory_cap_mb is None and p.workers.sample_interval_s == 0.05

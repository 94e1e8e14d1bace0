"""Paper values, the schema, the model/queue steps, the claims rows, the CLI wiring (no shared files read)."""
import pandas as pd
import pytest

from bench.chameleon import STUDY, claims, paper_values
from bench.core.judging import claims as core_claims
from bench.core.declaring import config as cfgmod
from bench.core.measuring import records
from bench.core.measuring.step import Context, execute


SECTION = {"queue": {"sim_queries": 60, "sim_max_vectors": 1500, "units": [4, 8, 16]}}


@pytest.fixture(scope="module")
def params():
    return STUDY.parameters(SECTION)


def _run(step, params, out, inputs=None):
    return execute(Context("chameleon", step, params, "test", 1, 1, out, inputs or {},
                           section=cfgmod.validate_section("chameleon", SECTION)), STUDY.steps[step].fn)


def test_paper_values_load_from_the_package():
    lat = paper_values.latency()
    assert {"dataset", "arch", "batch_size", "median_ms", "config"} <= set(lat)
    assert lat[(lat.dataset == "SIFT1000M") & (lat.arch == "8CPU") & (lat.batch_size == 1)].median_ms.iloc[0] == pytest.approx(9.12, abs=0.01)
    assert paper_values.arch_config("8CPU-1GPU").startswith("cpu-gpu")
    assert paper_values.arch_config("2FPGA-1GPU") == "fpga-gpu" and paper_values.arch_nodes("2FPGA-1GPU") == 2
    assert len(paper_values.energy()) == 24 and not paper_values.ralm().empty
    assert not hasattr(paper_values, "MODELS")


def test_schema_defaults_and_bad_config():
    p = cfgmod.validate_section("chameleon", {})
    assert p["nprobe"] == 32 and p["k"] == 100 and p["pq_m"]["syn-1024"] == 64
    assert p["datasets"] == ["sift-like", "deep-like", "syn-512", "syn-1024"]
    for bad in ({"nprobe": 0}, {"configs": ["tpu"]}, {"datasets": {"sift-like": {"m": 16}}}, {"pq_m": {"x": 0}}):
        with pytest.raises(cfgmod.ConfigError):
            cfgmod.validate_section("chameleon", bad)


def test_a_dataset_without_pq_m_is_refused_before_work():
    from bench.chameleon.steps.inputs import index_shape

    p = STUDY.parameters({"datasets": ["mine"], "pq_m": {}})
    with pytest.raises(cfgmod.ConfigError, match="pq_m"):
        index_shape(p, "mine", 1000)


def test_model_and_queue_steps(tmp_path, params):
    df = records.read(_run("model", params, tmp_path / "model.parquet"))
    assert df[df.calibration].rel_error.abs().max() < 1e-6
    assert (df.source == "modelled").all() and "machine_busy" in df
    assert "MODELLED" in df.attrs["provenance"]["method"]
    qd = records.read(_run("queue", params, tmp_path / "queue.parquet"))
    f8 = qd[qd.figure == "fig8"].dropna(subset=["authors"])
    assert (f8.analytic_one_queue_per_unit == f8.authors).all()


def test_model_covers_every_archived_fpga_point(tmp_path, params):
    df = records.read(_run("model", params, tmp_path / "model.parquet"))
    lat, thr = paper_values.latency(), paper_values.throughput()
    assert (df.kind == "latency_ms").sum() == (lat.n_fpga > 0).sum()      # every batch size, no subset
    assert (df.kind == "qps").sum() == (thr.n_fpga > 0).sum()
    assert df.calibration.sum() == 3                                       # reference + two batch-1 latencies
    val = df[~df.calibration]
    assert (val[val.kind == "qps"].rel_error.abs() <= 0.2).all()           # the throughput fit is kept


EXPECTED = {"fpga-cpu-vs-cpu-latency", "fpga-gpu-vs-cpu-latency", "energy-efficiency", "ralm-latency-vs-cpu-gpu",
            "ralm-throughput-vs-cpu-gpu", "queue-identical-topk", "cpu-gpu-vs-cpu-latency",
            "target-torch-scan-within-2x", "target-scan-gbps-per-core", "target-torch-scan-identical",
            "target-model-within-20pct", "target-queue-l1-lengths", "target-nodes-identical",
            "check-nodes-fault-handling"}


def test_claims_rows_from_records(study_records, study_params, tmp_path):
    rows = claims.build(records.read_kinds({k: study_records[k] for k in (*claims.RECORDS, "ralm")}), study_params, "t")
    df = core_claims.frame(rows).set_index("claim_id")
    assert set(df.index) == EXPECTED
    assert df.loc["fpga-cpu-vs-cpu-latency", "source"] == "modelled"
    assert df.loc["fpga-cpu-vs-cpu-latency", "verdict"] == core_claims.NEEDS_HARDWARE
    assert df.loc["fpga-cpu-vs-cpu-latency", "ci_low"] <= df.loc["fpga-cpu-vs-cpu-latency", "ours"]
    _assert_gpu_rows_as_this_machine_gives(df, study_params)
    assert df.loc["target-nodes-identical", "ours"] == 1.0
    assert df.loc["target-queue-l1-lengths", "verdict"] == core_claims.REPRODUCED
    gb = df.loc["target-scan-gbps-per-core"]
    assert gb.verdict != "report" and gb.threshold == 1.0 and gb.ci_low <= gb.ours <= gb.ci_high
    assert "1B" in df.loc["fpga-cpu-vs-cpu-latency", "scale"]
    core_claims.write(rows, tmp_path / "claims.parquet", {"profile": "t"})
    assert "target-scan-gbps-per-core" in (tmp_path / "claims.md").read_text()


def _assert_gpu_rows_as_this_machine_gives(df, params):
    """The GPU rows say what this machine gives, never the CPU-only outcome hard-coded. The configurations
    decide at run time (backends.SearchConfig.available: cpu-gpu and fpga-gpu need CUDA) and claims.py
    turns that into the row: with CUDA, fpga-gpu (coarse on the GPU, ChamVS node modelled) is ``modelled``
    and cpu-gpu ``measured``, each with a value; without, both are ``not_run`` naming CUDA. The RALM rows
    compare fpga-gpu with cpu-gpu: they are ``not_run`` here on every machine (the fixture's ralm.configs
    hold no cpu-gpu), and the reason names what did not run (fpga-gpu too where there is no CUDA)."""
    from bench.core.machine import devices

    cuda = devices.cuda_available()
    for cid, config, ran_as in (("fpga-gpu-vs-cpu-latency", "fpga-gpu", "modelled"),
                                ("cpu-gpu-vs-cpu-latency", "cpu-gpu", "measured")):
        row = df.loc[cid]
        assert config in params.configs
        if cuda:
            assert row.source == ran_as and not pd.isna(row.ours), (cid, row.source, row.reason)
        else:
            assert row.source == "not_run" and pd.isna(row.ours) and "CUDA" in row.reason, (cid, row.reason)
        if row.source in ("modelled", "not_run"):
            assert row.verdict == core_claims.NEEDS_HARDWARE
    ralm_ran = {c for c in params.ralm.configs if cuda or c in ("cpu", "fpga-cpu", "torch-cpu")}
    assert "cpu-gpu" not in ralm_ran
    missing = ", ".join(c for c in ("fpga-gpu", "cpu-gpu") if c not in ralm_ran)
    for cid in ("ralm-latency-vs-cpu-gpu", "ralm-throughput-vs-cpu-gpu"):
        row = df.loc[cid]
        assert row.source == "not_run" and pd.isna(row.ours) and row.verdict == core_claims.NEEDS_HARDWARE
        assert row.reason.startswith(f"{missing}: "), (cid, row.reason)


def test_claims_without_ralm_say_not_run(study_records, study_params):
    rows = claims.build(records.read_kinds({k: study_records[k] for k in claims.RECORDS}), study_params, "t")
    r = {c.claim_id: c for c in rows}["ralm-latency-vs-cpu-gpu"]
    assert r.source == "not_run" and "disabled" in r.reason


def test_nodes_checks_are_record_rows(study_records):
    df = records.read(study_records["nodes"][0])
    chk = df[df.kind == "check"]
    assert len(chk) == 4 and chk.passed.all() and "checks" not in df.attrs["provenance"]


def test_cli_registers_the_study_with_the_standard_verbs():
    from bench.cli import build_parser

    p = build_parser(["chameleon"])
    a = p.parse_args(["chameleon", "figure", "fig7", "--records", "queue=x.parquet", "--out", "y.png"])
    assert a.names == ["fig7"]
    a = p.parse_args(["chameleon", "measure", "nodes", "--input", "manifest=m", "--input", "index=i", "--out", "o",
                      "--profile", "t", "--seed", "1", "--threads", "1", "--params", "{}"])
    assert a.step == "nodes"
    for bad in (["chameleon", "figure", "nope", "--records", "x=y", "--out", "y.png"],
                ["chameleon", "targets", "--out", "x"]):
        with pytest.raises(SystemExit):
            p.parse_args(bad)


def test_energy_meter_without_counters_reports_none():
    from bench.chameleon.system import energy

    c = energy.power_counters()
    assert set(c) == {"rapl", "nvml"}
    with energy.EnergyMeter() as m:
        sum(range(1000))
    if not m.available:
        assert m.joules is None
    else:
        assert m.joules >= 0

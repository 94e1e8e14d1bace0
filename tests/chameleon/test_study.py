"""Paper values, the model/queue steps and their figures, the CLI wiring (no shared files read)."""
import copy

import pandas as pd
import pytest

from bench.chameleon import figures, paper_values, runner
from bench.core import config as cfgmod, records



@pytest.fixture(scope="module")
def params():
    p = cfgmod.validate_section("chameleon", {})
    p["queue"].update({"sim_queries": 60, "sim_max_vectors": 1500, "units": [4, 8, 16]})
    return p


def test_paper_values_load_from_the_package():
    lat = paper_values.latency()
    assert {"dataset", "arch", "batch_size", "median_ms", "config"} <= set(lat)
    assert lat[(lat.dataset == "SIFT1000M") & (lat.arch == "8CPU") & (lat.batch_size == 1)].median_ms.iloc[0] == pytest.approx(9.12, abs=0.01)
    assert paper_values.arch_config("8CPU-1GPU").startswith("cpu-gpu")
    assert paper_values.arch_config("2FPGA-1GPU") == "fpga-gpu" and paper_values.arch_nodes("2FPGA-1GPU") == 2
    assert len(paper_values.energy()) == 24 and not paper_values.ralm().empty


def test_schema_defaults_and_bad_config():
    p = cfgmod.validate_section("chameleon", {})
    assert p["nprobe"] == 32 and p["k"] == 100 and p["datasets"]["syn-1024"]["m"] == 64
    with pytest.raises(cfgmod.ConfigError):
        cfgmod.validate_section("chameleon", {"nprobe": 0})
    with pytest.raises(cfgmod.ConfigError):
        cfgmod.validate_section("chameleon", {"configs": ["tpu"]})


def test_model_and_queue_steps_and_figures(tmp_path, params):
    out = runner.model(params, tmp_path / "model.parquet", "test", 1)
    df = records.read(out)
    assert df[df.calibration].rel_error.abs().max() < 1e-6
    assert (df.source == "modelled").all()
    q = runner.queue(params, tmp_path / "queue.parquet", "test", 1)
    qd = records.read(q)
    f8 = qd[qd.figure == "fig8"]
    assert (f8.dropna(subset=["authors"]).analytic_one_queue_per_unit
            == f8.dropna(subset=["authors"]).authors).all()
    for name in ("fig7", "fig8"):
        getattr(figures, name)([q], tmp_path / f"{name}.png")
        assert (tmp_path / f"{name}.png").exists() and (tmp_path / f"{name}.pdf").exists()
    figures.model([out], tmp_path / "model.png")
    assert (tmp_path / "model.caption.rst").read_text().count("modelled")


def test_model_covers_every_archived_fpga_point(tmp_path, params):
    df = records.read(runner.model(params, tmp_path / "model.parquet", "test", 1))
    lat, thr = paper_values.latency(), paper_values.throughput()
    assert (df.kind == "latency_ms").sum() == (lat.n_fpga > 0).sum()      # every batch size, no subset
    assert (df.kind == "qps").sum() == (thr.n_fpga > 0).sum()
    assert df.calibration.sum() == 3                                       # reference + two batch-1 latencies
    val = df[~df.calibration]
    assert (val[val.kind == "qps"].rel_error.abs() <= 0.2).all()           # the throughput fit is kept
    row = figures._model_target(df, val)
    assert f"all {(thr.n_fpga > 0).sum()} FPGA throughput points" in row["target"]
    assert f"all {(lat.n_fpga > 0).sum() - 2} FPGA latency medians" in row["target"]
    assert row["passed"] == bool((val.rel_error.abs() <= 0.2).all())
    rows = figures._latency_breakdown(val)
    assert any(r["target"].startswith("(evidence)") for r in rows) and all(r["passed"] is None for r in rows)


def test_cli_registers_the_study():
    from bench.cli import build_parser

    p = build_parser()
    a = p.parse_args(["chameleon", "figure", "fig7", "--records", "x.parquet", "--out", "y.png"])
    assert a.name == "fig7"
    with pytest.raises(SystemExit):
        p.parse_args(["chameleon", "figure", "nope", "--records", "x", "--out", "y.png"])


def test_energy_meter_without_counters_reports_none():
    from bench.chameleon import energy

    c = energy.power_counters()
    assert set(c) == {"rapl", "nvml"}
    with energy.EnergyMeter() as m:
        sum(range(1000))
    if not m.available:
        assert m.joules is None
    else:
        assert m.joules >= 0

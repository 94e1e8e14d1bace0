"""Every registered WindVE figure renders from small synthetic records (legends never cover data),
and the claims build from the same records; records from a GPU machine (the CUDA GPU measured) give
figures and claims that say measured, records without one say emulated: the labels come from the
records, never assumed."""
from __future__ import annotations

import pytest

from bench.core import claims as C
from bench.core import records
from bench.windve import STUDY, claims
from bench.windve.figures import FIGURES

from . import synthetic


@pytest.fixture(scope="module")
def recs(tmp_path_factory):
    return synthetic.write(tmp_path_factory.mktemp("windve_records"))


@pytest.fixture(scope="module")
def gpu_recs(tmp_path_factory):
    return synthetic.write(tmp_path_factory.mktemp("windve_gpu_records"), acc="cuda")


@pytest.mark.parametrize("name", list(FIGURES))
def test_figure_renders(recs, tmp_path, name):
    out = FIGURES.draw(name, {k: recs[k] for k in FIGURES.records_of(name)}, tmp_path / f"{name}.png")
    assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    cap = (tmp_path / f"{name}.caption.rst").read_text()
    assert "EMULATED" in cap or name == "fig6"
    assert len(out) == 4  # PNG, PDF, the caption, the report caption


@pytest.mark.parametrize("name", list(FIGURES))
def test_figure_from_gpu_records_says_measured(gpu_recs, tmp_path, name):
    FIGURES.draw(name, {k: gpu_recs[k] for k in FIGURES.records_of(name)}, tmp_path / f"{name}.png")
    cap = (tmp_path / f"{name}.caption.rst").read_text()
    assert "EMULATED" not in cap
    assert "MEASURED" in cap or name == "fig6"
    assert synthetic.GPU_NAME in cap or name in ("fig6", "openloop", "utilisation_cost", "service")


def test_claims_from_records(recs):
    params = STUDY.parameters({"slos_s": list(synthetic.SLOS)})
    rows = claims.build(records.read_kinds(recs), params, "tiny")
    df = C.frame(rows)
    ids = set(df.claim_id)
    assert {"table1-v100-xeon-2s", "throughput-1.22x", "cost-saving-18.6", "target-offload-gain-15",
            "target-regression-within-8", "target-regression-runs", "target-service-90pct",
            "target-overload-answers", "target-overload-p99", "target-cosine", "smaller-gap-larger-gain",
            "looser-slo-larger-gain", "dispatch-under-0.1ms", "cpu-utilisation-rises"} <= ids
    emulated = df[df.claim_id.str.startswith("table")]
    assert (emulated.source == "emulated").all()
    assert (df.set_index("claim_id").loc[["throughput-1.22x", "target-overload-p99"], "source"] == "emulated").all()
    assert df.set_index("claim_id").loc["target-overload-answers", "verdict"] == C.REPRODUCED


def test_claims_from_gpu_records_are_measured(gpu_recs):
    params = STUDY.parameters({"slos_s": list(synthetic.SLOS)})
    df = C.frame(claims.build(records.read_kinds(gpu_recs), params, "tiny")).set_index("claim_id")
    for cid in ("table1-v100-xeon-2s", "throughput-1.22x", "target-offload-gain-15", "target-overload-p99",
                "target-cosine", "regression-as-good-as-stress", "cpu-utilisation-rises"):
        assert df.loc[cid, "source"] == "measured", cid
    assert df.loc["table1-atlas-kunpeng-2s", "verdict"] == C.OUT_OF_REACH   # needs an NPU, not emulated
    assert "H100" in df.loc["table1-atlas-kunpeng-2s", "reason"]
    assert df.loc["smaller-gap-larger-gain", "verdict"] == C.OUT_OF_REACH

"""The steps' records, the claims rows, the schema and bad configuration."""
import pytest

from bench.core.judging import claims as core_claims

from bench.core.declaring import config

from bench.core.measuring import records
from bench.core.base.errors import ConfigError, DataFormatError
from bench.core.measuring.step import Context, execute
from bench.trinity import STUDY, claims


def test_records_carry_source_and_phase(study):
    r = study["records"]
    rec = records.read(r["recall"][0])
    assert {"faiss-hnsw", "engine-batch1", "engine-static", "engine-continuous", "hnswlib"} <= set(rec.system)
    import importlib.util

    hnswlib = rec[rec.system == "hnswlib"]
    if importlib.util.find_spec("hnswlib") is None:   # what this machine gives, not a hard-coded outcome
        assert (hnswlib.source == "not_run").all() and hnswlib.why.str.contains("not installed").all()
    assert set(rec.phase) == {"warmup", "measured"}
    load = records.read(r["load"][0])
    assert set(load.engine) == {"replay"} and set(load.source) == {"emulated"}
    trace = records.read(r["trace"][0])
    chk = trace[trace.row == "check"]
    assert set(chk[chk.engine == "live"].source) == {"measured"} and set(chk[chk.engine == "replay"].source) == {"emulated"}
    assert (load.p95_s >= load.p50_s).all() and (load.lane_util <= 1).all()
    assert "simulated" in load.attrs["provenance"]["method"]
    assert (records.read(r["placement"][0]).source == "modelled").all()
    sched = records.read(r["sched"][0])
    assert set(sched[sched.row == "run"].policy) == {"fifo", "prefill_first", "decode_first", "fixed_r", "trinity"}


def test_claims_rows(study):
    rows = claims.build(records.read_kinds(study["records"]), study["typed"], "test")
    ids = {r.claim_id for r in rows}
    assert {"target-vs-hnsw-tiny-sift", "target-lane-util-tiny-sift", "claim-independent-pool",
            "claim-continuous-smooth-p95-tiny-sift", "check-replay-vs-live"} <= ids
    assert any(i.startswith("target-continuous-load-tiny-sift") for i in ids)
    assert all(r.verdict in core_claims.VERDICTS for r in rows)
    assert next(r for r in rows if r.claim_id == "claim-independent-pool").verdict == core_claims.NEEDS_HARDWARE
    core_claims.frame(rows)   # unique ids
    assert core_claims.check(rows) == []   # every paper row quotes the paper's definition and declares its hardware


def test_schema_defaults_and_bad_values():
    p = config.validate_section("trinity", {})
    assert p["engine"]["p"] == 1 and p["graph"]["degree"] == 32 and p["datasets"] == ["sift-like"]
    for bad in ({"engine": {"p": 0}}, {"load": {"loads": [0.5, -1]}}, {"scheduler": {"policies": ["lifo"]}},
                {"nope": 1}):
        p = config.validate_section("trinity", bad) if "engine" in bad or "load" in bad else None
        if p is None:
            with pytest.raises(ConfigError):
                config.validate_section("trinity", bad)


def _run(study, step, params, extra=None, tmp=None):
    inputs = {**study["inputs"], **(extra or {})}
    return execute(Context("trinity", step, STUDY.parameters(params), "test", 1, 1, tmp / f"{step}.parquet", inputs,
                           "tiny-sift", section=params), STUDY.steps[step])


def test_bad_config_fails_before_work(study, tmp_path):
    import copy

    for change, msg in (({"engine": {"p": 0}}, "p=0"), ({"load": {"loads": [0.5, -1.0]}}, "offered load must be > 0"),
                        ({"recall": {"top_m": [5]}}, "smaller than k=10"),
                        ({"scheduler": {"prefill_loads": [0.0]}}, "offered load must be > 0")):
        p = copy.deepcopy(study["params"])
        for k, v in change.items():
            p[k].update(v)
        with pytest.raises(ConfigError, match=msg):
            _run(study, "recall", p, tmp=tmp_path)
        assert not (tmp_path / "recall.parquet").exists()


def test_graph_of_other_vectors_is_refused(study, tmp_path):
    import numpy as np

    from bench.ann import graph

    g = np.zeros((100, 16), np.int32)
    other = graph.save_graph(tmp_path / "other.ibin", g, np.zeros((100, 128), np.uint8), {})
    with pytest.raises(DataFormatError, match="does not match its vectors"):
        _run(study, "trace", study["params"], {"graph": [str(other)]}, tmp=tmp_path)


@pytest.mark.gpu
def test_roofline_measures_the_gpu_and_fits_each_stage(study):
    """On CUDA the engine, the transformer and the peak GEMM all run on the GPU (Trinity Figure 1)."""
    from bench.trinity.system import roofline

    rec = records.read(study["records"]["roofline"][0])
    assert set(rec.device) == {"cuda"} and (rec.u > 0).all()
    m = rec[rec.phase == "measured"].groupby(["stage", "x"]).u.median().reset_index()
    for stage, g in m.groupby("stage"):
        f = roofline.fit(g.x, g.u)
        assert f["x_sat"] > 0 and 0 < f["alpha"] <= 1, stage
    assert "GPU" in rec.attrs["provenance"]["method"]


import numpy as np
import pandas as pd
import pytest

from bench.core.config import validate_section
from bench.core.errors import BenchError, ConfigError
from bench.data import prepared
from bench.espn import encoders, runner
from bench.espn.errors import EmptyPassageError, PrefetchConfigError


def test_hash_encoder_deterministic_and_empty():
    e = encoders.HashEncoder(seed=3).fit(["alpha beta", "beta gamma"])
    c1, b1 = e.encode_docs(["alpha beta", ""])
    c2, b2 = encoders.HashEncoder(seed=3, idf=e.idf).encode_docs(["alpha beta", ""])
    np.testing.assert_array_equal(c1, c2)
    assert b1[1].shape == (0, 32) and not c1[1].any()


def test_empty_passages_error_or_encode():
    with pytest.raises(EmptyPassageError, match="empty passage"):
        encoders.check_passages(["a", "b"], ["text", "  "], allow_empty=False)
    assert encoders.check_passages(["a", "b"], ["text", ""], allow_empty=True) == ["b"]


def test_filler_token_distribution():
    counts = encoders.token_counts(20000, np.random.default_rng(0))
    assert 60 < counts.mean() < 75 and counts.min() >= 2 and counts.max() <= 160


def test_minilm_encoder_offline():
    ok, why = encoders.minilm_available()
    if not ok:
        pytest.skip(why)
    docs = ["the cat sat on the mat", "stock markets fell sharply today", "a recipe for apple pie"]
    e = encoders.MiniLMEncoder(batch_size=8).fit(docs * 60, sample=150)
    c, b = e.encode_docs(docs + [""])
    assert c.shape == (4, 128) and b[0].shape[1] == 32 and b[3].shape[0] == 0


def test_colberter_unavailable_is_a_clear_error():
    with pytest.raises(BenchError, match="colberter"):
        encoders.make_encoder("colberter")


def _params(**kw):
    p = validate_section("espn", {"encoder": "hash", "filler_passages": 500, "index": {"nlist": 16},
                                  "k": 100, "nprobe": 8, "nprobe_sweep": [2, 8], "hitrate_nprobe": [8],
                                  "rerank_counts": [16, 100], "partial_rerank": 16, "repeats": 1,
                                  "batch_sizes": [1, 2], "batch_repeats": 1, **kw})
    return p


def test_bad_params_before_measuring():
    with pytest.raises(PrefetchConfigError):
        runner.check_params(_params(prefetch_delta=20))
    with pytest.raises(ConfigError, match="batch size"):
        runner.check_params(_params(batch_sizes=[0, 1]))


def test_build_hitrate_quality_batch(tmp_path):
    m = prepared.prepare("mm", {"source": "synthetic/msmarco-like", "n_passages": 300, "n_query": 10},
                         profile="t", data_dir=tmp_path, seed=1)
    p = _params()
    bdir = tmp_path / "build"
    meta = runner.build(str(m), p, str(bdir), seed=1, threads=1)
    assert meta["n_docs"] == 800 and meta["encoder"] == "hash"
    runner.hitrate(bdir, p, tmp_path / "h.parquet", "t", 1, 1)
    runner.quality(bdir, str(m), p, tmp_path / "q.parquet", "t", 1, 1)
    runner.batch(bdir, p, tmp_path / "b.parquet", "t", 1, 1)
    from bench.core import records

    q = records.read(tmp_path / "q.parquet")
    assert q[q.figure == "fig6"]["norm_mrr@10"].iloc[-1] == pytest.approx(1.0)
    # with filler in the table the hit rate is also measured on the collection's passages alone
    h = records.read(tmp_path / "h.parquet")
    assert set(h.corpus) == {"full index", "real passages only"}
    real = h[h.corpus == "real passages only"]
    assert (real.n_docs == 300).all() and (h[h.corpus == "full index"].n_docs == 800).all()
    assert real.nprobe_used.max() <= real.nlist.max() and h.hit_rate.between(0, 1).all()
    # an offsets table that does not match its table is caught before measuring
    with open(runner.paths(bdir)["table"], "ab") as fh:
        fh.write(b"\0" * 4096)
    with pytest.raises(BenchError):
        runner.hitrate(bdir, p, tmp_path / "h2.parquet", "t", 1, 1)


def test_build_rejects_empty_passages(tmp_path):
    m = prepared.prepare("mm", {"source": "synthetic/msmarco-like", "n_passages": 200, "n_query": 5,
                                "empty_passages": 3}, profile="t", data_dir=tmp_path, seed=1)
    with pytest.raises(EmptyPassageError):
        runner.build(str(m), _params(), str(tmp_path / "b"), seed=1, threads=1)
    meta = runner.build(str(m), _params(empty_passages="encode"), str(tmp_path / "b"), seed=1, threads=1)
    assert meta["n_empty"] == 3


def _fake_records(tmp_path, emulated: str):
    """Minimal e2e/hitrate/iops/batch record sets for the summary and the e2e figures."""
    from bench.core import provenance, records

    rows = []
    native = {("memory", "unlimited"): 0.02, ("mmap", "0.50"): 0.09, ("direct", "0.50"): 0.04,
              ("direct_prefetch", "0.50"): 0.03}
    for (k, b), v in native.items():
        for rep in range(2):
            rows.append({"backend": k, "budget": b, "phase": "measured", "repeat": rep, "total_s": v,
                         "encode_s": 0.0, "ann_s": 0.001, "prefetch_wait_s": 0.0, "crit_read_s": v / 2,
                         "rerank_s": v / 2, "status": "ok", "reason": "", "source": "measured", "ssd": "native",
                         "ssd_read_iops": np.nan})
    for k, v in (("mmap", 0.4), ("direct", 0.1), ("direct_prefetch", 0.05)):
        if emulated == "ok":
            rows.append({"backend": k, "budget": "0.50", "phase": "measured", "repeat": 0, "total_s": v,
                         "encode_s": 0.0, "ann_s": 0.001, "prefetch_wait_s": 0.0, "crit_read_s": v / 2,
                         "rerank_s": v / 2, "status": "ok", "reason": "", "source": "emulated",
                         "ssd": "emulated", "ssd_read_iops": 20000.0})
        else:
            rows.append({"backend": k, "budget": "0.50", "phase": "measured", "status": "not_run",
                         "reason": "emulated SSD: not root", "source": "not_run", "ssd": "emulated",
                         "ssd_read_iops": 20000.0})
    prov = provenance.collect(profile="t", config={}, seed=None, method="test")
    records.write(tmp_path / "e.parquet", pd.DataFrame(rows), prov)
    records.write(tmp_path / "h.parquet", pd.DataFrame([{"nprobe": 8, "step": 0.3, "rerank_n": 100,
                                                          "hit_rate": 0.95, "source": "measured"}]), prov)
    records.write(tmp_path / "i.parquet", pd.DataFrame(
        [{"tool": t, "engine": e, "qd": 32, "repeat": 0, "iops": v, "status": "ok", "source": "measured"}
         for t, e, v in (("espn-reader", "threadpool", 90.0), ("fio", "io_uring", 100.0))]), prov)
    records.write(tmp_path / "b.parquet", pd.DataFrame([{"batch": 1, "source": "measured"}]), prov)


@pytest.mark.parametrize("emulated", ["ok", "not_run"])
def test_summary_reports_native_and_emulated_apart(tmp_path, emulated):
    from bench.core import records
    from bench.espn import figures

    _fake_records(tmp_path, emulated)
    p = _params(emulated_ssd={"enabled": True, "read_iops": 20000}, iops_depths=[1, 32])
    runner.summary(tmp_path / "e.parquet", tmp_path / "h.parquet", tmp_path / "i.parquet",
                   tmp_path / "b.parquet", p, tmp_path / "targets.parquet", "t")
    t = records.read(tmp_path / "targets.parquet")
    nat = t[t.ssd == "native"]
    emu = t[t.ssd == "emulated"]
    mm = nat[nat.target.str.contains("faster than mmap")].iloc[0]
    assert mm.value == pytest.approx(3.0) and "emulated" not in mm.target  # from the native rows only
    assert nat[nat.target.str.contains("no slower than direct")].value.iloc[0] == pytest.approx(0.75)
    assert len(emu) and emu.target.str.contains("emulated SSD").all()
    premise = nat[nat.target.str.startswith("premise of the 1.2x target")].iloc[0]
    # budget = cached ANN time x (1 - step); reads = K records of 4 KiB at fio's 100 IOPS
    assert premise.value == pytest.approx(0.001 * (1 - p["prefetch_step"]) / (p["k"] / 100.0))
    assert premise["pass"] in (False, "False")
    if emulated == "ok":
        assert emu[emu.target.str.contains("faster than mmap")].value.iloc[0] == pytest.approx(8.0)
    else:
        v = emu["pass"].iloc[0]
        assert emu.measured.iloc[0].startswith("not run") and (v is None or v == "None" or pd.isna(v))
    md = (tmp_path / "targets.md").read_text()
    assert "| emulated |" in md and "| native |" in md
    # the e2e figures label the emulated rows and never merge them with the native ones
    figures.draw("tables45", [str(tmp_path / "e.parquet")], str(tmp_path / "t45.png"))
    tab = pd.read_csv(tmp_path / "t45.csv")
    if emulated == "ok":
        emu_rows = tab[tab.backend.str.contains("emulated", na=False)]
        assert len(emu_rows) == 3 and emu_rows["0.50"].max() == pytest.approx(400.0)
        assert tab[tab.backend == figures.BACKEND_NAMES["mmap"]]["0.50"].iloc[0] == pytest.approx(90.0)
    figures.draw("fig1", [str(tmp_path / "e.parquet")], str(tmp_path / "f1.png"))

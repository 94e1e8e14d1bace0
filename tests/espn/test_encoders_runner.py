
import dataclasses

import numpy as np
import pandas as pd
import pytest

from bench.core.declaring.config import validate_section
from bench.core.base.errors import BenchError, ConfigError
from bench.data import prepared
from bench.core.measuring import records, step
from bench.espn import STUDY
from bench.espn.steps import build as espn_build, inputs as common
from bench.espn.system import encoders
from bench.espn.system.candidates import PrefetchConfigError
from bench.espn.system.encoders import EmptyPassageError


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


def _section(**kw):
    return validate_section("espn", {"encoder": "hash", "filler_passages": 500, "index": {"nlist": 16},
                                  "k": 100, "nprobe": 8, "nprobe_sweep": [2, 8], "hitrate_nprobe": [8],
                                  "rerank_counts": [16, 100], "partial_rerank": 16, "repeats": 1,
                                  "batch_sizes": [1, 2], "batch_repeats": 1, **kw})


def _params(**kw):
    """The typed parameters of the test section (what a step is given)."""
    return STUDY.parameters(_section(**kw))


def measure(name, bdir, manifest, out, params):
    """One step through the common skeleton, as ``bench espn measure`` runs it."""
    ctx = step.Context("espn", name, params, "t", 1, 1, out, {"build": [str(bdir)], "manifest": [str(manifest)]},
                       section=_section())
    return step.execute(ctx, STUDY.steps[name])


def test_bad_params_before_measuring():
    with pytest.raises(PrefetchConfigError):
        common.check_params(_params(prefetch_delta=20))
    with pytest.raises(ConfigError, match="batch size"):
        common.check_params(_params(batch_sizes=[0, 1]))
    with pytest.raises(ConfigError, match="exactly one"):
        common.check_params(dataclasses.replace(_params(), datasets=("a", "b")))


def test_schema_takes_one_dataset_as_a_list():
    assert _params().datasets == ("msmarco-like",)
    with pytest.raises(ConfigError, match="datasets"):
        validate_section("espn", {"datasets": ["a", "b"]})
    with pytest.raises(ConfigError, match="dataset"):
        validate_section("espn", {"dataset": "msmarco-like"})


def test_build_hitrate_quality_batch(tmp_path):
    m = prepared.prepare("mm", {"source": "synthetic/msmarco-like", "n_passages": 300, "n_query": 10},
                         profile="t", data_dir=tmp_path, seed=1)
    p = _params()
    bdir = tmp_path / "build"
    meta = espn_build.build(str(m), p, str(bdir), seed=1, threads=1)
    assert meta["n_docs"] == 800 and meta["encoder"] == "hash" and "synthetic" in meta["text_source"]
    for name in ("hitrate", "quality", "batch"):
        measure(name, bdir, m, tmp_path / f"{name}.parquet", p)
    q = records.read(tmp_path / "quality.parquet")
    assert q[q.figure == "fig6"]["norm_mrr@10"].iloc[-1] == pytest.approx(1.0)
    assert len(q[q.figure == "fig6-query"]) == 2 * q[q.figure == "fig6-query"].query_id.nunique()
    prov = records.read_provenance(tmp_path / "quality.parquet")
    assert prov["table_storage"]["path"].endswith("table.espn") and "doc_ids" not in prov["build"]
    # with filler in the table the hit rate is also measured on the collection's passages alone
    h = records.read(tmp_path / "hitrate.parquet")
    assert set(h.corpus) == {"full index", "real passages only"}
    real = h[h.corpus == "real passages only"]
    assert (real.n_docs == 300).all() and (h[h.corpus == "full index"].n_docs == 800).all()
    assert real.nprobe_used.max() <= real.nlist.max() and h.hit_rate.between(0, 1).all()
    b = records.read(tmp_path / "batch.parquet")
    assert set(b.phase) == {"warmup", "measured"} and "machine_busy" in b
    # an offsets table that does not match its table is caught before measuring
    with open(common.paths(bdir)["table"], "ab") as fh:
        fh.write(b"\0" * 4096)
    with pytest.raises(BenchError):
        measure("hitrate", bdir, m, tmp_path / "h2.parquet", p)


def test_build_rejects_empty_passages(tmp_path):
    m = prepared.prepare("mm", {"source": "synthetic/msmarco-like", "n_passages": 200, "n_query": 5,
                                "empty_passages": 3}, profile="t", data_dir=tmp_path, seed=1)
    with pytest.raises(EmptyPassageError):
        espn_build.build(str(m), _params(), str(tmp_path / "b"), seed=1, threads=1)
    meta = espn_build.build(str(m), _params(empty_passages="encode"), str(tmp_path / "b"), seed=1, threads=1)
    assert meta["n_empty"] == 3

"""The recall chain's pieces: index building, measurement records, figure; recall equals faiss's."""
from __future__ import annotations

import faiss
import numpy as np
import pandas as pd
import pytest

from bench.core.judging import claims as core_claims

from bench.core.measuring import records
from bench.core.measuring.step import Context, execute
from bench.core.base.errors import ConfigError
from bench.data import prepared
from bench.ann import ivf as index, metrics
from bench.ivf_recall import STUDY, claims, figures
from bench.ivf_recall.steps import recall as recall_step

PARAMS = {"nprobe": [1, 4, 32], "k": [1, 10], "repeats": 2, "warmup": 1, "index": {"nlist": 32, "m": 16}}


def _run(m, ipath, out, params=PARAMS, seed=5):
    ctx = Context("ivf_recall", "recall", STUDY.parameters(params), "t", seed, 1, out,
                  {"manifest": [str(m)], "index": [str(ipath)]}, section=params)
    return execute(ctx, STUDY.steps["recall"].fn)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("recall")
    m = prepared.prepare("d", {"source": "synthetic/sift-like", "n_base": 3000, "n_query": 30, "gt_k": 10},
                         profile="t", data_dir=tmp, seed=5)
    ds = prepared.load_vectors(m)
    idx = index.build(ds.base, nlist=32, m=16, seed=5)
    return tmp, m, index.save(idx, tmp / "i.faiss"), ds


def test_records_and_recall_match_faiss(built):
    tmp, m, ipath, ds = built
    out = _run(m, ipath, tmp / "r.parquet")
    df = records.read(out)
    assert set(df.phase) == {"warmup", "measured"}
    assert len(df[df.phase == "measured"]) == 3 * 2 and len(df[df.phase == "warmup"]) == 3
    prov = df.attrs["provenance"]
    assert prov["dataset_checksum"] == ds.checksum and prov["threads"]["faiss_omp_threads"] == 1
    assert "checks" in prov["quiet_check"]["before"] and "machine_busy" in df   # off in tests (conftest)
    ref = faiss.read_index(str(ipath))
    for nprobe in PARAMS["nprobe"]:
        ref.nprobe = nprobe
        _, found = ref.search(np.asarray(ds.queries, dtype=np.float32), 10)
        expect = np.mean([np.intersect1d(found[i], ds.gt_ids[i, :10]).size for i in range(len(found))]) / 10
        got = df[(df.nprobe == nprobe) & (df.phase == "measured")].recall_at_10.unique()
        assert got.tolist() == [pytest.approx(expect)]
    recall = df.groupby("nprobe").recall_at_10.first()
    assert recall.is_monotonic_increasing


def test_figure_from_records_only(built, monkeypatch):
    tmp, m, ipath, _ = built
    out = _run(m, ipath, tmp / "r2.parquet")
    monkeypatch.setattr(recall_step, "recall", lambda ctx: pytest.fail("a figure must not measure"))
    for name in figures.FIGURES:
        written = figures.FIGURES.draw(name, {"recall": [out]}, tmp / f"{name}.png")
        assert {p.suffix for p in written} == {".png", ".pdf", ".rst"}
    one = claims.build({"recall": records.read(out)}, STUDY.parameters(PARAMS), "t")[0]
    assert one.verdict == core_claims.INCONCLUSIVE and "fewer than the 3" in one.reason   # one fresh process
    runs = [records.read(out)] + [records.read(_run(m, ipath, tmp / f"r2-{i}.parquet", seed=5 + i)) for i in (1, 2)]
    three = claims.build({"recall": pd.concat(runs, ignore_index=True)}, STUDY.parameters(PARAMS), "t")[0]
    # deterministic premise over 3 fresh processes: reproduced, unless the quiet check saw other work
    assert three.verdict == (core_claims.INCONCLUSIVE if three.machine_busy else core_claims.REPRODUCED), three.reason


def test_bad_parameters(built):
    tmp, m, ipath, ds = built
    with pytest.raises(ConfigError, match="m=7 does not divide the dimension 128"):
        index.build(ds.base, nlist=8, m=7)
    with pytest.raises(ConfigError, match="nlist=5000"):
        index.build(ds.base, nlist=5000, m=16)
    with pytest.raises(ConfigError, match=r"nprobe: \[64\] exceed nlist=32"):
        _run(m, ipath, tmp / "x.parquet", {**PARAMS, "nprobe": [1, 64]})
    with pytest.raises(ConfigError, match="recall@100 needs 100 ground-truth neighbours"):
        _run(m, ipath, tmp / "x.parquet", {**PARAMS, "k": [100]})
    assert not (tmp / "x.parquet").exists()


def test_recall_metric():
    gt = np.array([[1, 2, 3], [4, 5, 6]])
    assert metrics.recall_at_k(np.array([[1, 9, 3], [6, 5, 4]]), gt, 3) == pytest.approx(5 / 6)
    assert metrics.recall_at_k(np.array([[1, 9, 3], [6, 5, 4]]), gt, 1) == 0.5
    with pytest.raises(ValueError):
        metrics.recall_at_k(gt, gt, 4)

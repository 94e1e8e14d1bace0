"""Prepared datasets: synthetic, registered crops (ground truth recomputed, never the full set's),
user files in u8bin and fvecs, text."""
from __future__ import annotations

import json

import numpy as np
import pytest

from bench.core.base.errors import ConfigError, DataFormatError
from bench.data import formats, groundtruth, prepared, registry
from bench.data.registry import RemoteFile, Source


def test_synthetic_vectors_with_exact_ground_truth(tmp_path):
    m = prepared.prepare("s", {"source": "synthetic/sift-like", "n_base": 2000, "n_query": 20, "gt_k": 10},
                         profile="t", data_dir=tmp_path, seed=1)
    ds = prepared.load_vectors(m)
    assert ds.base.shape == (2000, 128) and ds.queries.shape == (20, 128) and ds.gt_ids.shape == (20, 10)
    d = ((ds.queries[:, None, :].astype(np.float32) - ds.base[None, :, :].astype(np.float32)) ** 2).sum(-1)
    np.testing.assert_array_equal(np.sort(d, axis=1)[:, :10], np.sort(ds.gt_dist, axis=1))
    again = prepared.prepare("s", {"source": "synthetic/sift-like", "n_base": 2000, "n_query": 20, "gt_k": 10},
                             profile="t2", data_dir=tmp_path, seed=1)
    assert json.loads(again.read_text())["checksum"] == json.loads(m.read_text())["checksum"]


@pytest.mark.parametrize("src", ["synthetic/deep-like", "synthetic/syn-512"])
def test_other_synthetic_sets(tmp_path, src):
    ds = prepared.load_vectors(prepared.prepare("x", {"source": src, "n_base": 500, "n_query": 5, "gt_k": 5},
                                                profile="t", data_dir=tmp_path))
    assert ds.base.shape[1] == registry.get(src).dim and ds.base.dtype == np.float32
    ids, dist = groundtruth.exact_knn(ds.base, ds.queries, 5)  # SYN's shortcut must agree
    np.testing.assert_array_equal(ids, ds.gt_ids)
    np.testing.assert_allclose(dist, ds.gt_dist, rtol=1e-4)


@pytest.fixture
def local_source(tmp_path, monkeypatch):
    """A registered source already on disk, with published ground truth for the full set."""
    xb, xq = (np.random.default_rng(0).random((n, 8)).astype(np.float32) for n in (300, 12))
    src = Source(id="test/vec", kind="vectors", description="t", dim=8, dtype="f32",
                 files=(RemoteFile("http://127.0.0.1:9/b", "base.fbin"),), base="base.fbin",
                 queries="query.fbin", groundtruth="gt.biganngt")
    monkeypatch.setitem(registry.SOURCES, src.id, src)
    folder = tmp_path / "raw" / "test/vec"
    formats.write_bin(folder / "base.fbin", xb)
    formats.write_bin(folder / "query.fbin", xq)
    ids, dist = groundtruth.exact_knn(xb, xq, 10)
    formats.write_groundtruth(folder / "gt.biganngt", ids, dist)
    return xb, xq


def test_full_set_uses_published_ground_truth(tmp_path, local_source):
    m = prepared.prepare("v", {"source": "test/vec"}, profile="t", data_dir=tmp_path)
    assert json.loads(m.read_text())["groundtruth_origin"] == "published"
    assert prepared.load_vectors(m).gt_ids.shape == (12, 10)


def test_crop_gets_its_own_ground_truth(tmp_path, local_source):
    xb, xq = local_source
    m = prepared.prepare("v", {"source": "test/vec", "n_base": 100, "n_query": 5, "gt_k": 10},
                         profile="t", data_dir=tmp_path)
    man = json.loads(m.read_text())
    assert man["groundtruth_origin"].startswith("recomputed")
    ds = prepared.load_vectors(m)
    assert ds.base.shape == (100, 8) and ds.queries.shape == (5, 8)
    assert ds.gt_ids.max() < 100
    np.testing.assert_array_equal(ds.gt_ids, groundtruth.exact_knn(xb[:100], xq[:5], 10)[0])


def test_missing_source_files_say_fetch(tmp_path, monkeypatch):
    src = Source(id="test/absent", kind="vectors", description="t", base="b.fbin", queries="q.fbin",
                 files=(RemoteFile("http://127.0.0.1:9/b", "b.fbin"),))
    monkeypatch.setitem(registry.SOURCES, src.id, src)
    with pytest.raises(DataFormatError, match="run `bench data fetch test/absent` first"):
        prepared.prepare("a", {"source": "test/absent"}, profile="t", data_dir=tmp_path)


@pytest.mark.parametrize("fmt", ["u8bin", "fvecs"])
def test_user_dataset(tmp_path, fmt):
    from bench.data import synthetic

    xb, xq = synthetic.sift_like(400, seed=2, n_queries=7)
    formats.write_vectors(tmp_path / f"b.{fmt}", xb)
    formats.write_vectors(tmp_path / f"q.{fmt}", xq)
    ids, _ = groundtruth.exact_knn(xb, xq, 20)
    formats.write_vecs(tmp_path / "gt.ivecs", ids.astype(np.int32))
    spec = {"source": "user", "format": fmt, "base": f"b.{fmt}", "queries": f"q.{fmt}",
            "groundtruth": "gt.ivecs", "metric": "l2"}
    ds = prepared.load_vectors(prepared.prepare("mine", spec, profile="t", data_dir=tmp_path / "d",
                                                workdir=tmp_path))
    np.testing.assert_array_equal(ds.gt_ids, ids)
    assert ds.base.shape == (400, 128)
    with pytest.raises(ConfigError, match="queries file .* does not exist"):
        prepared.prepare("mine", {**spec, "queries": "nope.u8bin"}, profile="t", data_dir=tmp_path / "d",
                         workdir=tmp_path)
    with pytest.raises(ConfigError, match="missing format"):
        prepared.prepare("mine", {"source": "user", "base": "b", "queries": "q"}, profile="t",
                         data_dir=tmp_path / "d", workdir=tmp_path)


def test_text_synthetic_and_user(tmp_path):
    m = prepared.prepare("t", {"source": "synthetic/msmarco-like", "n_passages": 300, "n_query": 10,
                               "n_topics": 10, "vocab_size": 1000, "empty_passages": 2},
                         profile="p", data_dir=tmp_path)
    ds = prepared.load_text(m)
    assert len(ds.docs) == 300 and len(ds.empty_doc_ids) == 2 and ds.checksum
    f = json.loads(m.read_text())["files"]
    user = prepared.prepare("u", {"source": "user", "collection": f["collection"]["path"],
                                  "queries": f["queries"]["path"], "qrels": f["qrels"]["path"]},
                            profile="p", data_dir=tmp_path)
    assert prepared.load_text(user).docs == ds.docs
    with pytest.raises(DataFormatError, match="not a vector dataset"):
        prepared.load_vectors(user)


@pytest.mark.parametrize("fmt", ["u8bin", "fbin", "fvecs", "bvecs"])
def test_check_user_files_names_a_truncated_file_and_both_sizes(tmp_path, fmt):
    """What the Snakefile checks when the profile is validated, before any job: a truncated vector file."""
    from bench.data import synthetic

    xb, xq = synthetic.sift_like(300, seed=2, n_queries=5)
    formats.write_vectors(tmp_path / f"b.{fmt}", xb)
    formats.write_vectors(tmp_path / f"q.{fmt}", xq)
    spec = {"source": "user", "format": fmt, "base": f"b.{fmt}", "queries": f"q.{fmt}"}
    prepared.check_user_files({"mine": spec}, workdir=tmp_path)   # whole files pass
    full = (tmp_path / f"b.{fmt}").stat().st_size
    (tmp_path / f"b.{fmt}").write_bytes((tmp_path / f"b.{fmt}").read_bytes()[:-100])
    with pytest.raises(DataFormatError) as e:
        prepared.check_user_files({"mine": spec}, workdir=tmp_path)
    msg = str(e.value)
    assert msg.startswith("dataset 'mine' base: ") and str(tmp_path / f"b.{fmt}") in msg and len(msg.splitlines()) == 1
    if fmt.endswith("bin"):   # the header gives the expected size
        assert f"({full} B) but the file has {full - 100} B" in msg
    else:                     # *vecs: no header, the size is not a whole number of rows
        assert f"size {full - 100} B is not a multiple of the row size" in msg


def test_check_user_files_refuses_before_any_job_what_prepare_would(tmp_path):
    from bench.data import synthetic

    xb, xq = synthetic.sift_like(300, seed=2, n_queries=5)
    formats.write_bin(tmp_path / "b.u8bin", xb)
    formats.write_bin(tmp_path / "q.u8bin", xq)
    formats.write_bin(tmp_path / "q64.u8bin", xq[:, :64])
    ids = groundtruth.exact_knn(xb, xq, 10)[0]
    formats.write_groundtruth(tmp_path / "gt.ibin", ids)
    formats.write_groundtruth(tmp_path / "gt3.ibin", ids[:3])
    formats.write_groundtruth(tmp_path / "gtbig.ibin", ids + 300)
    spec = {"source": "user", "format": "u8bin", "base": "b.u8bin", "queries": "q.u8bin", "groundtruth": "gt.ibin"}
    check = lambda **kw: prepared.check_user_files({"mine": {**spec, **kw}}, workdir=tmp_path)  # noqa: E731
    check()
    check(n_base=100, groundtruth="gt3.ibin")   # a crop recomputes its ground truth: the short file is not used
    check(base="absent.u8bin")                  # a missing file: Snakemake's missing-input message says it
    gt = tmp_path / "gt.ibin"
    gt_bytes = gt.read_bytes()
    gt.write_bytes(gt_bytes[:-8])
    with pytest.raises(DataFormatError, match=r"dataset 'mine' groundtruth: .*gt.ibin: header says 5 queries x 10"):
        check()
    gt.write_bytes(gt_bytes)
    for kw, err, words in (
            ({"n_base": 301}, ConfigError, "n_base/n_query (301/5) exceed the files (300/5)"),
            ({"n_query": 6}, ConfigError, "n_base/n_query (300/6) exceed the files (300/5)"),
            ({"queries": "q64.u8bin"}, DataFormatError, "base has dimension 128, queries 64"),
            ({"groundtruth": "gt3.ibin"}, DataFormatError, "ground truth has 3 rows, 5 queries"),
            ({"groundtruth": "gtbig.ibin"}, DataFormatError, ">= base size 300"),
            ({"format": "fbin"}, DataFormatError, "b.u8bin: header says 300 x 128 fbin")):
        with pytest.raises(err) as e:
            check(**kw)
        assert words in str(e.value) and str(e.value).startswith("dataset 'mine'"), str(e.value)
    with pytest.raises(ConfigError, match=r"dataset 'mine' \(source: user\): missing format"):
        prepared.check_user_files({"mine": {"source": "user", "base": "b.u8bin", "queries": "q.u8bin"}}, tmp_path)
    with pytest.raises(ConfigError, match=r"dataset 't' \(source: user, text\): missing qrels"):
        prepared.check_user_files({"t": {"source": "user", "collection": "c.tsv", "queries": "q.tsv"}}, tmp_path)
    prepared.check_user_files({"s": {"source": "synthetic/sift-like"}}, tmp_path)   # not a user dataset

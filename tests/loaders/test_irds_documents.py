"""MS MARCO documents (msmarco-document/train) through their ir_datasets id, offline: files placed where
our fetch puts them (ir_datasets' cache paths) are read without the network, and the prepared subset
becomes the loaders' collection bundle (the small and paper profiles' path)."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from bench.data import registry

TREC = "".join(f"<DOC>\n<DOCNO>D{i}</DOCNO>\n<TEXT>\nhttp://example.com/{i}\nTitle {i}\nbody of document {i} "
               f"about topic {i % 2}\n</TEXT>\n</DOC>\n" for i in range(4))


def _seed_home(home):
    paths = {f.path.split("/", 1)[1]: home / f.path for f in registry.get("msmarco-document/train").files}
    for p in paths.values():
        p.parent.mkdir(parents=True, exist_ok=True)
    paths["collection.tsv.gz"].write_bytes(gzip.compress(TREC.encode()))
    paths["train/queries.tsv.gz"].write_bytes(gzip.compress(b"10\ttopic zero docs\n11\ttopic one docs\n"))
    paths["train/qrels.gz"].write_bytes(gzip.compress(b"10 0 D0 1\n11 0 D3 1\n"))


def _prepare(tmp_path):
    _seed_home(tmp_path / "data" / "raw" / "ir_datasets")
    spec = {"source": "msmarco-document/train", "n_passages": 3}
    return subprocess.run([sys.executable, "-m", "bench", "data", "prepare", "docs", "--spec", json.dumps(spec),
                           "--profile", "t", "--data-dir", str(tmp_path / "data")],
                          capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_PROXY": "*",
                               "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"})


def test_msmarco_document_files_are_where_ir_datasets_reads_them():
    paths = [f.path for f in registry.get("msmarco-document/train").files]
    assert paths == ["msmarco-document/collection.tsv.gz", "msmarco-document/train/queries.tsv.gz",
                     "msmarco-document/train/qrels.gz"]


def test_msmarco_document_train_prepares_offline(tmp_path):
    r = _prepare(tmp_path)
    # offline: ir_datasets built its docstore from the placed files, with no download attempt
    assert "building docstore" in r.stderr and "download" not in r.stderr.lower(), r.stderr[-2000:]
    assert r.returncode == 0, r.stderr[-2000:]
    from bench.data import prepared
    from bench.loaders.system import collection

    ds = prepared.load_text(r.stdout.strip().splitlines()[-1])
    assert set(ds.query_ids) == {"10", "11"} and {"D0", "D3"} <= set(ds.doc_ids)
    meta = collection.read_bundle(collection.build_bundle(ds, tmp_path / "bundle"))
    assert meta["n_docs"] == len(ds.doc_ids)

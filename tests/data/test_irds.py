"""MS MARCO through ir_datasets ids, offline: files placed where our fetch puts them (the paths of
ir_datasets' own manifest) are read by ir_datasets without touching the network, and a TREC DL subset
(judged passages + a prefix of the collection) is prepared with its qrels."""
from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tarfile

from bench.data import prepared, registry


def _seed_home(home):
    files = {f.path: f for f in registry.get("msmarco-passage/trec-dl-2019/judged").files}
    coll = b"0\tthe first passage about cats\n1\tsecond passage on dogs\n2\tthird one, birds\n3\tfourth: fish\n"
    tar_path = home / next(p for p in files if p.endswith("collectionandqueries.tar.gz"))
    tar_path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tar_path, "w:gz") as tar:
        info = tarfile.TarInfo("collection.tsv")
        info.size = len(coll)
        tar.addfile(info, io.BytesIO(coll))
    q = home / next(p for p in files if p.startswith("downloads/"))
    q.parent.mkdir(parents=True, exist_ok=True)
    queries = b"100\twhat about cats\n200\tfish facts\n300\tunjudged query\n"
    q.write_bytes(gzip.compress(queries))
    # ir_datasets md5-checks files under downloads/ (a fake cannot match): give it the extracted
    # cache it looks for first, as it leaves after a real download.
    (home / "msmarco-passage" / "trec-dl-2019").mkdir(parents=True, exist_ok=True)
    (home / "msmarco-passage" / "trec-dl-2019" / "queries.tsv").write_bytes(queries)
    qrels = home / next(p for p in files if p.endswith("qrels"))
    qrels.parent.mkdir(parents=True, exist_ok=True)
    qrels.write_text("100 0 0 3\n100 0 2 0\n200 0 3 2\n")
    (home / "msmarco-passage" / "irds_version.txt").write_text("v2")


def test_trec_dl_subset_through_ir_datasets_offline(tmp_path):
    _seed_home(tmp_path / "data" / "raw" / "ir_datasets")
    spec = {"source": "msmarco-passage/trec-dl-2019/judged", "n_passages": 3}
    r = subprocess.run([sys.executable, "-m", "bench", "data", "prepare", "dl19", "--spec", json.dumps(spec),
                        "--profile", "t", "--data-dir", str(tmp_path / "data")],
                       capture_output=True, text=True, timeout=300,
                       env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_PROXY": "*",
                            "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"})
    assert r.returncode == 0, r.stderr[-2000:]
    ds = prepared.load_text(r.stdout.strip().splitlines()[-1])
    assert ds.query_ids == ["100", "200"]  # judged queries only
    assert ds.doc_ids[:3] == ["0", "2", "3"] and len(ds.doc_ids) == 3  # judged passages first
    assert ds.docs[1] == "third one, birds"
    assert sorted(ds.qrels.relevance) == [0, 2, 3]

"""ESPN Table 3 (``sizes`` step): the build's files split into CLS, BOW and padding bytes exactly, the ANN
index and offsets as file sizes, the paper's Table 3 rows beside them; bad builds fail before any row."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from bench.core.measuring import records, step
from bench.core.base.errors import ConfigError
from bench.data import prepared
from bench.espn import STUDY, analysis
from bench.espn import paper_values as PV
from bench.espn.steps import build as espn_build
from bench.espn.steps import sizes as sizes_step
from bench.espn.system import layout

from .test_encoders_runner import _params, _section


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("espn-sizes")
    m = prepared.prepare("mm", {"source": "synthetic/msmarco-like", "n_passages": 200, "n_query": 6},
                         profile="t", data_dir=tmp, seed=1)
    bdir = tmp / "build"
    espn_build.build(str(m), _params(filler_passages=300), str(bdir), seed=1, threads=1)
    return bdir


def _copy(src, dst):
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def _measure(bdir, out):
    ctx = step.Context("espn", "sizes", _params(filler_passages=300), "t", 1, 1, out,
                       {"build": [str(bdir / "meta.json")]}, section=_section())
    return records.read(step.execute(ctx, STUDY.steps["sizes"]))


def test_sizes_from_the_files_on_disk(built, tmp_path):
    df = _measure(built, tmp_path / "sizes.parquet")
    assert set(df.source) == {"measured", "paper"} and df.attrs["provenance"]["build"]["n_docs"] == 500
    m = df[(df.source == "measured") & (df.scope == "all records")].set_index("part")
    off = layout.load_offsets(built / "table.espn")
    assert m.bytes["table_file"] == os.path.getsize(built / "table.espn")
    assert m.bytes["cls"] + m.bytes["bow"] + m.bytes["padding"] == m.bytes["table_file"]
    assert m.bytes["cls"] == 500 * 256 and m.bytes["bow"] == off.n_tokens.sum() * 64
    assert m.bytes["ann_index"] == os.path.getsize(built / "ann.faiss") > 0
    assert m["index"]["ann_index"].startswith("faiss IVF-Flat, nlist")
    assert m.n_queries.iloc[0] == 6 and m.bytes_per_passage["cls"] == 256
    real = df[(df.source == "measured") & (df.scope == "collection passages")].set_index("part")
    assert real.n_passages.iloc[0] == 200 and real.n_tokens.iloc[0] == off.n_tokens[:200].sum()
    assert "ann_index" not in real.index  # one index over every record: not split by scope
    paper = df[df.source == "paper"]
    v1 = paper[paper.collection == "MS MARCO v1"].set_index("part")
    assert v1.bytes["bow"] == 16.8e9 and v1.bytes["cls"] == 2.1e9 and v1.n_passages.iloc[0] == 8.8e6
    assert paper.where_in_paper.str.contains("Table 3").any() and paper.where_in_paper.str.contains("5.1").any()
    r = analysis.bow_cls(df).set_index("series")
    assert r.ratio["MS MARCO v1"] == pytest.approx(8.0)
    assert r.ratio["ours: collection passages"] == pytest.approx(off.n_tokens[:200].sum() * 64 / (200 * 256))


def test_paper_rows_transcribe_table3():
    rows = {(r["collection"], r["part"]): r for r in PV.size_rows()}
    assert rows[("MS MARCO v2", "bow")]["bytes"] == 255.4e9 and rows[("MS MARCO v2", "cls")]["n_tokens"] == 9.4e9
    assert rows[("MS MARCO v1", "ann_index")]["bytes"] == PV.TABLE4_ANN_GB * 1e9


def test_incomplete_build(built, tmp_path):
    b = _copy(built, tmp_path / "b")
    (b / "ann.faiss").unlink()
    with pytest.raises(ConfigError, match="ann.faiss"):
        _measure(b, tmp_path / "x.parquet")
    assert not (tmp_path / "x.parquet").exists()


def test_meta_disagreeing_with_the_table(built, tmp_path):
    b = _copy(built, tmp_path / "b")
    meta = json.loads((b / "meta.json").read_text())
    (b / "meta.json").write_text(json.dumps({**meta, "n_docs": 499}))
    with pytest.raises(layout.LayoutError, match="499"):
        sizes_step.measured_rows(b)
    (b / "meta.json").write_text(json.dumps({**meta, "n_real": 501}))
    with pytest.raises(layout.LayoutError, match="n_real"):
        sizes_step.measured_rows(b)
    (b / "meta.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not JSON"):
        sizes_step.measured_rows(b)


def test_table_shorter_than_its_offsets(built, tmp_path):
    b = _copy(built, tmp_path / "b")
    with open(b / "table.espn", "r+b") as fh:
        fh.truncate(os.path.getsize(b / "table.espn") - 4096)
    with pytest.raises(layout.LayoutError, match="offsets table describes"):
        sizes_step.measured_rows(b)


def test_empty_ann_index(built, tmp_path):
    b = _copy(built, tmp_path / "b")
    (b / "ann.faiss").write_bytes(b"")
    with pytest.raises(layout.LayoutError, match="empty"):
        sizes_step.measured_rows(b)
    assert np.isfinite(analysis.bow_cls(_measure(built, tmp_path / "ok.parquet")).ratio).all()

"""faiss HNSW through bench.ann.hnsw (Trinity's HNSW baseline curve): build, efSearch sweep, bad parameters."""
import numpy as np
import pytest

from bench.ann import hnsw
from bench.ann.metrics import recall_at_k
from bench.core.base.errors import ConfigError


def test_hnsw_builds_and_recall_rises_with_ef_search(small):
    index, build_s = hnsw.build(small["base"], 8, 40)
    assert index.ntotal == small["base"].shape[0] and build_s > 0 and index.hnsw.efConstruction == 40
    rec = [recall_at_k(hnsw.search(index, small["queries"], 10, ef), small["gt"], 10) for ef in (10, 128)]
    assert rec[1] >= rec[0] and rec[1] >= 0.9
    assert index.hnsw.efSearch == 128
    assert np.array_equal(hnsw.search(index, small["queries"], 10), hnsw.search(index, small["queries"], 10, 128))


def test_bad_hnsw_parameters():
    x = np.zeros((20, 4), np.float32)
    with pytest.raises(ConfigError, match="M=1"):
        hnsw.build(x, 1, 40)
    with pytest.raises(ConfigError, match="efConstruction=0"):
        hnsw.build(x, 8, 0)
    index, _ = hnsw.build(x, 8, 8)
    with pytest.raises(ConfigError, match="efSearch=0"):
        hnsw.set_ef_search(index, 0)


def test_hnsw_saves_and_loads_whole(small, tmp_path):
    index, _ = hnsw.build(small["base"], 8, 40)
    hnsw.set_ef_search(index, 32)
    path = hnsw.save(index, tmp_path / "g.faiss")
    back = hnsw.load(path)
    assert back.ntotal == index.ntotal and back.hnsw.efConstruction == 40 and back.hnsw.efSearch == 32
    assert np.array_equal(hnsw.search(back, small["queries"], 10), hnsw.search(index, small["queries"], 10))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.faiss"], "written atomically: no part file left"


def test_hnsw_load_refuses_a_truncated_or_foreign_file(small, tmp_path):
    from bench.ann import ivf
    from bench.core.base.errors import DataFormatError

    whole = hnsw.save(hnsw.build(small["base"], 8, 16)[0], tmp_path / "g.faiss").read_bytes()
    (tmp_path / "cut.faiss").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(DataFormatError, match="cut.faiss: not a readable faiss index"):
        hnsw.load(tmp_path / "cut.faiss")
    ivf.save(ivf.build(small["base"], 4, encoding="Flat"), tmp_path / "ivf.faiss")
    with pytest.raises(DataFormatError, match="ivf.faiss: a faiss IndexIVFFlat, not an HNSW"):
        hnsw.load(tmp_path / "ivf.faiss")

import os

import numpy as np
import pytest

from bench.espn.system import backends, layout
from bench.espn.system.layout import LayoutError


def test_roundtrip_and_offsets(table):
    path, off, cls, bows = table
    off2 = layout.load_offsets(path)
    assert len(off2) == 300 and off2.file_size == os.path.getsize(path)
    assert set(np.unique(off2.io_size)) <= {4096, 8192}
    assert off2.n_tokens[0] == 0  # empty passage kept
    assert off2.n_truncated == sum(len(b) > 124 for b in bows)
    with backends.MemoryStore(path) as st:
        c, b, lens = st.read(np.arange(300))
    np.testing.assert_array_equal(c, cls.astype(np.float16))
    for i in range(300):
        t = min(len(bows[i]), 124)
        assert lens[i] == t
        np.testing.assert_array_equal(b[i, :t], bows[i][:t])
        assert not b[i, t:].any()


def test_records_use_one_block_when_they_fit(tmp_path):
    cls = np.zeros((2, 128), np.float32)
    off = layout.write_table(tmp_path / "a", cls, [np.zeros((60, 32)), np.zeros((61, 32))])
    assert list(off.io_size) == [4096, 8192]
    off8 = layout.write_table(tmp_path / "b", cls, [np.zeros((1, 32)), np.zeros((1, 32))], block_mode="8k")
    assert list(off8.io_size) == [8192, 8192]


def test_table_size_mismatch(table):
    path, *_ = table
    with open(path, "ab") as fh:
        fh.write(b"\0" * 4096)
    with pytest.raises(LayoutError, match="describes"):
        layout.load_offsets(path)


@pytest.mark.parametrize("field,value,match", [
    ("offset", 100, "aligned"),
    ("io_size", 1234, "io_size"),
    ("n_tokens", 500, "BOW vectors"),
])
def test_bad_offsets(table, field, value, match):
    path, off, *_ = table
    getattr(off, field)[3] = value
    with pytest.raises(LayoutError, match=match):
        layout.validate(path, off)


def test_overlapping_records(table):
    path, off, *_ = table
    off.offset[5] = off.offset[4]
    with pytest.raises(LayoutError, match="overlap"):
        layout.validate(path, off)


def test_missing_offsets(tmp_path):
    (tmp_path / "x.espn").write_bytes(b"\0" * 4096)
    with pytest.raises(LayoutError, match="not found"):
        layout.load_offsets(tmp_path / "x.espn")

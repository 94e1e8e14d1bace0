"""Vector formats: round trips, memory maps, prefix reads, and bad files named clearly."""
from __future__ import annotations

import numpy as np
import pytest

from bench.core.base.errors import DataFormatError
from bench.data import formats


@pytest.mark.parametrize("fmt,dtype", [("fvecs", np.float32), ("ivecs", np.int32), ("bvecs", np.uint8),
                                       ("fbin", np.float32), ("u8bin", np.uint8), ("i8bin", np.int8),
                                       ("ibin", np.int32)])
def test_round_trip_is_a_memory_map(tmp_path, fmt, dtype):
    x = (np.random.default_rng(0).random((17, 12)) * 100).astype(dtype)
    p = formats.write_vectors(tmp_path / f"x.{fmt}", x)
    y = formats.read_vectors(p)
    assert y.dtype == np.dtype(dtype) and y.shape == (17, 12)
    np.testing.assert_array_equal(y, x)
    assert isinstance(y.base if y.base is not None else y, np.memmap) or isinstance(y, np.memmap)
    np.testing.assert_array_equal(formats.read_vectors(p, count=5), x[:5])


def test_bin_size_disagreeing_with_header(tmp_path):
    p = formats.write_bin(tmp_path / "x.fbin", np.zeros((10, 4), np.float32))
    with open(p, "ab") as fh:
        fh.write(b"\0" * 4)
    with pytest.raises(DataFormatError, match=r"header says 10 x 4 fbin \(168 B\) but the file has 172 B"):
        formats.read_bin(p)


def test_fvecs_row_with_another_dimension(tmp_path):
    a = formats.write_vecs(tmp_path / "a.fvecs", np.ones((3, 4), np.float32))
    raw = bytearray(a.read_bytes())
    raw[2 * 20:2 * 20 + 4] = np.int32(5).tobytes()  # row 2 declares d=5
    a.write_bytes(bytes(raw))
    with pytest.raises(DataFormatError, match="row 2 has dimension 5, row 0 has 4"):
        formats.read_vecs(a)


def test_truncated_fvecs(tmp_path):
    a = formats.write_vecs(tmp_path / "a.fvecs", np.ones((3, 4), np.float32))
    a.write_bytes(a.read_bytes()[:-3])
    with pytest.raises(DataFormatError, match="not a multiple of the row size"):
        formats.read_vecs(a)


def test_unknown_extension(tmp_path):
    with pytest.raises(DataFormatError, match="unknown vector format '.h5'"):
        formats.read_vectors(tmp_path / "x.h5")


def test_groundtruth_formats(tmp_path):
    ids = np.arange(12, dtype=np.int64).reshape(3, 4)
    dist = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    i, d = formats.read_groundtruth(formats.write_groundtruth(tmp_path / "gt.biganngt", ids, dist))
    np.testing.assert_array_equal(i, ids)
    np.testing.assert_array_equal(d, dist)
    i, d = formats.read_groundtruth(formats.write_groundtruth(tmp_path / "gt.ibin", ids))
    assert d is None and (i == ids).all()
    i, _ = formats.read_groundtruth(formats.write_vecs(tmp_path / "gt.ivecs", ids.astype(np.int32)))
    assert (i == ids).all()
    p = tmp_path / "gt.ibin"
    p.write_bytes(p.read_bytes()[:-4])
    with pytest.raises(DataFormatError, match="3 queries x 4 neighbours"):
        formats.read_groundtruth(p)


def test_failed_write_leaves_nothing(tmp_path):
    with pytest.raises(ValueError):
        formats.write_bin(tmp_path / "x.fbin", np.zeros(5, np.float32))
    assert list(tmp_path.iterdir()) == []

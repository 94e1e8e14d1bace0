"""Vector file formats, read as memory maps and written atomically.

- TEXMEX ``fvecs`` / ``ivecs`` / ``bvecs``: each row is an int32 dimension d then d components
  (float32 / int32 / uint8), little-endian.
- big-ann-benchmarks ``fbin`` / ``u8bin`` / ``i8bin`` / ``ibin``: uint32 n, uint32 d, then n*d components.
- big-ann ground truth: uint32 n, uint32 k, n*k int32 ids, then n*k float32 distances.

Readers validate sizes against headers and every row's dimension before returning, and raise
:class:`~bench.core.base.errors.DataFormatError` naming the file and what disagrees.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..core.base.atomic import atomic_path
from ..core.base.errors import DataFormatError

VECS_DTYPES = {"fvecs": np.float32, "ivecs": np.int32, "bvecs": np.uint8}
BIN_DTYPES = {"fbin": np.float32, "u8bin": np.uint8, "i8bin": np.int8, "ibin": np.int32}
FORMATS = tuple(VECS_DTYPES) + tuple(BIN_DTYPES)


def format_of(path: str | os.PathLike) -> str:
    """The format named by a file's extension (``.fvecs``, ``.u8bin``, ...)."""
    ext = Path(path).suffix.lstrip(".")
    if ext not in FORMATS:
        raise DataFormatError(f"{path}: unknown vector format '.{ext}'; known: {', '.join(FORMATS)}")
    return ext


# --------------------------------------------------------------------------- TEXMEX *vecs
def read_vecs(path: str | os.PathLike, fmt: str | None = None, mmap: bool = True,
              count: int | None = None, check_rows: bool = True) -> np.ndarray:
    """Read an fvecs/ivecs/bvecs file as an (n, d) array (a read-only view of a memory map).

    ``count`` reads only the first ``count`` rows (a prefix crop).
    """
    fmt = fmt or format_of(path)
    dtype = np.dtype(VECS_DTYPES[fmt])
    size = os.path.getsize(path)
    if size < 4:
        raise DataFormatError(f"{path}: {size} bytes is too small for a {fmt} file")
    d = int(np.fromfile(path, dtype="<i4", count=1)[0])
    if d <= 0:
        raise DataFormatError(f"{path}: first row declares dimension {d}")
    row_bytes = 4 + d * dtype.itemsize
    if size % row_bytes:
        raise DataFormatError(
            f"{path}: size {size} B is not a multiple of the row size {row_bytes} B for dimension {d} "
            f"(truncated file, or rows with different dimensions)")
    n = size // row_bytes
    if count is not None:
        if count > n:
            raise DataFormatError(f"{path}: asked for {count} rows, file holds {n}")
        n = count
    raw = np.memmap(path, dtype=np.uint8, mode="r", shape=(n * row_bytes,)) if mmap else \
        np.fromfile(path, dtype=np.uint8, count=n * row_bytes)
    rows = raw.reshape(n, row_bytes)
    dims = rows[:, :4].view("<i4").ravel() if check_rows else np.full(1, d)
    bad = np.flatnonzero(dims != d)
    if bad.size:
        i = int(bad[0])
        raise DataFormatError(f"{path}: row {i} has dimension {int(dims[i])}, row 0 has {d}")
    return rows[:, 4:].view(dtype.newbyteorder("<")).reshape(n, d)


def write_vecs(path: str | os.PathLike, x: np.ndarray, fmt: str | None = None) -> Path:
    fmt = fmt or format_of(path)
    x = np.ascontiguousarray(x, dtype=VECS_DTYPES[fmt])
    if x.ndim != 2:
        raise ValueError(f"expected a 2-d array, got shape {x.shape}")
    n, d = x.shape
    rows = np.empty((n, 4 + d * x.itemsize), dtype=np.uint8)
    rows[:, :4] = np.full((n, 1), d, dtype="<i4").view(np.uint8)
    rows[:, 4:] = x.view(np.uint8).reshape(n, -1)
    with atomic_path(path) as tmp:
        rows.tofile(tmp)
    return Path(path)


# --------------------------------------------------------------------------- big-ann *bin
def bin_header(path: str | os.PathLike) -> tuple[int, int]:
    size = os.path.getsize(path)
    if size < 8:
        raise DataFormatError(f"{path}: {size} bytes is too small for a big-ann header")
    n, d = (int(v) for v in np.fromfile(path, dtype="<u4", count=2))
    return n, d


def read_bin(path: str | os.PathLike, fmt: str | None = None, mmap: bool = True,
             count: int | None = None) -> np.ndarray:
    """Read an fbin/u8bin/i8bin/ibin file as an (n, d) array; checks the size against the header."""
    fmt = fmt or format_of(path)
    dtype = np.dtype(BIN_DTYPES[fmt]).newbyteorder("<")
    n, d = bin_header(path)
    expected = 8 + n * d * dtype.itemsize
    size = os.path.getsize(path)
    if size != expected:
        raise DataFormatError(
            f"{path}: header says {n} x {d} {fmt} ({expected} B) but the file has {size} B")
    if count is not None:
        if count > n:
            raise DataFormatError(f"{path}: asked for {count} rows, file holds {n}")
        n = count
    if mmap:
        return np.memmap(path, dtype=dtype, mode="r", offset=8, shape=(n, d))
    return np.fromfile(path, dtype=dtype, count=n * d, offset=8).reshape(n, d)


def write_bin(path: str | os.PathLike, x: np.ndarray, fmt: str | None = None) -> Path:
    fmt = fmt or format_of(path)
    x = np.ascontiguousarray(x, dtype=BIN_DTYPES[fmt])
    if x.ndim != 2:
        raise ValueError(f"expected a 2-d array, got shape {x.shape}")
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.array(x.shape, dtype="<u4").tofile(fh)
        x.tofile(fh)
    return Path(path)


def read_vectors(path: str | os.PathLike, fmt: str | None = None, mmap: bool = True,
                 count: int | None = None, check_rows: bool = True) -> np.ndarray:
    """Read any supported vector file (format from ``fmt`` or the extension).

    ``check_rows=False`` skips reading every row's dimension field of a *vecs file (a full scan)."""
    fmt = fmt or format_of(path)
    if fmt in VECS_DTYPES:
        return read_vecs(path, fmt, mmap=mmap, count=count, check_rows=check_rows)
    if fmt in BIN_DTYPES:
        return read_bin(path, fmt, mmap=mmap, count=count)
    raise DataFormatError(f"{path}: unknown vector format {fmt!r}; known: {', '.join(FORMATS)}")


def write_vectors(path: str | os.PathLike, x: np.ndarray, fmt: str | None = None) -> Path:
    fmt = fmt or format_of(path)
    return (write_vecs if fmt in VECS_DTYPES else write_bin)(path, x, fmt)


# --------------------------------------------------------------------------- ground truth
def read_groundtruth(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray | None]:
    """Read ground truth as (ids (n, k) int64, distances (n, k) float32 or None).

    Accepts big-ann ground-truth files (ids then distances), ``.ibin`` (ids only) and ``.ivecs``.
    """
    p = Path(path)
    if p.suffix == ".ivecs":
        return np.asarray(read_vecs(p, "ivecs"), dtype=np.int64), None
    n, k = bin_header(p)
    size = os.path.getsize(p)
    ids_only, full = 8 + n * k * 4, 8 + n * k * 8
    if size == ids_only:
        return np.asarray(read_bin(p, "ibin"), dtype=np.int64), None
    if size != full:
        raise DataFormatError(
            f"{p}: header says {n} queries x {k} neighbours ({full} B with distances, {ids_only} B "
            f"ids only) but the file has {size} B")
    ids = np.fromfile(p, dtype="<i4", count=n * k, offset=8).reshape(n, k).astype(np.int64)
    dist = np.fromfile(p, dtype="<f4", count=n * k, offset=8 + n * k * 4).reshape(n, k)
    return ids, dist


def write_groundtruth(path: str | os.PathLike, ids: np.ndarray, dist: np.ndarray | None = None) -> Path:
    """Write big-ann ground truth (ids, then distances when given)."""
    ids = np.ascontiguousarray(ids, dtype="<i4")
    n, k = ids.shape
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.array([n, k], dtype="<u4").tofile(fh)
        ids.tofile(fh)
        if dist is not None:
            np.ascontiguousarray(dist, dtype="<f4").reshape(n, k).tofile(fh)
    return Path(path)


def crop_bin_header(src_header: bytes, n: int) -> bytes:
    """The header of a prefix crop of a big-ann file: the same d, ``n`` rows."""
    _, d = np.frombuffer(src_header[:8], dtype="<u4")
    return np.array([n, d], dtype="<u4").tobytes()

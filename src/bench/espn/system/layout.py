"""ESPN-v1 embedding table layout (paper section 4.1; original-code notes, ESPN).

One record per passage: the CLS vector (128 x fp16 = 256 B) followed by the bag-of-words (BOW) token
vectors (32-d fp16, 64 B each), zero-padded to a 4 KiB or 8 KiB block, so a passage is read with one
aligned I/O. 60 BOW vectors fit in 4 KiB and 124 in 8 KiB; longer passages are truncated (and counted).
The offsets table ``{offset, io_size, n_tokens}`` per passage lives in memory (an ``.npz`` beside the
table); :func:`validate` checks it against the table file before anything is measured.

The vector widths are the paper's (section 3.1 and Table 3: ColBERTer's 128-d CLS and 32-d BOW vectors,
16-bit), declared in :data:`PAPER_INPUTS` and read through :func:`bench.core.judging.fidelity.value` at
call time (:func:`cls_dim`, :func:`bow_dim`, :func:`cls_bytes`, :func:`tok_bytes`), so every size that
follows from them (a record's bytes, its 4/8 KiB block, the table, Table 3's CLS and BOW parts) moves
with them in the sensitivity test. The table stores fp16, so the writer and the decoder refuse a width
in bytes other than 2.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ...core.base.atomic import atomic_path
from ...core.base.errors import DataFormatError
from ...core.judging import fidelity


class LayoutError(DataFormatError):
    """An embedding table whose offsets table does not match it."""

MAGIC = "ESPN-v1"
BLOCK = 4096
MAX_IO = 2 * BLOCK
BLOCK_SIZES = (4096, 8192)

CLS_WIDTH = fidelity.PaperInput(
    "CLS vector width", 128, "section 3.1: 'The CLS embeddings use 128 dimensional vectors per passage'",
    "dimensions")
BOW_WIDTH = fidelity.PaperInput(
    "BOW vector width", 32, "section 3.1: 'BOW embeddings use 32 dimensional vectors per token as in the "
    "original paper'", "dimensions")
VECTOR_BYTES = fidelity.PaperInput(
    "bytes per vector dimension", 2, "section 3.1, Table 3: 'uncompressed and unquantized 16-bit vectors'", "B")
PAPER_INPUTS = (CLS_WIDTH, BOW_WIDTH, VECTOR_BYTES)


def cls_dim() -> int:
    """The CLS vector's width (the paper's 128, :data:`CLS_WIDTH`)."""
    return int(round(fidelity.value(CLS_WIDTH)))


def bow_dim() -> int:
    """A BOW vector's width (the paper's 32, :data:`BOW_WIDTH`)."""
    return int(round(fidelity.value(BOW_WIDTH)))


def cls_bytes() -> int:
    """Bytes of a record's CLS vector (128 x 2 B = 256 B with the paper's widths)."""
    return int(round(cls_dim() * fidelity.value(VECTOR_BYTES)))


def tok_bytes() -> int:
    """Bytes of one stored BOW vector (32 x 2 B = 64 B with the paper's widths)."""
    return int(round(bow_dim() * fidelity.value(VECTOR_BYTES)))


def _fp16() -> None:
    """The table stores fp16 (2 B a dimension): the writer and the decoder refuse another width in bytes."""
    if fidelity.value(VECTOR_BYTES) != np.dtype(np.float16).itemsize:
        raise LayoutError(f"the ESPN-v1 table stores fp16; {VECTOR_BYTES.name} is {fidelity.value(VECTOR_BYTES)}")


def capacity(io_size: int) -> int:
    """BOW vectors that fit in a record of ``io_size`` bytes."""
    return (io_size - cls_bytes()) // tok_bytes()


def io_size_for(n_tokens: int, block_mode: str = "4k8k") -> int:
    if block_mode == "8k":
        return 8192
    return 4096 if cls_bytes() + n_tokens * tok_bytes() <= 4096 else 8192


def io_sizes_for(n_tokens: np.ndarray, block_mode: str = "4k8k") -> np.ndarray:
    """:func:`io_size_for` of many records at once."""
    n = np.asarray(n_tokens, dtype=np.int64)
    if block_mode == "8k":
        return np.full(n.shape, 8192, np.int64)
    return np.where(cls_bytes() + n * tok_bytes() <= 4096, 4096, 8192)


@dataclass
class Offsets:
    """The in-memory offsets table of an ESPN-v1 table."""

    offset: np.ndarray  # int64, bytes
    io_size: np.ndarray  # int32, 4096 or 8192
    n_tokens: np.ndarray  # int32, BOW vectors stored (after truncation)
    file_size: int
    n_truncated: int = 0

    def __len__(self) -> int:
        return int(self.offset.shape[0])

    @property
    def table_bytes(self) -> int:
        return int(self.file_size)

    @property
    def mean_io_size(self) -> float:
        return float(self.io_size.mean()) if len(self) else 0.0


def offsets_path(table: str | os.PathLike) -> Path:
    return Path(f"{table}.offsets.npz")


class TableWriter:
    """Streams records into ``path`` (written to a temporary name, renamed on :meth:`close`)."""

    def __init__(self, path: str | os.PathLike, block_mode: str = "4k8k"):
        if block_mode not in ("4k8k", "8k"):
            raise LayoutError(f"block_mode must be '4k8k' or '8k', got {block_mode!r}")
        self.path = Path(path)
        self.block_mode = block_mode
        self._ctx = atomic_path(self.path)
        self._tmp = self._ctx.__enter__()
        self._fh = open(self._tmp, "wb")
        self._pos = 0
        self._off: list[np.ndarray] = []
        self._io: list[np.ndarray] = []
        self._nt: list[np.ndarray] = []
        self.n_truncated = 0

    def add(self, cls: np.ndarray, bows: Sequence[np.ndarray]) -> None:
        """Append records: ``cls`` [n, 128], ``bows`` n arrays [t_i, 32] (t_i may be 0: an empty passage)."""
        _fp16()
        cls = np.asarray(cls, dtype=np.float16)
        cb, tb, bd = cls_bytes(), tok_bytes(), bow_dim()
        if cls.ndim != 2 or cls.shape[1] != cls_dim() or cls.shape[0] != len(bows):
            raise LayoutError(f"cls must be [n, {cls_dim()}] with one BOW matrix per row, got {cls.shape} "
                              f"and {len(bows)} BOW matrices")
        n = cls.shape[0]
        nt = np.empty(n, np.int32)
        io = np.empty(n, np.int32)
        for i, b in enumerate(bows):
            t = int(np.asarray(b).shape[0]) if np.asarray(b).size else 0
            size = io_size_for(t, self.block_mode)
            keep = min(t, capacity(size))
            self.n_truncated += int(keep < t)
            nt[i], io[i] = keep, size
        buf = np.zeros(int(io.sum()), np.uint8)
        starts = np.concatenate([[0], np.cumsum(io[:-1], dtype=np.int64)]) if n else np.zeros(0, np.int64)
        for i, b in enumerate(bows):
            s = int(starts[i])
            buf[s:s + cb] = cls[i].view(np.uint8)
            if nt[i]:
                bb = np.ascontiguousarray(np.asarray(b, dtype=np.float16)[: nt[i]])
                if bb.shape[1] != bd:
                    raise LayoutError(f"BOW vectors must be {bd}-d, got {bb.shape[1]}")
                buf[s + cb:s + cb + nt[i] * tb] = bb.reshape(-1).view(np.uint8)
        self._fh.write(buf.tobytes())
        self._off.append(starts + self._pos)
        self._io.append(io)
        self._nt.append(nt)
        self._pos += int(io.sum())

    def close(self) -> Offsets:
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        self._ctx.__exit__(None, None, None)
        off = Offsets(np.concatenate(self._off) if self._off else np.zeros(0, np.int64),
                      np.concatenate(self._io) if self._io else np.zeros(0, np.int32),
                      np.concatenate(self._nt) if self._nt else np.zeros(0, np.int32),
                      file_size=self._pos, n_truncated=self.n_truncated)
        save_offsets(self.path, off)
        return off


def write_table(path: str | os.PathLike, cls: np.ndarray, bows: Sequence[np.ndarray],
                block_mode: str = "4k8k") -> Offsets:
    w = TableWriter(path, block_mode)
    w.add(cls, bows)
    return w.close()


def save_offsets(table: str | os.PathLike, off: Offsets) -> Path:
    p = offsets_path(table)
    meta = json.dumps({"magic": MAGIC, "n_docs": len(off), "file_size": int(off.file_size),
                       "n_truncated": int(off.n_truncated), "block": BLOCK})
    with atomic_path(p) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, offset=off.offset.astype(np.int64), io_size=off.io_size.astype(np.int32),
                     n_tokens=off.n_tokens.astype(np.int32), meta=np.array(meta))
    return p


def load_offsets(table: str | os.PathLike, check: bool = True) -> Offsets:
    p = offsets_path(table)
    try:
        with np.load(p) as z:
            meta = json.loads(str(z["meta"]))
            off = Offsets(z["offset"], z["io_size"], z["n_tokens"], int(meta["file_size"]),
                          int(meta.get("n_truncated", 0)))
    except FileNotFoundError:
        raise LayoutError(f"{p}: offsets table not found (table {table})") from None
    except (KeyError, ValueError, OSError) as exc:
        raise LayoutError(f"{p}: not an ESPN-v1 offsets table ({exc})") from None
    if meta.get("magic") != MAGIC:
        raise LayoutError(f"{p}: magic {meta.get('magic')!r}, expected {MAGIC!r}")
    if int(meta.get("n_docs", -1)) != len(off):
        raise LayoutError(f"{p}: header says {meta.get('n_docs')} passages, arrays hold {len(off)}")
    if check:
        validate(table, off)
    return off


def validate(table: str | os.PathLike, off: Offsets) -> None:
    """Raise :class:`LayoutError` unless the offsets table describes ``table`` exactly."""
    n = len(off)
    if not (off.io_size.shape == off.n_tokens.shape == (n,)):
        raise LayoutError(f"{table}: offsets arrays disagree in length "
                          f"({n}, {off.io_size.shape}, {off.n_tokens.shape})")
    try:
        actual = os.path.getsize(table)
    except FileNotFoundError:
        raise LayoutError(f"{table}: embedding table not found") from None
    if actual != off.file_size:
        raise LayoutError(f"{table}: file is {actual} bytes but its offsets table describes "
                          f"{off.file_size} bytes")
    if n == 0:
        return
    if np.any(off.offset % BLOCK):
        i = int(np.flatnonzero(off.offset % BLOCK)[0])
        raise LayoutError(f"{table}: offset of passage {i} ({off.offset[i]}) is not {BLOCK}-aligned")
    bad = ~np.isin(off.io_size, BLOCK_SIZES)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise LayoutError(f"{table}: io_size of passage {i} is {off.io_size[i]}, not one of {BLOCK_SIZES}")
    over = (off.n_tokens < 0) | (cls_bytes() + off.n_tokens.astype(np.int64) * tok_bytes() > off.io_size)
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise LayoutError(f"{table}: passage {i} claims {off.n_tokens[i]} BOW vectors, more than its "
                          f"{off.io_size[i]}-byte record holds")
    ends = off.offset + off.io_size
    if off.offset[0] < 0 or np.any(off.offset[1:] < ends[:-1]):
        raise LayoutError(f"{table}: records overlap or are out of order in the offsets table")
    if int(ends.max()) > actual:
        raise LayoutError(f"{table}: a record ends at byte {int(ends.max())}, past the end of the file "
                          f"({actual} bytes)")


def decode(blocks: np.ndarray, n_tokens: np.ndarray, io_size: np.ndarray | None = None,
           max_tokens: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Records as read (``blocks`` [n, >=io] uint8, one row per record) -> CLS [n,128] fp16,
    BOW [n, T, 32] fp16 zero-padded, lengths [n]."""
    _fp16()
    n = blocks.shape[0]
    nt = np.asarray(n_tokens, dtype=np.int64)
    t = int(nt.max()) if n else 0
    if max_tokens is not None:
        t = min(t, max_tokens)
    cb, tb = cls_bytes(), tok_bytes()
    cls = np.ascontiguousarray(blocks[:, :cb]).view(np.float16).reshape(n, cls_dim())
    bow = np.ascontiguousarray(blocks[:, cb:cb + t * tb]).view(np.float16)
    bow = bow.reshape(n, t, bow_dim())
    lengths = np.minimum(nt, t).astype(np.int32)
    # Records are zero-padded up to their io_size; bytes past io_size in a row are not the record's.
    cap4 = capacity(BLOCK)
    if t > cap4:
        short = (np.asarray(io_size) <= BLOCK) if io_size is not None else (lengths <= cap4)
        if short.any():
            bow[short, cap4:] = 0
    return cls, bow, lengths


def iter_chunks(n: int, size: int) -> Iterable[tuple[int, int]]:
    for s in range(0, n, size):
        yield s, min(n, s + size)

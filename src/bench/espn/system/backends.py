"""Embedding access back ends behind one interface (paper sections 2.3, 4.1 and 5.3).

- ``memory``: the whole table in process memory (the "fully cached" reference);
- ``mmap``: the table memory-mapped with ``MADV_RANDOM`` (the paper's mmap baseline);
- ``direct``: ``O_DIRECT`` reads, many in flight through a thread pool of ``preadv`` calls (the CPU
  stand-in for GPUDirect Storage batch reads; io_uring from Python cannot do O_DIRECT, see the
  machine notes);
- ``gds``: GPUDirect Storage through kvikio, only where kvikio and CUDA are present;
- ``vm_swap``: the table in anonymous memory under the memory cap, so the kernel swaps (only where
  the machine has swap; elsewhere recorded as not run).

A ``direct`` store may read in the background (``submit``, the prefetcher's reads) through another
engine than on the critical path (``background_engine``; the e2e runs use native AIO there).

``read(idx)`` returns decoded records (CLS [n,128] fp16, BOW [n,t,32] fp16, lengths); ``submit(idx)``
starts the same read asynchronously and returns a handle whose ``result()`` waits for it.
"""
from __future__ import annotations

import concurrent.futures as cf
import mmap
import os
import threading
from typing import Callable

import numpy as np

from ...core.base.errors import BenchError
from . import layout


class BackendUnavailable(BenchError):
    """A back end (GDS/kvikio, swap, cgroup) that this machine cannot run."""

Decoded = tuple  # (cls, bow, lengths)


def evict_page_cache(path: str | os.PathLike) -> None:
    """Drop a file's pages from the page cache (``posix_fadvise(DONTNEED)``), making the next read cold."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def resident_bytes(path: str | os.PathLike) -> int:
    """Bytes of ``path`` in the page cache now (``mincore`` on a fresh mapping)."""
    import ctypes

    size = os.path.getsize(path)
    if size == 0:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap failed")
        try:
            page = mmap.PAGESIZE
            vec = (ctypes.c_ubyte * ((size + page - 1) // page))()
            if libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), "mincore failed")
            return int(np.frombuffer(vec, np.uint8).__and__(1).sum()) * page
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def _detached(dec: Decoded, buf: np.ndarray) -> Decoded:
    """The decoded arrays, copied where they are views of ``buf`` (a read buffer the next read reuses)."""
    return tuple(a.copy() if np.may_share_memory(a, buf) else a for a in dec)


class EmbeddingStore:
    """Common interface. Subclasses fill ``_gather(idx, out)`` (out: [n, 8192] uint8 rows)."""

    name = "base"
    source = "measured"

    def __init__(self, table: str | os.PathLike, offsets: layout.Offsets | None = None):
        self.table = str(table)
        self.offsets = offsets if offsets is not None else layout.load_offsets(table)
        self._pool: cf.ThreadPoolExecutor | None = None
        self._scratch = threading.local()

    # -- reading
    def read_raw(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        out = np.empty((idx.shape[0], layout.MAX_IO), np.uint8)
        self._gather(idx, out)
        return out

    def read(self, idx: np.ndarray) -> Decoded:
        """Gather into a per-thread scratch buffer reused across reads (a fresh [n, 8 KiB] array per
        read costs a page fault per 4 KiB, ~2-4 ms per 1000 records on the VM, which would be charged
        to the in-memory reference), then decode; decode copies what it keeps."""
        idx = np.asarray(idx, dtype=np.int64)
        n = idx.shape[0]
        scratch = getattr(self._scratch, "buf", None)
        if scratch is None or scratch.shape[0] < n:
            scratch = self._scratch.buf = np.empty((max(n, 1), layout.MAX_IO), np.uint8)
        raw = scratch[:n]
        self._gather(idx, raw)
        return _detached(layout.decode(raw, self.offsets.n_tokens[idx], self.offsets.io_size[idx]), scratch)

    def submit(self, idx: np.ndarray, then: Callable | None = None):
        """Start ``read(idx)`` in a background thread; ``then(decoded)`` runs there afterwards
        (used for early re-ranking). Returns a future."""
        if self._pool is None:
            self._pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{self.name}-prefetch")
        idx = np.asarray(idx, dtype=np.int64).copy()

        def job():
            dec = self.read(idx)
            return then(dec) if then is not None else dec

        return self._pool.submit(job)

    def _gather(self, idx: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def cold(self) -> None:
        """Make the next access cold (evict the table from the page cache)."""
        evict_page_cache(self.table)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _block_gather(self, arr: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
        """Vectorised record gather from a [nblocks, 4096] view (memory and mmap)."""
        first = self.offsets.offset[idx] // layout.BLOCK
        out[:, : layout.BLOCK] = arr[first]
        two = self.offsets.io_size[idx] > layout.BLOCK
        if two.any():
            out[two, layout.BLOCK:] = arr[first[two] + 1]


class MemoryStore(EmbeddingStore):
    """The whole table read into anonymous memory (fully cached reference)."""

    name = "memory"

    def __init__(self, table, offsets=None):
        super().__init__(table, offsets)
        with open(self.table, "rb") as fh:
            data = np.frombuffer(fh.read(), np.uint8)
        self._arr = data.reshape(-1, layout.BLOCK) if data.size else data.reshape(0, layout.BLOCK)

    def _gather(self, idx, out):
        self._block_gather(self._arr, idx, out)

    def cold(self) -> None:  # in memory: nothing to evict
        pass


class VMSwapStore(MemoryStore):
    """The table in anonymous memory, under a memory cap that makes the kernel swap it (needs swap)."""

    name = "vm_swap"

    def __init__(self, table, offsets=None):
        if not swap_available():
            raise BackendUnavailable("virtual memory + swap needs swap space; this machine has none")
        super().__init__(table, offsets)


def swap_available() -> bool:
    try:
        with open("/proc/swaps") as fh:
            return len(fh.read().strip().splitlines()) > 1
    except OSError:
        return False


class MmapStore(EmbeddingStore):
    """The table memory-mapped with ``MADV_RANDOM`` (page faults bring 4 KiB pages on demand)."""

    name = "mmap"

    def __init__(self, table, offsets=None):
        super().__init__(table, offsets)
        self._fd = os.open(self.table, os.O_RDONLY)
        size = os.path.getsize(self.table)
        self._mm = mmap.mmap(self._fd, size, prot=mmap.PROT_READ) if size else None
        if self._mm is not None and hasattr(mmap, "MADV_RANDOM"):
            self._mm.madvise(mmap.MADV_RANDOM)
        self._arr = (np.frombuffer(self._mm, np.uint8).reshape(-1, layout.BLOCK) if self._mm is not None
                     else np.zeros((0, layout.BLOCK), np.uint8))

    def _gather(self, idx, out):
        self._block_gather(self._arr, idx, out)

    def cold(self) -> None:
        if self._mm is not None and hasattr(mmap, "MADV_DONTNEED"):
            self._mm.madvise(mmap.MADV_DONTNEED)
        super().cold()

    def close(self) -> None:
        super().close()
        self._arr = None
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:  # a view still alive; the mapping goes with the process
                pass
        os.close(self._fd)


class _AlignedBuffers:
    """Page-aligned anonymous buffers (``mmap(-1, n)``) reused across reads, one per in-flight read."""

    def __init__(self):
        self._free: list[mmap.mmap] = []
        self._lock = threading.Lock()

    def get(self, nbytes: int) -> mmap.mmap:
        with self._lock:
            for i, b in enumerate(self._free):
                if len(b) >= nbytes:
                    return self._free.pop(i)
        return mmap.mmap(-1, max(nbytes, mmap.PAGESIZE))

    def put(self, b: mmap.mmap) -> None:
        with self._lock:
            self._free.append(b)


def pick_engine(engine: str) -> str:
    """The O_DIRECT engine ``engine`` (auto, aio, threadpool) resolves to on this machine."""
    if engine not in ("auto", "aio", "threadpool"):
        raise ValueError(f"I/O engine must be auto, aio or threadpool, got {engine!r}")
    # auto = the thread pool: on the project's VM it reached more IOPS than native AIO driven from
    # Python (both are measured side by side by `bench espn iops`)
    if engine in ("threadpool", "auto"):
        return "threadpool"
    from . import aio

    if not aio.available():
        raise BackendUnavailable("Linux native AIO (io_setup) is not available here")
    return "aio"


class DirectStore(EmbeddingStore):
    """``O_DIRECT`` reads with ``depth`` reads in flight: a pool of ``depth`` threads each issuing
    ``preadv`` over its share (the GIL is released during each read; the default), or Linux native
    AIO (one ``io_submit`` for a batch, refilled as ``io_getevents`` returns)."""

    name = "direct"

    def __init__(self, table, offsets=None, depth: int = 32, engine: str = "auto",
                 background_engine: str | None = None):
        super().__init__(table, offsets)
        if depth < 1:
            raise ValueError(f"queue depth must be >= 1, got {depth}")
        self.depth = depth
        self.engine = pick_engine(engine)
        self.background_engine = None if background_engine in (None, "same") else pick_engine(background_engine)
        self._local = threading.local()
        try:
            self._fd = os.open(self.table, os.O_RDONLY | os.O_DIRECT)
        except OSError as exc:
            raise BackendUnavailable(f"{self.table}: O_DIRECT open failed ({exc}); the file system "
                                     "may not support direct I/O (tmpfs does not)") from None
        self._io = cf.ThreadPoolExecutor(max_workers=depth, thread_name_prefix="odirect")
        self._bufs = _AlignedBuffers()

    def read_raw(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        n = idx.shape[0]
        buf = self._bufs.get(n * layout.MAX_IO)
        try:
            out = np.frombuffer(buf, np.uint8, count=n * layout.MAX_IO).reshape(n, layout.MAX_IO)
            self.read_into(self.offsets.offset[idx], self.offsets.io_size[idx], buf)
            return out.copy()
        finally:
            del out
            self._bufs.put(buf)

    def read(self, idx: np.ndarray) -> Decoded:
        """Decode straight from the aligned read buffer (decode copies what it keeps), sparing the
        intermediate [n, 8 KiB] copy of ``read_raw``."""
        idx = np.asarray(idx, dtype=np.int64)
        n = idx.shape[0]
        buf = self._bufs.get(max(n, 1) * layout.MAX_IO)
        raw = None
        try:
            raw = np.frombuffer(buf, np.uint8, count=n * layout.MAX_IO).reshape(n, layout.MAX_IO)
            self.read_into(self.offsets.offset[idx], self.offsets.io_size[idx], buf)
            return _detached(layout.decode(raw, self.offsets.n_tokens[idx], self.offsets.io_size[idx]), raw)
        finally:
            del raw
            self._bufs.put(buf)

    def read_into(self, offs: np.ndarray, sizes: np.ndarray, buf: mmap.mmap, stride: int = layout.MAX_IO) -> int:
        """Read record ``i`` (``sizes[i]`` bytes at ``offs[i]``) into ``buf[i*stride:]``; returns bytes read."""
        n = len(offs)
        if n == 0:
            return 0
        engine = getattr(self._local, "engine", None) or self.engine
        if engine == "aio" and self.depth > 1:  # at depth 1 a plain preadv loop is cheaper
            ctx = getattr(self._local, "aio", None)
            if ctx is None:
                from . import aio

                ctx = self._local.aio = aio.AIOContext(self.depth)
            arr = np.frombuffer(buf, np.uint8)
            try:
                return ctx.read_batch(self._fd, arr.ctypes.data, np.asarray(offs, np.int64),
                                      np.asarray(sizes, np.int64), stride)
            finally:
                del arr
        mv = memoryview(buf)
        offs = [int(o) for o in offs]
        sizes = [int(s) for s in sizes]
        fd = self._fd
        k = min(self.depth, n)

        def worker(start: int) -> int:
            got = 0
            for i in range(start, n, k):
                s = sizes[i]
                r = os.preadv(fd, [mv[i * stride:i * stride + s]], offs[i])
                if r != s:
                    raise OSError(f"short O_DIRECT read: {r} of {s} bytes at offset {offs[i]}")
                got += r
            return got

        if k == 1:
            total = worker(0)
        else:
            total = sum(f.result() for f in [self._io.submit(worker, j) for j in range(k)])
        mv.release()
        return total

    def submit(self, idx: np.ndarray, then: Callable | None = None):
        """Background reads (the prefetcher's) through ``background_engine`` when set: native AIO
        waits in the kernel on one thread instead of waking a pool of Python threads, leaving the
        CPU to the ANN search and MaxSim running beside it."""
        if self.background_engine is None:
            return super().submit(idx, then)
        if self._pool is None:
            self._pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{self.name}-prefetch")
        idx = np.asarray(idx, dtype=np.int64).copy()

        def job():
            self._local.engine = self.background_engine
            dec = self.read(idx)
            return then(dec) if then is not None else dec

        return self._pool.submit(job)

    def cold(self) -> None:  # O_DIRECT bypasses the page cache; evict anyway for mixed runs
        super().cold()

    def close(self) -> None:
        super().close()
        self._io.shutdown(wait=True)
        os.close(self._fd)


class GDSStore(EmbeddingStore):  # pragma: no cover - needs kvikio + CUDA
    """GPUDirect Storage reads through kvikio into GPU memory, then copied back for decoding."""

    name = "gds"

    def __init__(self, table, offsets=None):
        if not gds_available():
            raise BackendUnavailable("GPUDirect Storage needs kvikio and a CUDA device")
        super().__init__(table, offsets)
        import kvikio

        self._f = kvikio.CuFile(self.table, "r")

    def _gather(self, idx, out):
        import cupy

        dev = cupy.empty((idx.shape[0], layout.MAX_IO), cupy.uint8)
        futs = [self._f.pread(dev[i, : int(self.offsets.io_size[j])], int(self.offsets.io_size[j]),
                              int(self.offsets.offset[j])) for i, j in enumerate(idx)]
        for f in futs:
            f.get()
        out[:] = cupy.asnumpy(dev)

    def close(self):
        super().close()
        self._f.close()


def gds_available() -> bool:
    try:
        import kvikio  # noqa: F401
    except ImportError:
        return False
    from ...core.machine import devices

    return devices.cuda_available()


BACKENDS = {"memory": MemoryStore, "mmap": MmapStore, "direct": DirectStore, "gds": GDSStore,
            "vm_swap": VMSwapStore}


def open_store(kind: str, table, offsets=None, depth: int = 32, engine: str = "auto",
               background_engine: str | None = None) -> EmbeddingStore:
    if kind not in BACKENDS:
        raise ValueError(f"unknown back end {kind!r}; one of {sorted(BACKENDS)}")
    if kind == "direct":
        return DirectStore(table, offsets, depth=depth, engine=engine, background_engine=background_engine)
    return BACKENDS[kind](table, offsets)


def random_read_iops(table, n_reads: int, depth: int, seed: int, block: int = 4096,
                     engine: str = "auto") -> tuple[float, float]:
    """Our O_DIRECT reader on ``table``: ``n_reads`` random ``block``-byte reads at queue depth
    ``depth`` (the same workload as fio's randread). Returns (seconds, IOPS)."""
    import time

    size = os.path.getsize(table)
    rng = np.random.default_rng(seed)
    offs = rng.integers(0, size // block, size=n_reads, dtype=np.int64) * block
    st = DirectStore.__new__(DirectStore)
    st.table, st.depth = str(table), depth
    st.engine = pick_engine(engine)
    st._local = threading.local()
    st._fd = os.open(st.table, os.O_RDONLY | os.O_DIRECT)
    st._io = cf.ThreadPoolExecutor(max_workers=depth, thread_name_prefix="odirect")
    st._pool = None
    buf = mmap.mmap(-1, n_reads * block)
    # fault the destination in before timing, as fio's preallocated buffers are: otherwise every O_DIRECT
    # read first faults in (and zeroes) a fresh anonymous page, which measured ~20% of the IOPS here
    np.frombuffer(buf, np.uint8)[::mmap.PAGESIZE] = 0
    try:
        st.read_into(offs[: min(n_reads, 256)], np.full(min(n_reads, 256), block), buf, stride=block)  # warm threads
        t0 = time.perf_counter()
        st.read_into(offs, np.full(n_reads, block), buf, stride=block)
        dt = time.perf_counter() - t0
    finally:
        st._io.shutdown(wait=True)
        os.close(st._fd)
        buf.close()
    return dt, n_reads / dt

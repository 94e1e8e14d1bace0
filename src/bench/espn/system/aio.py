"""Linux native AIO (``io_submit``/``io_getevents``) for O_DIRECT reads, through raw syscalls (ctypes).

The CPU stand-in for GPUDirect Storage's batch API (paper section 4.1): a whole batch of reads is
described in one numpy array of ``struct iocb`` and submitted with one syscall, keeping ``depth`` reads
in flight and refilling as completions arrive, so the per-read Python overhead of a thread pool is gone
(fio's ``libaio`` engine does the same). x86-64 and aarch64 syscall numbers; unavailable elsewhere.
"""
from __future__ import annotations

import ctypes
import os
import platform

import numpy as np

_NR = {"x86_64": {"io_setup": 206, "io_destroy": 207, "io_getevents": 208, "io_submit": 209},
       "aarch64": {"io_setup": 0, "io_destroy": 1, "io_submit": 2, "io_getevents": 4}}

IOCB = np.dtype([("data", "<u8"), ("key", "<u4"), ("rw_flags", "<u4"), ("opcode", "<u2"), ("reqprio", "<i2"),
                 ("fildes", "<u4"), ("buf", "<u8"), ("nbytes", "<u8"), ("offset", "<i8"), ("reserved2", "<u8"),
                 ("flags", "<u4"), ("resfd", "<u4")])
EVENT = np.dtype([("data", "<u8"), ("obj", "<u8"), ("res", "<i8"), ("res2", "<i8")])
assert IOCB.itemsize == 64 and EVENT.itemsize == 32

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.syscall.argtypes = None


def _nr(name: str) -> int:
    arch = platform.machine()
    if arch not in _NR:
        raise OSError(f"native AIO syscalls unknown on {arch}")
    return _NR[arch][name]


class AIOContext:
    """One kernel AIO context with room for ``depth`` reads in flight."""

    def __init__(self, depth: int):
        self.depth = depth
        self._ctx = ctypes.c_ulong(0)
        r = _libc.syscall(ctypes.c_long(_nr("io_setup")), ctypes.c_long(depth), ctypes.byref(self._ctx))
        if r != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"io_setup failed: {os.strerror(e)}")
        self._events = np.zeros(depth, EVENT)

    def read_batch(self, fd: int, buf_addr: int, offs: np.ndarray, sizes: np.ndarray, stride: int) -> int:
        """Read ``sizes[i]`` bytes at ``offs[i]`` into ``buf_addr + i*stride`` for all i; returns bytes read."""
        n = len(offs)
        if n == 0:
            return 0
        cbs = np.zeros(n, IOCB)
        cbs["data"] = np.arange(n)
        cbs["opcode"] = 0  # IOCB_CMD_PREAD
        cbs["fildes"] = fd
        cbs["buf"] = buf_addr + np.arange(n, dtype=np.uint64) * np.uint64(stride)
        cbs["nbytes"] = sizes
        cbs["offset"] = offs
        ptrs = (cbs.ctypes.data + np.arange(n, dtype=np.uint64) * np.uint64(IOCB.itemsize)).astype(np.uint64)
        sub, done, inflight = 0, 0, 0
        ev = self._events
        nr_submit, nr_get = _nr("io_submit"), _nr("io_getevents")
        ctx, pbase = self._ctx, int(ptrs.ctypes.data)
        evp = ctypes.c_void_p(ev.ctypes.data)
        results = []
        while done < n:
            want = min(self.depth - inflight, n - sub)
            if want > 0:
                r = _libc.syscall(nr_submit, ctx, want, ctypes.c_void_p(pbase + sub * 8))
                if r < 0:
                    e = ctypes.get_errno()
                    if e != 11:  # EAGAIN: wait for completions first
                        raise OSError(e, f"io_submit failed: {os.strerror(e)}")
                    r = 0
                sub += r
                inflight += r
            # wait for a quarter of the queue (at least one) per call: fewer wake-ups, queue stays full
            min_nr = max(1, min(inflight, self.depth // 4))
            got = _libc.syscall(nr_get, ctx, min_nr, self.depth, evp, None)
            if got < 0:
                e = ctypes.get_errno()
                if e == 4:  # EINTR
                    continue
                raise OSError(e, f"io_getevents failed: {os.strerror(e)}")
            results.append(ev[:got].copy())
            done += got
            inflight -= got
        allev = np.concatenate(results)
        res = allev["res"]
        want_sizes = sizes[allev["data"].astype(np.int64)]
        if np.any(res != want_sizes):
            bad = int(np.flatnonzero(res != want_sizes)[0])
            raise OSError(f"short or failed O_DIRECT read: result {int(res[bad])} for {int(want_sizes[bad])} bytes")
        total = int(res.sum())
        return total

    def close(self) -> None:
        if self._ctx.value:
            _libc.syscall(ctypes.c_long(_nr("io_destroy")), self._ctx)
            self._ctx = ctypes.c_ulong(0)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def available() -> bool:
    try:
        AIOContext(1).close()
        return True
    except OSError:
        return False

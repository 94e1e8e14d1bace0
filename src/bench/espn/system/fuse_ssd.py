"""A slower SSD emulated by per-read latency, the device's queue depth kept (for ESPN's end-to-end runs,
paper sections 2.3 and 5.3: an SSD serves many reads at once, and ESPN's batched, prefetched reads
exploit that where mmap's serial page faults cannot).

A read-only, single-directory FUSE pass-through that speaks the kernel's FUSE protocol directly on
``/dev/fuse`` (no libfuse): this process opens ``/dev/fuse`` and mounts it (``mount(2)`` with
``fd=N,rootmode=40000,...``); a server process (``python -m bench.espn.system.fuse_ssd``) runs
``threads`` worker threads, each taking one request at a time from the device, so up to ``threads``
reads are in flight: the emulated device's queue depth. Each READ waits until its deadline (the time
the request arrived plus the current wait) and then reads the backing file with ``O_DIRECT`` (the real
disk's own latency comes on top, and nothing of the backing file is cached outside the reader's memory
cgroup).

The device states what it adds to a read: ``latency_s`` (the profile's ``latencies_us``, a number this
harness chose: the paper names no per-read latency for its SSD). The pass-through's own cost (the
kernel's round trip to the server, the server's Python) and a sleep's overshoot come on top of any wait,
so a wait of ``latency_s`` added far more (a "+100 us" device read at 290-325 us against the disk's
55-65 us). :meth:`LatencyDevice.calibrate` therefore measures, on the mounted device, the median QD1
read against the backing disk's (interleaved, 4 KiB, O_DIRECT) and sets the wait (shared with the server
processes through a small mapped file) until the measured difference is the stated latency, within
:data:`CALIBRATION_TOL`; where the pass-through's own cost already exceeds it, the wait is 0 and the
device says so. What it measured is in :meth:`LatencyDevice.describe` (``ssd_added_us`` and the rest),
so every record says what the device added, not only what it was asked to. The server's threads ask for
a timer slack of 1 ns (``prctl``), so a short wait does not overshoot by the default 50 us.

- Opens with ``O_DIRECT`` get ``FOPEN_DIRECT_IO`` (every read goes to the server, bypassing the
  cache); other opens are page-cache backed (``FOPEN_KEEP_CACHE``: a new open keeps what is cached), so ``mmap`` page faults go through the kernel's page
  cache (charged to the faulting process's memory cgroup) and each miss is one READ of a page
  (``max_readahead`` is set in INIT and recorded; ``MADV_RANDOM`` turns readahead off anyway).
- ``FUSE_ASYNC_DIO`` lets native AIO keep several direct reads in flight; ``max_background`` is
  the thread count. The threads are spread over a few forked processes (``procs``), so one
  interpreter lock does not cap the device's parallelism.

:class:`LatencyDevice` mounts and always unmounts (``umount2(MNT_DETACH)``, on exit, on error and at
interpreter exit). :func:`available` says why it cannot run here (no ``/dev/fuse``, not root).
"""
from __future__ import annotations

import argparse
import atexit
import ctypes
import errno
import mmap
import os
import select
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

NEEDS = ("a FUSE-capable kernel with /dev/fuse (modprobe fuse) and root; no libfuse is needed "
         "(the pass-through speaks the kernel protocol itself)")

# --- the kernel ABI (include/uapi/linux/fuse.h) ---------------------------------------------------------
IN_HDR = struct.Struct("<IIQQIIIHH")       # len opcode unique nodeid uid gid pid total_extlen padding
OUT_HDR = struct.Struct("<IiQ")            # len error unique
ATTR = struct.Struct("<QQQQQQIIIIIIIIII")  # ino size blocks atime mtime ctime *nsec mode nlink uid gid rdev blksize flags
ENTRY = struct.Struct("<QQQQII")           # nodeid generation entry_valid attr_valid *_nsec
ATTR_OUT = struct.Struct("<QII")           # attr_valid attr_valid_nsec dummy
OPEN_IN = struct.Struct("<II")             # flags open_flags
OPEN_OUT = struct.Struct("<QIi")           # fh open_flags backing_id
READ_IN = struct.Struct("<QQIIQII")        # fh offset size read_flags lock_owner flags padding
INIT_IN = struct.Struct("<IIII")           # major minor max_readahead flags
INIT_OUT = struct.Struct("<IIIIHHIIHHI28x")  # ... max_background congestion max_write time_gran max_pages map_alignment flags2
KSTATFS = struct.Struct("<QQQQQIIII24x")
DIRENT = struct.Struct("<QQII")

LOOKUP, FORGET, GETATTR, SETATTR = 1, 2, 3, 4
OPEN, READ, STATFS, RELEASE, FSYNC, FLUSH, INIT = 14, 15, 17, 18, 20, 25, 26
OPENDIR, READDIR, RELEASEDIR, ACCESS, INTERRUPT, DESTROY, BATCH_FORGET = 27, 28, 29, 34, 36, 38, 42
WRITES = {5, 6, 8, 9, 10, 11, 12, 13, 16, 21, 24, 35, 43, 45, 47, 51}
NO_REPLY = {FORGET, INTERRUPT, BATCH_FORGET}

FUSE_ASYNC_READ, FUSE_ASYNC_DIO, FUSE_PARALLEL_DIROPS, FUSE_MAX_PAGES = 1 << 0, 1 << 15, 1 << 18, 1 << 22
FOPEN_DIRECT_IO, FOPEN_KEEP_CACHE = 1 << 0, 1 << 1
MAX_PAGES = 256          # 1 MiB per request: no record read is split into several
READ_LIMIT = MAX_PAGES * mmap.PAGESIZE
BUF = READ_LIMIT + 2 * mmap.PAGESIZE
VALID = 3600             # seconds the kernel may cache entries and attributes (the files do not change)
MS_RDONLY, MS_NOSUID, MS_NODEV, MNT_DETACH = 1, 2, 4, 2
ALIGN = 4096
PR_SET_TIMERSLACK = 29
DELAY = struct.Struct("<d")   # the current wait in seconds, in the mapped delay file the server reads per READ
CALIBRATION_READS = 300       # 4 KiB QD1 reads per round on the device and as many on the disk, interleaved
CALIBRATION_ROUNDS = 6        # rounds at most
CALIBRATION_TOL = (0.1, 10e-6)   # done when |measured added - stated| <= max(10% of stated, 10 us)


def available() -> tuple[bool, str]:
    """(True, "") where a latency device can be mounted here, else (False, what is missing)."""
    if not sys.platform.startswith("linux"):
        return False, "needs Linux with FUSE"
    if not os.path.exists("/dev/fuse"):
        return False, f"no /dev/fuse; needs {NEEDS}"
    if os.geteuid() != 0:
        return False, f"not root (mounting FUSE without fusermount3 needs root); needs {NEEDS}"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return False, "/dev/fuse is not readable and writable here"
    return True, ""


def _libc():
    lib = ctypes.CDLL(None, use_errno=True)
    lib.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
    lib.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return lib


def umount(path: str | os.PathLike) -> bool:
    """``umount2(path, MNT_DETACH)``; True if it was mounted and is now detached."""
    rc = _libc().umount2(os.fsencode(str(path)), MNT_DETACH)
    return rc == 0


def _fine_timer_slack() -> None:
    """Ask for a 1 ns timer slack on this thread (``prctl(PR_SET_TIMERSLACK)``), so a wait of tens of
    microseconds does not overshoot by the default 50 us; ignored where the call is unavailable."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(1), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _map_delay(path: str) -> mmap.mmap:
    """The delay file mapped (shared with the process that calibrates the device)."""
    with open(path, "r+b") as fh:
        return mmap.mmap(fh.fileno(), DELAY.size)


# --- the server (in its own process) ------------------------------------------------------------------
class Server:
    """The pass-through: ``backing`` (a directory; its regular files, read only) served on the FUSE
    device ``fd`` by ``threads`` threads, each READ delayed by ``latency_s``."""

    def __init__(self, fd: int, backing: str, latency_s: float, threads: int, max_readahead: int,
                 delay_file: str | None = None):
        self.fd, self.latency, self.threads, self.readahead = fd, float(latency_s), int(threads), int(max_readahead)
        self.delay_file = delay_file
        self._delay = _map_delay(delay_file) if delay_file else None
        self.root = Path(backing)
        names = sorted(p.name for p in self.root.iterdir() if p.is_file())
        self.ino = {n: i + 2 for i, n in enumerate(names)}
        self.names = {i: n for n, i in self.ino.items()}
        self._fds: dict[int, int] = {}
        self._lock = threading.Lock()
        self.ready = threading.Event()
        self.reads = 0

    # attributes
    def _attr(self, nodeid: int) -> bytes:
        if nodeid == 1:
            st = os.stat(self.root)
            mode, size, nlink = stat.S_IFDIR | 0o555, 4096, 2
        else:
            st = os.stat(self.root / self.names[nodeid])
            mode, size, nlink = stat.S_IFREG | 0o444, st.st_size, 1
        return ATTR.pack(nodeid, size, (size + 511) // 512, int(st.st_atime), int(st.st_mtime), int(st.st_ctime),
                         0, 0, 0, mode, nlink, 0, 0, 0, ALIGN, 0)

    def _backing_fd(self, nodeid: int) -> int:
        with self._lock:
            if nodeid not in self._fds:
                p = self.root / self.names[nodeid]
                try:
                    self._fds[nodeid] = os.open(p, os.O_RDONLY | os.O_DIRECT)
                except OSError:   # a backing file system without O_DIRECT (tmpfs): buffered
                    self._fds[nodeid] = os.open(p, os.O_RDONLY)
            return self._fds[nodeid]

    def _reply(self, unique: int, body: bytes | memoryview = b"", err: int = 0) -> None:
        try:
            os.writev(self.fd, [OUT_HDR.pack(OUT_HDR.size + len(body), -err, unique), body])
        except OSError as exc:   # ENOENT: the request was interrupted meanwhile
            if exc.errno not in (errno.ENOENT, errno.ENODEV):
                raise

    def wait_s(self) -> float:
        """The wait before each read: the calibrated one from the delay file, else ``latency_s``."""
        return DELAY.unpack_from(self._delay, 0)[0] if self._delay is not None else self.latency

    def _read(self, unique, nodeid, body, buf: mmap.mmap, arrived: float) -> None:
        _, off, size, *_ = READ_IN.unpack_from(body)
        left = arrived + self.wait_s() - time.perf_counter()
        if left > 0:
            time.sleep(left)
        a_off = off - off % ALIGN
        a_len = min(-(-(off + size - a_off) // ALIGN) * ALIGN, len(buf))
        n = os.preadv(self._backing_fd(nodeid), [memoryview(buf)[:a_len]], a_off)
        start = off - a_off
        self.reads += 1
        self._reply(unique, memoryview(buf)[start:max(start, min(n, start + size))])

    def _readdir(self, unique, body) -> None:
        _, off, size, *_ = READ_IN.unpack_from(body)
        entries = [(1, ".", 4), (1, "..", 4)] + [(i, n, 8) for n, i in self.ino.items()]
        out = b""
        for k in range(int(off), len(entries)):
            ino, name, typ = entries[k]
            nb = name.encode()
            ent = DIRENT.pack(ino, k + 1, len(nb), typ) + nb
            ent += b"\0" * (-len(ent) % 8)
            if len(out) + len(ent) > size:
                break
            out += ent
        self._reply(unique, out)

    def _init(self, unique, body) -> None:
        major, minor, max_ra, flags = INIT_IN.unpack_from(body)
        want = flags & (FUSE_ASYNC_READ | FUSE_ASYNC_DIO | FUSE_PARALLEL_DIROPS | FUSE_MAX_PAGES)
        bg = max(12, self.threads)
        self._reply(unique, INIT_OUT.pack(7, min(minor, 31), min(max_ra, self.readahead), want, bg, bg * 3 // 4,
                                          ALIGN, 1, MAX_PAGES, 0, 0))
        self.ready.set()

    def handle(self, req: bytes, buf: mmap.mmap, arrived: float | None = None) -> bool:
        """Answer one request (``arrived``: when it was taken from the device); False when the file
        system is going away."""
        _, op, unique, nodeid, *_ = IN_HDR.unpack_from(req)
        body = memoryview(req)[IN_HDR.size:]
        if op in NO_REPLY:
            return True
        if op == READ:
            self._read(unique, nodeid, body, buf, time.perf_counter() if arrived is None else arrived)
        elif op == INIT:
            self._init(unique, body)
        elif op == LOOKUP:
            name = bytes(body).split(b"\0", 1)[0].decode()
            if nodeid != 1 or name not in self.ino:
                return self._reply(unique, err=errno.ENOENT) or True
            i = self.ino[name]
            self._reply(unique, ENTRY.pack(i, 0, VALID, VALID, 0, 0) + self._attr(i))
        elif op == GETATTR:
            self._reply(unique, ATTR_OUT.pack(VALID, 0, 0) + self._attr(nodeid))
        elif op == OPEN:
            flags, _ = OPEN_IN.unpack_from(body)
            if flags & (os.O_WRONLY | os.O_RDWR):
                return self._reply(unique, err=errno.EROFS) or True
            # the files never change: a new open keeps the page cache (without KEEP_CACHE every open,
            # e.g. a mincore check of residency, would drop the cached pages)
            self._reply(unique, OPEN_OUT.pack(0, FOPEN_DIRECT_IO if flags & os.O_DIRECT else FOPEN_KEEP_CACHE, 0))
        elif op == OPENDIR:
            self._reply(unique, OPEN_OUT.pack(0, 0, 0))
        elif op == READDIR:
            self._readdir(unique, body)
        elif op == STATFS:
            v = os.statvfs(self.root)
            self._reply(unique, KSTATFS.pack(v.f_blocks, v.f_bfree, v.f_bavail, v.f_files, v.f_ffree,
                                             v.f_bsize, 255, v.f_frsize, 0))
        elif op in (RELEASE, RELEASEDIR, FLUSH, FSYNC, ACCESS):
            self._reply(unique)
        elif op in WRITES or op == SETATTR:
            self._reply(unique, err=errno.EROFS)
        elif op == DESTROY:
            self._reply(unique)
            return False
        else:
            self._reply(unique, err=errno.ENOSYS)
        return True

    def _loop(self) -> None:
        _fine_timer_slack()
        buf = mmap.mmap(-1, BUF)   # page aligned: the O_DIRECT destination of this thread's reads
        while True:
            try:
                req = os.read(self.fd, BUF)
            except OSError as exc:
                if exc.errno in (errno.EINTR, errno.EAGAIN, errno.ENOENT):
                    continue
                return   # ENODEV: unmounted
            if not req or not self.handle(req, buf, time.perf_counter()):
                return

    def serve(self, procs: int = 1) -> None:
        """Answer INIT here, then serve with ``threads`` threads spread over ``procs`` processes (workers
        started after INIT, fresh interpreters sharing the FUSE descriptor; each has its own interpreter
        lock, so the pass-through's own overhead does not cap the device's parallelism at one core's worth
        of Python). Their state needs no sharing: inode numbers follow the sorted file names and each
        process opens its own backing descriptors."""
        buf = mmap.mmap(-1, BUF)
        while not self.ready.is_set():
            req = os.read(self.fd, BUF)
            if not req or not self.handle(req, buf):
                return
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        procs = max(1, min(int(procs), self.threads))
        share = [self.threads // procs + (1 if i < self.threads % procs else 0) for i in range(procs)]
        children = [subprocess.Popen(self._worker_cmd(n), pass_fds=(self.fd,), stdout=subprocess.DEVNULL)
                    for n in share[1:]]   # in this process group: the device's close stops them too
        self._threads(share[0])
        for child in children:
            child.wait()

    def _worker_cmd(self, threads: int) -> list[str]:
        return [sys.executable, "-m", "bench.espn.system.fuse_ssd", "--fd", str(self.fd), "--backing",
                str(self.root), "--latency-s", repr(self.latency), "--threads", str(threads),
                "--max-readahead", str(self.readahead), "--worker"] + \
            (["--delay-file", self.delay_file] if self.delay_file else [])

    def _threads(self, n: int) -> None:
        workers = [threading.Thread(target=self._loop, daemon=True, name=f"fuse-ssd-{i}") for i in range(n)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()


# --- the mount (in the process that uses it) --------------------------------------------------------------
class LatencyDevice:
    """An emulated slower SSD holding the files of ``backing`` (a directory): a mounted FUSE
    pass-through adding ``latency_s`` to every read, with ``threads`` reads in flight at most.
    ``path(name)`` is a file on it. Always unmounted on exit (and at interpreter exit)."""

    def __init__(self, backing: str | os.PathLike, latency_s: float, threads: int = 32, max_readahead: int = 0,
                 procs: int | None = None):
        ok, why = available()
        if not ok:
            raise RuntimeError(f"emulated SSD (FUSE latency device) unavailable: {why}")
        if latency_s < 0 or threads < 1:
            raise ValueError(f"latency must be >= 0 and threads >= 1, got {latency_s}, {threads}")
        self.backing = Path(backing).resolve()
        self.latency_s, self.threads, self.max_readahead = float(latency_s), int(threads), int(max_readahead)
        self.procs = int(procs or min(4, self.threads))
        self.mountpoint: Path | None = None
        self._fd: int | None = None
        self._server: subprocess.Popen | None = None
        self._delay_dir: str | None = None
        self._delay: mmap.mmap | None = None
        self.calibration: dict = {}

    def path(self, name: str) -> Path:
        return self.mountpoint / name

    def describe(self) -> dict:
        """What a record says of the device: what it states and, once calibrated, what it measured."""
        return {"ssd": "emulated", "ssd_emulation": "fuse-latency", "ssd_latency_us": self.latency_s * 1e6,
                "ssd_threads": self.threads, "ssd_server_processes": self.procs,
                "ssd_max_readahead": self.max_readahead, **self.calibration}

    @property
    def wait_s(self) -> float:
        """The wait the server now adds before each read (the calibrated one)."""
        return DELAY.unpack_from(self._delay, 0)[0] if self._delay is not None else self.latency_s

    def _set_wait(self, seconds: float) -> None:
        DELAY.pack_into(self._delay, 0, max(0.0, float(seconds)))

    def calibrate(self, name: str, reads: int = CALIBRATION_READS, rounds: int = CALIBRATION_ROUNDS,
                  seed: int = 0) -> dict:
        """Set the wait so that a QD1 4 KiB read of file ``name`` on the device takes the stated latency
        more than the same read of the backing file (medians over ``reads`` interleaved reads a round):
        the wait moves by the measured error each round until it is within :data:`CALIBRATION_TOL`, or
        ``rounds`` are spent, or the wait is 0 (the pass-through's own cost alone exceeds the stated
        latency). Returns (and records) what it measured: ``ssd_added_us`` (device median - disk median),
        ``ssd_read_us``, ``ssd_disk_read_us``, ``ssd_wait_us``, ``ssd_calibration_rounds``,
        ``ssd_calibrated``."""
        target = self.latency_s
        tol = max(CALIBRATION_TOL[0] * target, CALIBRATION_TOL[1])
        dev, disk = self.path(name), self.backing / name
        got = {}
        for r in range(1, rounds + 1):
            t_dev, t_disk = qd1_read_times(dev, disk, reads, seed=seed + r)
            added = t_dev - t_disk
            got = {"ssd_added_us": added * 1e6, "ssd_read_us": t_dev * 1e6, "ssd_disk_read_us": t_disk * 1e6,
                   "ssd_wait_us": self.wait_s * 1e6, "ssd_calibration_rounds": r}
            err = added - target
            if abs(err) <= tol or (err > 0 and self.wait_s <= 0):
                break
            self._set_wait(self.wait_s - err)
        got["ssd_calibrated"] = bool(abs(got["ssd_added_us"] * 1e-6 - target) <= tol)
        self.calibration = got
        return got

    def __enter__(self) -> "LatencyDevice":
        atexit.register(self.close)
        try:
            self._mount()
            self._start_server()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _mount(self) -> None:
        self.mountpoint = Path(tempfile.mkdtemp(prefix="bench-espn-ssd-"))
        self._fd = os.open("/dev/fuse", os.O_RDWR)
        opts = f"fd={self._fd},rootmode=40000,user_id=0,group_id=0,allow_other,max_read={READ_LIMIT}"
        rc = _libc().mount(b"bench-espn-ssd", os.fsencode(str(self.mountpoint)), b"fuse.bench-espn-ssd",
                           MS_RDONLY | MS_NOSUID | MS_NODEV, opts.encode())
        if rc != 0:
            e = ctypes.get_errno()
            raise RuntimeError(f"mount of the FUSE latency device failed: {os.strerror(e)}")

    def _start_server(self) -> None:
        self._delay_dir = tempfile.mkdtemp(prefix="bench-espn-ssd-delay-")
        delay = os.path.join(self._delay_dir, "wait")
        with open(delay, "wb") as fh:
            fh.write(DELAY.pack(self.latency_s))
        self._delay = _map_delay(delay)
        cmd = [sys.executable, "-m", "bench.espn.system.fuse_ssd", "--fd", str(self._fd), "--backing",
               str(self.backing), "--latency-s", repr(self.latency_s), "--threads", str(self.threads),
               "--max-readahead", str(self.max_readahead), "--procs", str(self.procs), "--delay-file", delay]
        self._server = subprocess.Popen(cmd, pass_fds=(self._fd,), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        start_new_session=True)   # its own process group: all its processes go
        ready, _, _ = select.select([self._server.stdout], [], [], 60)
        line = self._server.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            raise RuntimeError("the FUSE latency server did not start: "
                               f"{(self._server.stderr.read1(2000) if self._server.poll() is not None else b'').decode()}")

    def close(self) -> None:
        """Unmount (lazily, so a busy mount still goes), stop the server, remove the mount point."""
        if self.mountpoint is not None:
            umount(self.mountpoint)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._server is not None:
            try:
                os.killpg(self._server.pid, signal.SIGTERM)   # the server and the processes it forked
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self._server.wait(5)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait()
            for f in (self._server.stdout, self._server.stderr):
                f.close()
            self._server = None
        if self.mountpoint is not None:
            try:
                self.mountpoint.rmdir()
            except OSError:
                pass
            self.mountpoint = None
        self._drop_delay()
        atexit.unregister(self.close)

    def _drop_delay(self) -> None:
        if self._delay is not None:
            self._delay.close()
            self._delay = None
        if self._delay_dir is not None:
            import shutil

            shutil.rmtree(self._delay_dir, ignore_errors=True)
            self._delay_dir = None


def is_mounted(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a mount point now (from /proc/self/mountinfo)."""
    p = os.path.realpath(path)
    with open("/proc/self/mountinfo") as fh:
        return any(line.split()[4] == p for line in fh)


# --- measuring the device ---------------------------------------------------------------------------------
def measure_qd(path: str | os.PathLike, qd: int, n_reads: int, seed: int = 0, block: int = ALIGN) -> dict:
    """4 KiB random ``O_DIRECT`` reads of ``path`` at queue depth ``qd`` (``qd`` threads of ``preadv``),
    the pass-through's own overhead included: {qd, reads, seconds, iops}. The threads are started and their
    buffers allocated before the clock starts (a barrier releases them all at once, its action reads the
    clock): starting 32 threads took ~1.8 ms of a ~38 ms QD32 probe, so QD32 read ~5% low against QD1."""
    import numpy as np

    size = os.path.getsize(path)
    rng = np.random.default_rng(seed)
    offs = (rng.integers(0, max(1, size // block), size=n_reads) * block).tolist()
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    chunks = [offs[i::qd] for i in range(qd)]
    t0: list[float] = []
    go = threading.Barrier(qd + 1, action=lambda: t0.append(time.perf_counter()))

    def worker(mine, wait=True):
        b = mmap.mmap(-1, block)
        if wait:
            go.wait()
        for o in mine:
            os.preadv(fd, [b], o)
        b.close()

    try:
        worker(offs[: min(qd, n_reads)], wait=False)   # warm: lookups, open, first faults
        ts = [threading.Thread(target=worker, args=(c,)) for c in chunks]
        for t in ts:
            t.start()
        go.wait(timeout=60)   # a thread that failed before the barrier breaks it here, not a hang
        for t in ts:
            t.join()
        dt = time.perf_counter() - t0[0]
    finally:
        os.close(fd)
    return {"qd": qd, "reads": n_reads, "seconds": dt, "iops": n_reads / dt}


def qd1_read_times(device: str | os.PathLike, disk: str | os.PathLike, n_reads: int, seed: int = 0,
                   block: int = ALIGN) -> tuple[float, float]:
    """(median seconds of a 4 KiB QD1 ``O_DIRECT`` read of ``device``, of ``disk``): ``n_reads`` random
    reads of each at the same offsets, interleaved one by one (so a busy moment falls on both), each
    timed on its own (a median is not moved by the odd read a busy machine delays)."""
    import numpy as np

    size = min(os.path.getsize(device), os.path.getsize(disk))
    rng = np.random.default_rng(seed)
    offs = (rng.integers(0, max(1, size // block), size=n_reads) * block).tolist()
    fds = [os.open(device, os.O_RDONLY | os.O_DIRECT), os.open(disk, os.O_RDONLY | os.O_DIRECT)]
    buf = mmap.mmap(-1, block)
    times = [[], []]
    try:
        for fd in fds:   # warm: lookups, open, first faults
            os.preadv(fd, [buf], offs[0])
        for o in offs:
            for i, fd in enumerate(fds):
                t0 = time.perf_counter()
                os.preadv(fd, [buf], o)
                times[i].append(time.perf_counter() - t0)
    finally:
        for fd in fds:
            os.close(fd)
        buf.close()
    return float(np.median(times[0])), float(np.median(times[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="the FUSE latency pass-through server (internal)")
    ap.add_argument("--fd", type=int, required=True)
    ap.add_argument("--backing", required=True)
    ap.add_argument("--latency-s", type=float, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--max-readahead", type=int, default=0)
    ap.add_argument("--procs", type=int, default=1)
    ap.add_argument("--worker", action="store_true", help="serve reads only (INIT was answered by the server)")
    ap.add_argument("--delay-file", default=None, help="the mapped file holding the current wait (calibration)")
    a = ap.parse_args(argv)
    server = Server(a.fd, a.backing, a.latency_s, a.threads, a.max_readahead, a.delay_file)
    if a.worker:
        server.ready.set()
        server._threads(a.threads)
    else:
        server.serve(a.procs)
    return 0


if __name__ == "__main__":
    sys.exit(main())

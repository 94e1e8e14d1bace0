"""Section 2.3 of Moving Stuff Around: RAMDISK (the loader's files copied to /dev/shm, their size added
to the memory as the paper does) and, beyond the paper, a cold page cache (``posix_fadvise(DONTNEED)``
on the loader's files before a run) against a warm one."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .errors import ConfigError

RAMDISK = Path("/dev/shm")


def evict(paths) -> int:
    """Drop ``paths`` from the page cache; returns the bytes evicted (file sizes)."""
    total = 0
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return total


class RamdiskCopy:
    """Copy a bundle's loader files (relative layout kept) into a fresh folder on a tmpfs; removed on
    exit. ``dir`` is the folder to read from, ``bytes`` the size copied."""

    def __init__(self, bundle_dir: str | os.PathLike, files, root: str | os.PathLike = RAMDISK):
        root = Path(root)
        if not root.is_dir():
            raise ConfigError(f"RAMDISK {root} does not exist")
        self.src, self.files, self.root = Path(bundle_dir), [Path(f) for f in files], root
        self.bytes = 0

    def __enter__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="bench-loaders-", dir=self.root))
        try:
            for f in self.files:
                dst = self.dir / f.relative_to(self.src)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dst)
                self.bytes += dst.stat().st_size
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)

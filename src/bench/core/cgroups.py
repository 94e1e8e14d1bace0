"""cgroup v1 pieces shared by the studies that cap a process's memory or throttle its disk reads (ESPN's
memory budgets and emulated slower SSD, section 5.1 of the ESPN paper; the document loaders' memory caps).

- :func:`own_cgroup`: this process's cgroup folder for a v1 controller (from ``/proc/self/cgroup``);
- :func:`usable`: whether this process (as root) can create child cgroups there;
- :class:`ChildCgroup`: join a fresh child cgroup on enter (control files written, this process and all
  its threads moved in), go back to the parent and remove the child on exit;
- :class:`MemoryCap`: a child memory cgroup with ``memory.limit_in_bytes`` (it covers the page cache);
- :func:`remove_stale`: remove the ``bench-*-<pid>`` children of processes that no longer exist (a
  worker OOM-killed inside its cap, or a pipeline killed with ``kill -9``, cannot remove its own).

Child names end in the pid of the process that made them (``bench-<tag>-<pid>``), so a later run can
tell whose they are.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import BenchError

ROOT = Path("/sys/fs/cgroup")
PREFIX = "bench-"
_PID = re.compile(r"^bench-.*-(\d+)$")


class CgroupUnavailable(BenchError):
    """A cgroup v1 controller this process cannot use (not root, no v1 controller, not writable)."""


def own_cgroup(controller: str, root: Path | None = None) -> Path | None:
    """This process's cgroup v1 folder for ``controller`` (from /proc/self/cgroup), or None."""
    root = ROOT / controller if root is None else root
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrl, path = line.split(":", 2)
            if controller in ctrl.split(","):
                return root / path.lstrip("/")
    except (OSError, ValueError):
        return None
    return None


def usable(base: Path | None, control_file: str, what: str) -> tuple[bool, str]:
    """Whether this process (as root) can create child cgroups under ``base`` that have ``control_file``;
    the reason when not, else the folder."""
    if os.geteuid() != 0:
        return False, "not root"
    if base is None or not (base / control_file).exists():
        return False, f"no cgroup v1 {what} for this process"
    if not os.access(base, os.W_OK):
        return False, f"{base} is not writable"
    return True, str(base)


def child_name(tag: str, pid: int | None = None) -> str:
    """``bench-<tag>-<pid>``: the name :func:`remove_stale` recognises."""
    return f"{PREFIX}{tag}-{os.getpid() if pid is None else int(pid)}"


class ChildCgroup:
    """A fresh child cgroup v1 (``self.path`` under ``self.parent``): on enter it is created, its control
    files written (:meth:`_controls`) and this process (all its threads) moved in; on exit the process
    goes back to the parent and the child is removed."""

    parent: Path
    path: Path

    def _controls(self) -> dict[str, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __enter__(self):
        self.path.mkdir(exist_ok=True)
        for name, value in self._controls().items():
            (self.path / name).write_text(value)
        (self.path / "cgroup.procs").write_text(str(os.getpid()))
        return self

    def __exit__(self, *exc) -> None:
        try:
            (self.parent / "cgroup.procs").write_text(str(os.getpid()))
            self.path.rmdir()
        except OSError:
            pass


def memory_cgroup() -> Path | None:
    return own_cgroup("memory")


def memory_available() -> tuple[bool, str]:
    return usable(memory_cgroup(), "memory.limit_in_bytes", "memory controller")


class MemoryCap(ChildCgroup):
    """Move this process into a fresh child memory cgroup capped at ``limit_bytes`` (page cache
    included; exceeding it is an OOM kill); undone on exit. :class:`CgroupUnavailable` where the
    controller cannot be used."""

    def __init__(self, limit_bytes: int, tag: str = "mem", name: str | None = None):
        ok, why = memory_available()
        if not ok:
            raise CgroupUnavailable(f"cgroup v1 memory cap unavailable: {why}")
        self.parent = memory_cgroup()
        self.path = self.parent / (name or child_name(tag))
        self.limit = int(limit_bytes)

    def _controls(self) -> dict[str, str]:
        return {"memory.limit_in_bytes": str(self.limit)}

    def _read(self, f: str) -> int | None:
        try:
            return int((self.path / f).read_text().strip())
        except (OSError, ValueError):
            return None

    def stats(self) -> dict:
        return {"cgroup_max_usage_bytes": self._read("memory.max_usage_in_bytes"),
                "cgroup_usage_bytes": self._read("memory.usage_in_bytes"),
                "cgroup_failcnt": self._read("memory.failcnt")}

    def reset_peak(self) -> None:
        try:
            (self.path / "memory.max_usage_in_bytes").write_text("0")
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(parents: dict[str, Path | None] | None = None, pid: int | None = None) -> list[Path]:
    """Remove the empty ``bench-*-<pid>`` child cgroups of dead processes (or of ``pid`` only, once it
    has exited) under this process's memory and blkio cgroups (``parents``: ``{controller: folder}``).
    A cgroup that still holds a process is kept (rmdir fails on it)."""
    if parents is None:
        parents = {c: own_cgroup(c) for c in ("memory", "blkio")}
    removed = []
    for parent in parents.values():
        if parent is None or not parent.is_dir():
            continue
        for d in sorted(parent.glob(f"{PREFIX}*")):
            m = _PID.match(d.name)
            if not m or not d.is_dir():
                continue
            owner = int(m.group(1))
            if (pid is not None and owner != pid) or (pid is None and _alive(owner)):
                continue
            try:
                d.rmdir()
                removed.append(d)
            except OSError:
                pass
    return removed

"""cgroup pieces shared by the studies that cap a process's memory or throttle its disk reads: ESPN's
memory budgets and emulated slower SSD (ESPN paper, section 5.1) and the document loaders' memory caps
(Moving Stuff Around, section 3.2: a run over the cap is OOM-killed alone, the paper's OOM cells).

Both cgroup hierarchies are handled, chosen per controller (:func:`locate`):

- v1 where the controller is mounted as v1 (``ROOT/<controller>``) and listed in ``/proc/self/cgroup``
  (a hybrid machine such as the project's VM: v1 memory and blkio);
- else v2, where this process's group in the unified hierarchy (the ``0::/path`` line; mounted at
  ``ROOT``, or ``ROOT/unified`` on a hybrid machine) has the controller in its ``cgroup.controllers``
  (most current machines, the project's CUDA host included).

On v2 the group that children go under (the *base*) gets ``+memory`` / ``+io`` in its
``cgroup.subtree_control`` (:func:`enable`). cgroup v2's no-internal-processes rule refuses that (EBUSY)
while the base holds processes, as a container's cgroup-namespace root holding its shell does: the
base's processes are then moved into a leaf child ``bench-leaf`` first (as docker-in-docker entrypoints
do), and the leaf's parent stays the base from then on. A process sits in one v2 group for every
controller, so a child entered by a process already inside a child it joined (ESPN's read throttle
inside its memory cap) writes its controls into that group instead of moving (:class:`ChildCgroup`).

- :func:`locate` / :func:`usable` / :func:`available`: where children go, and whether they can be made
  there (as root), else why in one line;
- :class:`ChildCgroup`: create a child (:meth:`ChildCgroup.create`), join it on enter, go back and remove
  it on exit;
- :class:`MemoryCap`: ``memory.limit_in_bytes`` (v1) or ``memory.max`` (v2), page cache included, with
  its peak, failcnt and OOM kills read back (:meth:`MemoryCap.stats`);
- :func:`io_max_line`: a v2 ``io.max`` line (the v1 blkio throttle's counterpart);
- :func:`remove_stale`: remove the ``bench-*-<pid>`` children of dead processes, on both hierarchies (a
  worker OOM-killed inside its cap, or a pipeline killed with ``kill -9``, cannot remove its own).

``ROOT`` (the cgroupfs mount) and ``PROC_CGROUP`` (this process's membership) are module attributes,
so tests can point them at a fake tree. Child names end in the pid of the process that made them
(``bench-<tag>-<pid>``), so a later run can tell whose they are.
"""
from __future__ import annotations

import dataclasses
import errno
import os
import re
import threading
from pathlib import Path

from ..base.errors import BenchError

ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
PREFIX = "bench-"
LEAF = "bench-leaf"
SAMPLE_S = 0.01  # memory.current sampling interval where the kernel lacks memory.peak
_PID = re.compile(r"^bench-.*-(\d+)$")
V1_NAME = {"memory": "memory", "io": "blkio", "blkio": "blkio"}
V2_NAME = {"memory": "memory", "io": "io", "blkio": "io"}
_JOINED: list[Path] = []  # v2 children this process joined (innermost last)


class CgroupUnavailable(BenchError):
    """A cgroup controller this process cannot use; the message says why in one line."""


@dataclasses.dataclass(frozen=True)
class Place:
    """Where this process's children for one controller go."""

    version: str  # "v1" or "v2"
    controller: str  # its name there: memory; blkio (v1) or io (v2)
    base: Path  # the folder bench-* children are made in


# ----------------------------------------------------------------------------- finding the hierarchy

def _entries() -> list[tuple[str, list[str], str]]:
    """(hierarchy id, controllers, path) of each line of ``PROC_CGROUP``."""
    out = []
    try:
        for line in PROC_CGROUP.read_text().splitlines():
            hid, ctrl, path = line.split(":", 2)
            out.append((hid, ctrl.split(",") if ctrl else [], path))
    except (OSError, ValueError):
        return []
    return out


def _words(f: Path) -> list[str]:
    try:
        return f.read_text().split()
    except OSError:
        return []


def _read_int(f: Path) -> int | None:
    try:
        return int(f.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def keyed(f: Path) -> dict[str, int]:
    """``key value`` lines (memory.events, memory.oom_control) as a dict; empty if unreadable."""
    try:
        pairs = [line.split() for line in f.read_text().splitlines()]
    except OSError:
        return {}
    return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].lstrip("-").isdigit()}


def v1_folder(controller: str) -> Path | None:
    """This process's cgroup v1 folder for ``controller`` where it is mounted as v1, else None."""
    name = V1_NAME.get(controller, controller)
    for hid, ctrls, path in _entries():
        if hid == "0" or name not in ctrls:
            continue
        for mount in (ROOT / name, ROOT / ",".join(ctrls)):
            if mount.is_dir() and not (mount / "cgroup.controllers").exists():
                d = mount / path.lstrip("/")
                return d if d.is_dir() else None
    return None


def v2_root() -> Path | None:
    """The unified hierarchy's mount: ``ROOT`` (v2 only) or ``ROOT/unified`` (hybrid), else None."""
    for r in (ROOT, ROOT / "unified"):
        if (r / "cgroup.controllers").is_file():
            return r
    return None


def v2_group() -> Path | None:
    """This process's own group in the unified hierarchy (the ``0::/path`` line), else None."""
    root = v2_root()
    for hid, _, path in _entries():
        if hid == "0" and root is not None:
            d = root / path.lstrip("/")
            return d if d.is_dir() else None
    return None


def v2_base() -> Path | None:
    """Where this process's children go in the unified hierarchy: its group, or the parent of
    ``bench-leaf`` once it was moved there (:func:`enable`)."""
    g = v2_group()
    return g.parent if g is not None and g.name == LEAF else g


def locate(controller: str) -> Place | None:
    """v1 where ``controller`` (memory, io/blkio) is mounted as v1 for this process; else v2 where this
    process's unified group has it in ``cgroup.controllers``; else None."""
    d = v1_folder(controller)
    if d is not None:
        return Place("v1", V1_NAME.get(controller, controller), d)
    base, name = v2_base(), V2_NAME.get(controller, controller)
    if base is not None and name in _words(base / "cgroup.controllers"):
        return Place("v2", name, base)
    return None


def usable(place: Place | None, controller: str, control_file: str | None = None) -> tuple[bool, str]:
    """Whether this process (as root) can make children at ``place`` (:func:`locate`) that have the v1
    ``control_file``: (True, "cgroup vN <folder>"), or (False, why in one line)."""
    if os.geteuid() != 0:
        return False, "not root"
    if place is None:
        return False, (f"no {controller} controller in either hierarchy (no cgroup v1 "
                       f"{V1_NAME.get(controller, controller)} mount for this process; "
                       f"'{V2_NAME.get(controller, controller)}' not in cgroup.controllers of its v2 group "
                       f"{v2_base() or '(none)'})")
    if place.version == "v1" and control_file and not (place.base / control_file).exists():
        return False, f"cgroup v1 {place.controller} folder {place.base} has no {control_file}"
    if not os.access(place.base, os.W_OK):
        return False, f"{place.base} is not writable (cgroupfs mounted read-only?)"
    if place.version == "v2" and not os.access(place.base / "cgroup.subtree_control", os.W_OK):
        return False, f"{place.base}/cgroup.subtree_control is not writable"
    return True, f"cgroup {place.version} {place.base}"


def available(controller: str, control_file: str | None = None, prepare: bool = False) -> tuple[bool, str]:
    """:func:`usable` for this process's place for ``controller``; ``prepare``: on v2 also enable it in
    the base's subtree_control now (:func:`enable`), so that a refusal is known before any child."""
    place = locate(controller)
    ok, why = usable(place, controller, control_file)
    if ok and prepare:
        try:
            enable(place)
        except CgroupUnavailable as exc:
            return False, str(exc)
    return ok, why


def version(controller: str) -> str | None:
    """"v1" or "v2": the hierarchy :func:`locate` picks for ``controller`` (None: neither)."""
    place = locate(controller)
    return place.version if place else None


# ----------------------------------------------------------------------------- v2 subtree_control

def _write(path: Path, value: str) -> None:
    """One write of a control file (cgroupfs takes one value per write); tests replace it."""
    path.write_text(value)


def evacuate(base: Path) -> int:
    """Move every process of ``base`` into its leaf child ``bench-leaf`` (made if missing); how many moved
    (those that exited meanwhile, or kernel threads, are skipped)."""
    leaf = base / LEAF
    leaf.mkdir(exist_ok=True)
    moved = 0
    for pid in _words(base / "cgroup.procs"):
        try:
            _write(leaf / "cgroup.procs", pid)
            moved += 1
        except OSError:
            pass
    return moved


def enable(place: Place) -> None:
    """v2: ``+<controller>`` in the base's ``cgroup.subtree_control`` so that children get its files. If
    that is refused with EBUSY (no-internal-processes rule: the base holds processes), the base's
    processes are moved into ``bench-leaf`` (:func:`evacuate`) and it is tried again. Nothing on v1.
    :class:`CgroupUnavailable` if still refused."""
    sc = place.base / "cgroup.subtree_control"
    if place.version != "v2" or place.controller in _words(sc):
        return
    for _ in range(3):
        try:
            _write(sc, f"+{place.controller}")
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise CgroupUnavailable(f"cgroup v2: {sc} refused +{place.controller}: "
                                        f"{exc.strerror or exc}") from None
            why = exc.strerror or str(exc)
        evacuate(place.base)
    raise CgroupUnavailable(f"cgroup v2: {sc} refused +{place.controller} ({why}) even after moving the "
                            f"processes of {place.base} into {LEAF}: a group whose subtree_control enables "
                            "controllers may hold no processes (no-internal-processes rule)")


def io_max_line(device: str, riops: int | str | None = None, rbps: int | str | None = None) -> str:
    """A cgroup v2 ``io.max`` line for the whole disk ``MAJ:MIN``: ``"8:0 riops=2000 rbps=..."``
    (``"max"`` lifts a limit)."""
    limits = [f"{k}={v}" for k, v in (("riops", riops), ("rbps", rbps)) if v is not None]
    if not limits:
        raise ValueError("io.max needs riops or rbps")
    return " ".join([device, *limits])


# ----------------------------------------------------------------------------- child groups

def child_name(tag: str, pid: int | None = None) -> str:
    """``bench-<tag>-<pid>``: the name :func:`remove_stale` recognises."""
    return f"{PREFIX}{tag}-{os.getpid() if pid is None else int(pid)}"


class ChildCgroup:
    """A fresh child group ``self.path`` in ``self.place.base`` for one controller. :meth:`create` makes
    it (v2: the controller enabled in the base first) and writes its controls; entering also moves this
    process (all its threads) in; exiting moves it back where it was and removes the child. On v2, a
    process already inside a child it joined writes the controls there instead (one group per process),
    and exiting lifts them (:meth:`_reset`)."""

    what = "cgroup"

    def __init__(self, controller: str, tag: str, name: str | None = None, control_file: str | None = None):
        self.place = locate(controller)
        ok, why = usable(self.place, controller, control_file)
        if not ok:
            raise CgroupUnavailable(f"{self.what} unavailable: {why}")
        self.version = self.place.version
        self.path = self.place.base / (name or child_name(tag))
        self.home: Path | None = None
        self.shared = False

    @property
    def parent(self) -> Path:
        return self.place.base

    def _controls(self) -> dict[str, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _optional(self) -> dict[str, str]:
        """Controls written where the kernel takes them (failures ignored)."""
        return {}

    def _reset(self) -> dict[str, str]:
        """Controls that lift :meth:`_controls` in a shared v2 group."""
        return {}

    def _write_controls(self) -> None:
        for name, value in self._controls().items():
            _write(self.path / name, value)
        for name, value in self._optional().items():
            try:
                _write(self.path / name, value)
            except OSError:
                pass

    def create(self) -> ChildCgroup:
        enable(self.place)
        self.path.mkdir(exist_ok=True)
        self._write_controls()
        return self

    def join(self, pid: int | None = None) -> None:
        """Move process ``pid`` (default: this one; all its threads) into the child."""
        _write(self.path / "cgroup.procs", str(pid or os.getpid()))

    def _own_group(self) -> Path:
        own = v1_folder(self.place.controller) if self.version == "v1" else v2_group()
        return own or self.place.base

    def __enter__(self):
        if self.version == "v2" and _JOINED and _JOINED[-1].parent == self.place.base:
            enable(self.place)
            self.path, self.shared = _JOINED[-1], True
            self._write_controls()
            return self
        self.create()
        self.home = self._own_group()
        try:
            self.join()
        except OSError:
            self.path.rmdir()
            raise
        if self.version == "v2":
            _JOINED.append(self.path)
        return self

    def __exit__(self, *exc) -> None:
        if self.shared:
            for name, value in self._reset().items():
                try:
                    _write(self.path / name, value)
                except OSError:
                    pass
            return
        if _JOINED and _JOINED[-1] == self.path:
            _JOINED.pop()
        try:
            _write(self.home / "cgroup.procs", str(os.getpid()))
            self.path.rmdir()
        except OSError:
            pass


# ----------------------------------------------------------------------------- memory cap

class _Peak:
    """Peak memory of a v2 group: ``memory.peak`` read through one descriptor (writing to it resets the
    peak for that descriptor, Linux 6.12+); where the kernel lacks memory.peak (before 5.19) or cannot
    reset it, the maximum of ``memory.current`` sampled every ``SAMPLE_S`` in a background thread."""

    def __init__(self, folder: Path):
        self.folder, self.fd, self.max = folder, None, None
        self._stop, self._thread = threading.Event(), None
        for flags in (os.O_RDWR, os.O_RDONLY):
            try:
                self.fd = os.open(folder / "memory.peak", flags)
                return
            except OSError:
                continue
        self._sample()

    def _sample(self) -> None:
        self.max = _read_int(self.folder / "memory.current")
        self._thread = threading.Thread(target=self._loop, name="cgroup-peak", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            v = _read_int(self.folder / "memory.current")
            if v is not None:
                self.max = v if self.max is None else max(self.max, v)

    @property
    def source(self) -> str:
        return "memory.current sampled" if self._thread is not None else "memory.peak"

    def reset(self) -> None:
        if self._thread is None:
            try:
                os.write(self.fd, b"reset\n")
                return
            except (OSError, TypeError):
                self._sample()
        self.max = _read_int(self.folder / "memory.current")

    def value(self) -> int | None:
        if self._thread is not None:
            return self.max
        try:
            os.lseek(self.fd, 0, os.SEEK_SET)
            return int(os.read(self.fd, 64).split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class MemoryCap(ChildCgroup):
    """A child memory group capped at ``limit_bytes``, page cache included; exceeding it is an OOM kill
    (ESPN section 5.1's memory budgets; the loaders' OOM cells). v1: ``memory.limit_in_bytes``; v2:
    ``memory.max`` (and ``memory.swap.max`` = 0 where the kernel takes it). :class:`CgroupUnavailable`
    where neither hierarchy can be used."""

    what = "cgroup memory cap"

    def __init__(self, limit_bytes: int, tag: str = "mem", name: str | None = None):
        super().__init__("memory", tag, name, control_file="memory.limit_in_bytes")
        self.limit = int(limit_bytes)
        self._peak: _Peak | None = None

    def _controls(self) -> dict[str, str]:
        return {("memory.limit_in_bytes" if self.version == "v1" else "memory.max"): str(self.limit)}

    def _optional(self) -> dict[str, str]:
        return {"memory.swap.max": "0"} if self.version == "v2" else {}

    def _reset(self) -> dict[str, str]:
        return {"memory.max": "max"}

    def _write_controls(self) -> None:
        super()._write_controls()
        if self.version == "v2" and self._peak is None:
            self._peak = _Peak(self.path)

    def _read(self, f: str) -> int | None:
        return _read_int(self.path / f)

    def stats(self) -> dict:
        """``cgroup_max_usage_bytes`` (peak since the last :meth:`reset_peak`), ``cgroup_usage_bytes``,
        ``cgroup_failcnt`` (v1 memory.failcnt; v2 the ``max`` count of memory.events: times the usage
        reached the cap), ``cgroup_oom_kills``, ``cgroup_version``."""
        if self.version == "v1":
            return {"cgroup_version": "v1", "cgroup_max_usage_bytes": self._read("memory.max_usage_in_bytes"),
                    "cgroup_usage_bytes": self._read("memory.usage_in_bytes"),
                    "cgroup_failcnt": self._read("memory.failcnt"),
                    "cgroup_oom_kills": keyed(self.path / "memory.oom_control").get("oom_kill")}
        ev = keyed(self.path / "memory.events")
        return {"cgroup_version": "v2",
                "cgroup_max_usage_bytes": self._peak.value() if self._peak else self._read("memory.peak"),
                "cgroup_usage_bytes": self._read("memory.current"), "cgroup_failcnt": ev.get("max"),
                "cgroup_oom_kills": ev.get("oom_kill"),
                "cgroup_peak_source": self._peak.source if self._peak else "memory.peak"}

    def reset_peak(self) -> None:
        if self.version == "v2":
            if self._peak is not None:
                self._peak.reset()
            return
        try:
            _write(self.path / "memory.max_usage_in_bytes", "0")
        except OSError:
            pass

    def close(self) -> None:
        """Stop the v2 peak reader (its thread or descriptor)."""
        if self._peak is not None:
            self._peak.close()
            self._peak = None

    def __exit__(self, *exc) -> None:
        self.close()
        super().__exit__(*exc)


def memory_cgroup() -> Path | None:
    """The folder memory-cap children go in (either hierarchy), or None."""
    place = locate("memory")
    return place.base if place else None


def memory_available(prepare: bool = False) -> tuple[bool, str]:
    return available("memory", "memory.limit_in_bytes", prepare=prepare)


# ----------------------------------------------------------------------------- stale children

def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_parents() -> dict[str, Path | None]:
    """The folders this process's children may be in: v1 memory and blkio, and the v2 base."""
    return {"v1 memory": v1_folder("memory"), "v1 blkio": v1_folder("blkio"), "v2": v2_base()}


def remove_stale(parents: dict[str, Path | None] | None = None, pid: int | None = None) -> list[Path]:
    """Remove the empty ``bench-*-<pid>`` children of dead processes (or of ``pid`` only, once it has
    exited) under ``parents`` (default :func:`stale_parents`: both hierarchies). A child that still holds
    a process is kept (rmdir fails on it)."""
    removed = []
    for parent in (stale_parents() if parents is None else parents).values():
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

"""bench.core.machine.cgroups on both hierarchies: against fake cgroupfs trees in tmp_path (file writes and reads),
and against the real one where this machine allows (root with a usable controller; skipped otherwise)."""
from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.core.machine import cgroups
from bench.espn.system import memory_budget as espn_memory, slow_ssd as espn_ssd
from bench.espn.system.backends import BackendUnavailable
from bench.loaders.system import footprint as loaders_memory
from bench.loaders.system.errors import ConfigError

V2_ALL = "cpuset cpu io memory hugetlb pids"


def _tree(tmp_path, monkeypatch, proc: str, files: dict[str, str]) -> Path:
    """A fake cgroupfs at tmp_path/cg (``files``: relative path -> content) and /proc/self/cgroup."""
    root = tmp_path / "cg"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (tmp_path / "proc_cgroup").write_text(proc)
    monkeypatch.setattr(cgroups, "ROOT", root)
    monkeypatch.setattr(cgroups, "PROC_CGROUP", tmp_path / "proc_cgroup")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(cgroups, "_JOINED", [])
    return root


def _v2(tmp_path, monkeypatch, controllers=V2_ALL, procs=""):
    """A v2-only machine, this process in the (namespace) root group."""
    return _tree(tmp_path, monkeypatch, "0::/\n", {"cgroup.controllers": controllers,
                                                   "cgroup.subtree_control": "", "cgroup.procs": procs})


def _v1(tmp_path, monkeypatch):
    """A hybrid machine like the project's VM: v1 memory (in a nested group) and blkio, an empty v2."""
    return _tree(tmp_path, monkeypatch, "7:blkio:/\n4:memory:/a/b\n0::/\n",
                 {"memory/a/b/memory.limit_in_bytes": "9223372036854771712", "memory/a/b/cgroup.procs": "",
                  "blkio/blkio.throttle.read_iops_device": "", "blkio/cgroup.procs": "",
                  "unified/cgroup.controllers": "hugetlb", "unified/cgroup.subtree_control": ""})


class FakeKernel:
    """cgroup v2 write rules on a fake tree: a pid written to a cgroup.procs leaves every other group;
    ``+ctrl`` in subtree_control is refused with EBUSY while that group holds processes."""

    def __init__(self, root: Path, monkeypatch, always_busy: bool = False):
        self.root, self.always_busy, self.writes = root, always_busy, []
        monkeypatch.setattr(cgroups, "_write", self)

    def __call__(self, path: Path, value: str) -> None:
        self.writes.append((path.relative_to(self.root).as_posix(), value))
        if path.name == "cgroup.subtree_control":
            if self.always_busy or (path.parent / "cgroup.procs").read_text().split():
                raise OSError(errno.EBUSY, "Device or resource busy")
            old = path.read_text().split() if path.exists() else []
            path.write_text(" ".join(old + [value.lstrip("+")]))
        elif path.name == "cgroup.procs":
            for f in self.root.rglob("cgroup.procs"):
                f.write_text("\n".join(p for p in f.read_text().split() if p != value))
            old = path.read_text().split() if path.exists() else []
            path.write_text("\n".join(old + [value]))
        else:
            path.write_text(value)


# ----------------------------------------------------------------------------- detection


def test_v2_only_machine_uses_the_unified_group(tmp_path, monkeypatch):
    root = _v2(tmp_path, monkeypatch)
    assert cgroups.locate("memory") == cgroups.Place("v2", "memory", root)
    assert cgroups.locate("blkio") == cgroups.Place("v2", "io", root)
    assert cgroups.memory_available() == (True, f"cgroup v2 {root}")
    assert espn_memory.cgroup_mechanism() == "cgroup-v2"


def test_hybrid_picks_v1_per_controller_else_v2(tmp_path, monkeypatch):
    root = _tree(tmp_path, monkeypatch, "4:memory:/x\n0::/\n",
                 {"memory/x/memory.limit_in_bytes": "1", "unified/cgroup.controllers": "io memory",
                  "unified/cgroup.subtree_control": ""})
    assert cgroups.locate("memory") == cgroups.Place("v1", "memory", root / "memory/x")
    assert cgroups.locate("io") == cgroups.Place("v2", "io", root / "unified")  # no v1 blkio listed
    assert espn_memory.cgroup_mechanism() == "cgroup-v1"


def test_v1_mount_not_listed_for_this_process_falls_to_v2(tmp_path, monkeypatch):
    root = _tree(tmp_path, monkeypatch, "0::/g\n", {"memory/g/memory.limit_in_bytes": "1",
                                                     "g/cgroup.controllers": "memory", "cgroup.controllers": "memory"})
    assert cgroups.locate("memory") == cgroups.Place("v2", "memory", root / "g")


def test_base_is_the_parent_of_bench_leaf(tmp_path, monkeypatch):
    root = _tree(tmp_path, monkeypatch, f"0::/ns/{cgroups.LEAF}\n",
                 {"cgroup.controllers": V2_ALL, "ns/cgroup.controllers": "memory io",
                  f"ns/{cgroups.LEAF}/cgroup.procs": ""})
    assert cgroups.locate("memory").base == root / "ns"


# ----------------------------------------------------------------------------- why not, in one line


def test_why_not_root(tmp_path, monkeypatch):
    _v2(tmp_path, monkeypatch)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert cgroups.memory_available() == (False, "not root")
    assert loaders_memory.cap_available() == (False, "not root")


def test_why_no_controller_in_either_hierarchy(tmp_path, monkeypatch):
    _v2(tmp_path, monkeypatch, controllers="cpu pids")
    ok, why = cgroups.memory_available()
    assert not ok and why.startswith("no memory controller in either hierarchy") and "\n" not in why
    with pytest.raises(cgroups.CgroupUnavailable, match="cgroup memory cap unavailable: no memory controller"):
        cgroups.MemoryCap(1 << 30)
    with pytest.raises(ConfigError, match="memory cap requested but unavailable: no memory controller"):
        loaders_memory.MemoryCap(1 << 30)


def test_why_no_io_controller_for_the_throttle(tmp_path, monkeypatch):
    _v2(tmp_path, monkeypatch, controllers="cpu memory pids")
    monkeypatch.setattr(espn_ssd, "block_device_of", lambda path: "8:0")
    with pytest.raises(BackendUnavailable, match=r"cgroup read throttle \(blkio v1 / io.max v2\) unavailable: "
                       "no io controller in either hierarchy"):
        espn_ssd.BlkioThrottle(tmp_path, 100)


def test_why_not_writable(tmp_path, monkeypatch):
    root = _v2(tmp_path, monkeypatch)
    monkeypatch.setattr(os, "access", lambda p, mode: False)
    assert cgroups.memory_available() == (False, f"{root} is not writable (cgroupfs mounted read-only?)")


def test_why_v1_without_the_throttle_file(tmp_path, monkeypatch):
    root = _v1(tmp_path, monkeypatch)
    (root / "blkio/blkio.throttle.read_iops_device").unlink()
    ok, why = cgroups.available("io", espn_ssd.THROTTLE_V1)
    assert not ok and why == f"cgroup v1 blkio folder {root / 'blkio'} has no blkio.throttle.read_iops_device"


def test_why_subtree_control_refused(tmp_path, monkeypatch):
    _v2(tmp_path, monkeypatch)

    def refuse(path, value):
        raise OSError(errno.EACCES, "Permission denied")
    monkeypatch.setattr(cgroups, "_write", refuse)
    ok, why = cgroups.memory_available(prepare=True)
    assert not ok and "cgroup.subtree_control refused +memory: Permission denied" in why


def test_subtree_control_still_busy_says_why(tmp_path, monkeypatch):
    root = _v2(tmp_path, monkeypatch, procs="1\n")
    FakeKernel(root, monkeypatch, always_busy=True)
    with pytest.raises(cgroups.CgroupUnavailable, match="even after moving the processes .* into bench-leaf: "
                       ".*no-internal-processes rule"):
        cgroups.enable(cgroups.locate("memory"))


# ----------------------------------------------------------------------------- v2 mechanics


def test_v2_enable_moves_processes_into_a_leaf_first(tmp_path, monkeypatch):
    """No-internal-processes rule: +memory is refused while the base holds processes; they move into
    bench-leaf, then it is enabled."""
    root = _v2(tmp_path, monkeypatch, procs="1\n42\n")
    k = FakeKernel(root, monkeypatch)
    cgroups.enable(cgroups.locate("memory"))
    assert (root / "cgroup.subtree_control").read_text().split() == ["memory"]
    assert (root / cgroups.LEAF / "cgroup.procs").read_text().split() == ["1", "42"]
    assert (root / "cgroup.procs").read_text().split() == []
    cgroups.enable(cgroups.locate("memory"))  # already on: nothing written
    assert [w for w in k.writes if w[0] == "cgroup.subtree_control"] == [("cgroup.subtree_control", "+memory")] * 2


def test_v2_memory_cap_writes_memory_max_and_joins(tmp_path, monkeypatch):
    root = _v2(tmp_path, monkeypatch)
    k = FakeKernel(root, monkeypatch)
    with cgroups.MemoryCap(64 << 20, tag="t") as cap:
        assert cap.path == root / cgroups.child_name("t")
        assert (cap.path / "memory.max").read_text() == str(64 << 20)
        assert (cap.path / "memory.swap.max").read_text() == "0"
        assert (cap.path / "cgroup.procs").read_text().split() == [str(os.getpid())]
        assert "memory" in (root / "cgroup.subtree_control").read_text().split()
    assert (root / "cgroup.procs").read_text().split() == [str(os.getpid())]  # back home
    assert ("cgroup.subtree_control", "+memory") in k.writes


def test_v2_stats_from_memory_peak_and_events(tmp_path, monkeypatch):
    root = _v2(tmp_path, monkeypatch)
    child = root / "bench-t-1"
    child.mkdir()
    (child / "memory.peak").write_text("123456789\n")
    (child / "memory.current").write_text("1000\n")
    (child / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 2\noom_kill 1\noom_group_kill 0\n")
    cap = cgroups.MemoryCap(64 << 20, name="bench-t-1").create()
    try:
        assert cap.stats() == {"cgroup_version": "v2", "cgroup_max_usage_bytes": 123456789,
                               "cgroup_usage_bytes": 1000, "cgroup_failcnt": 7, "cgroup_oom_kills": 1,
                               "cgroup_peak_source": "memory.peak"}
        (child / "memory.peak").write_text("223456789\n")  # read again through the same descriptor
        assert cap.stats()["cgroup_max_usage_bytes"] == 223456789
    finally:
        cap.close()


def test_v2_peak_sampled_where_memory_peak_is_missing(tmp_path, monkeypatch):
    root = _v2(tmp_path, monkeypatch)
    monkeypatch.setattr(cgroups, "SAMPLE_S", 0.002)
    child = root / "bench-t-1"
    child.mkdir()
    cur = child / "memory.current"
    cur.write_text("1000\n")
    cap = cgroups.MemoryCap(64 << 20, name="bench-t-1").create()
    try:
        for value in ("5000\n", "2000\n"):
            cur.write_text(value)
            _until(lambda: cap.stats()["cgroup_usage_bytes"] == int(value) and cap._peak.max >= int(value))
            time.sleep(0.02)
        s = cap.stats()
        assert s["cgroup_max_usage_bytes"] == 5000 and s["cgroup_peak_source"] == "memory.current sampled"
        cap.reset_peak()
        assert cap.stats()["cgroup_max_usage_bytes"] == 2000
    finally:
        cap.close()
    assert cap._peak is None


def _until(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline
        time.sleep(0.005)


def test_io_max_line_format():
    assert cgroups.io_max_line("8:0", riops=2000) == "8:0 riops=2000"
    assert cgroups.io_max_line("259:0", riops=100, rbps=1 << 20) == "259:0 riops=100 rbps=1048576"
    assert cgroups.io_max_line("8:0", riops="max", rbps="max") == "8:0 riops=max rbps=max"
    with pytest.raises(ValueError):
        cgroups.io_max_line("8:0")


def test_v2_read_throttle_writes_io_max(tmp_path, monkeypatch):
    root = _v2(tmp_path, monkeypatch)
    FakeKernel(root, monkeypatch)
    monkeypatch.setattr(espn_ssd, "block_device_of", lambda path: "8:0")
    with espn_ssd.BlkioThrottle(tmp_path, 2000, bps=50 << 20) as th:
        assert (th.path / "io.max").read_text() == f"8:0 riops=2000 rbps={50 << 20}"
        assert th.read_iops() == 2000
        assert "io" in (root / "cgroup.subtree_control").read_text().split()
        assert (th.path / "cgroup.procs").read_text().split() == [str(os.getpid())]


def test_v2_throttle_inside_the_cap_shares_its_group(tmp_path, monkeypatch):
    """A process has one v2 group: ESPN's worker throttles reads in the group of its memory cap."""
    root = _v2(tmp_path, monkeypatch)
    FakeKernel(root, monkeypatch)
    monkeypatch.setattr(espn_ssd, "block_device_of", lambda path: "8:0")
    with espn_memory.CgroupCap(64 << 20) as cap:
        with espn_ssd.BlkioThrottle(tmp_path, 500) as th:
            assert th.shared and th.path == cap.path
            assert (cap.path / "io.max").read_text() == "8:0 riops=500"
            assert (cap.path / "memory.max").read_text() == str(64 << 20)
        assert (cap.path / "io.max").read_text() == "8:0 riops=max rbps=max"  # lifted, group kept
    assert cgroups._JOINED == []


def test_v1_memory_cap_and_throttle_files(tmp_path, monkeypatch):
    root = _v1(tmp_path, monkeypatch)
    mem = root / "memory/a/b"
    with cgroups.MemoryCap(32 << 20, tag="t") as cap:
        assert cap.version == "v1" and cap.parent == mem
        assert (cap.path / "memory.limit_in_bytes").read_text() == str(32 << 20)
        assert (cap.path / "cgroup.procs").read_text() == str(os.getpid())
        (cap.path / "memory.max_usage_in_bytes").write_text("999\n")
        (cap.path / "memory.failcnt").write_text("3\n")
        (cap.path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
        s = cap.stats()
        assert (s["cgroup_version"], s["cgroup_max_usage_bytes"], s["cgroup_failcnt"], s["cgroup_oom_kills"]) == \
            ("v1", 999, 3, 2)
        cap.reset_peak()
        assert (cap.path / "memory.max_usage_in_bytes").read_text() == "0"
    assert (mem / "cgroup.procs").read_text() == str(os.getpid())  # back in the parent
    monkeypatch.setattr(espn_ssd, "block_device_of", lambda path: "254:0")
    with espn_ssd.BlkioThrottle(tmp_path, 700, bps=1 << 20) as th:
        assert th.path.parent == root / "blkio" and th.read_iops() == 700
        assert (th.path / "blkio.throttle.read_iops_device").read_text() == "254:0 700"
        assert (th.path / "blkio.throttle.read_bps_device").read_text() == f"254:0 {1 << 20}"


def test_loaders_cap_creates_without_joining_and_maps_stats(tmp_path, monkeypatch):
    """The launcher stays outside; ranks join by writing their pid to cgroup.procs."""
    root = _v2(tmp_path, monkeypatch, procs=f"{os.getpid()}\n")
    FakeKernel(root, monkeypatch)
    cap = loaders_memory.MemoryCap(32 << 20)
    cap.path.mkdir()
    (cap.path / "memory.peak").write_text("777\n")
    with cap:
        assert (cap.path / "memory.max").read_text() == str(32 << 20)
        assert not (cap.path / "cgroup.procs").exists()
        assert (root / cgroups.LEAF / "cgroup.procs").read_text().split() == [str(os.getpid())]
        cap.join(4242)
        assert (cap.path / "cgroup.procs").read_text().split() == ["4242"]
        (cap.path / "memory.events").write_text("low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n")
        s = cap.stats()
    assert s == {"cap_bytes": 32 << 20, "cap_max_usage_bytes": 777, "cap_failcnt": 5, "cap_oom_kills": 1,
                 "cap_cgroup_version": "v2"}


def test_espn_mechanism_labels():
    assert espn_memory.is_cgroup("cgroup-v1") and espn_memory.is_cgroup("cgroup-v2")
    assert not espn_memory.is_cgroup("fadvise-evict")


# ----------------------------------------------------------------------------- stale groups


def _dead_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)


def test_stale_groups_removed_on_both_hierarchies(tmp_path, monkeypatch):
    root = _tree(tmp_path, monkeypatch, "7:blkio:/\n4:memory:/a\n0::/ns\n",
                 {"memory/a/x": "", "blkio/x": "", "unified/ns/cgroup.controllers": "io memory",
                  "unified/cgroup.controllers": "io memory"})
    dead, live = _dead_pid(), os.getpid()
    made = [root / "memory/a" / f"bench-espn-{dead}", root / "blkio" / f"bench-espn-blkio-{dead}",
            root / "unified/ns" / f"bench-loaders1-{dead}"]
    kept = [root / "memory/a" / f"bench-espn-{live}", root / "unified/ns" / cgroups.LEAF,
            root / "unified/ns" / "other-1"]
    for d in made + kept:
        d.mkdir()
    assert sorted(cgroups.remove_stale()) == sorted(made)
    assert all(d.exists() for d in kept) and not any(d.exists() for d in made)
    (root / "unified/ns" / f"bench-espn-{dead}").mkdir()
    assert espn_memory.remove_worker_cgroups(dead) == [root / "unified/ns" / f"bench-espn-{dead}"]


# ----------------------------------------------------------------------------- the real hierarchy


def _real_memory_cap():
    ok, why = cgroups.memory_available()
    if not ok:
        pytest.skip(f"no usable cgroup memory controller here: {why}")


def test_real_cap_oom_kills_a_child_process():
    """A child process joins a real 48 MiB cap and writes 256 MiB: the kernel OOM-kills it alone, and the
    cap reports the kill (the loaders' OOM cells; ESPN's budgets rely on the same limit)."""
    _real_memory_cap()
    cap = cgroups.MemoryCap(48 << 20, tag="test-real").create()
    code = "import sys; sys.stdin.readline(); b = bytearray(256 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE)
    try:
        cap.join(child.pid)
        assert str(child.pid) in (cap.path / "cgroup.procs").read_text().split()
        child.communicate(b"go\n", timeout=60)
        assert child.returncode == -signal.SIGKILL
        s = cap.stats()
        assert s["cgroup_version"] == cap.version and (s["cgroup_oom_kills"] or 0) >= 1
        assert 0 < s["cgroup_max_usage_bytes"] <= (48 << 20) + (1 << 20)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        cap.close()
        _rmdir(cap.path)
    assert not cap.path.exists()


def _rmdir(d: Path) -> None:
    for _ in range(100):  # a killed process leaves its group asynchronously
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


def _real_v2_hugetlb():
    """The real unified hierarchy's root group (no cgroup.type: the true root, exempt from the
    no-internal-processes rule) with a controller free of v1 (on the project's VM: hugetlb)."""
    place = cgroups.locate("hugetlb")
    if (os.geteuid() != 0 or place is None or place.version != "v2" or place.base != cgroups.v2_root()
            or (place.base / "cgroup.type").exists()):
        pytest.skip("needs root in the root group of a cgroup v2 hierarchy that offers hugetlb")
    return place


class _Hugetlb(cgroups.ChildCgroup):
    def _controls(self):
        return {}


def test_real_v2_no_internal_processes_rule_and_join(monkeypatch):
    """On the real v2 hierarchy: enabling a controller in a group holding a process is refused (EBUSY),
    the process moves to bench-leaf and it is enabled; then this process joins a child and comes back."""
    place = _real_v2_hugetlb()
    sc = place.base / "cgroup.subtree_control"
    had = "hugetlb" in cgroups._words(sc)
    grp = place.base / cgroups.child_name("test-v2")
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        cgroups.enable(place)  # the true root may hold processes
        grp.mkdir()
        (grp / "cgroup.procs").write_text(str(sleeper.pid))
        inner = cgroups.Place("v2", "hugetlb", grp)
        with pytest.raises(OSError) as busy:
            (grp / "cgroup.subtree_control").write_text("+hugetlb")
        assert busy.value.errno == errno.EBUSY
        cgroups.enable(inner)
        assert "hugetlb" in cgroups._words(grp / "cgroup.subtree_control")
        assert (grp / cgroups.LEAF / "cgroup.procs").read_text().split() == [str(sleeper.pid)]
        monkeypatch.setattr(cgroups, "locate", lambda controller: inner)
        home = cgroups.v2_group()
        with _Hugetlb("hugetlb", "test-join") as c:
            assert cgroups.v2_group() == c.path and c.path.parent == grp
            assert any(c.path.glob("hugetlb.*"))
        assert cgroups.v2_group() == home and not c.path.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
        _rmdir(grp / cgroups.LEAF)
        _rmdir(grp)
        if not had:
            try:
                sc.write_text("-hugetlb")
            except OSError:
                pass
    assert not grp.exists()

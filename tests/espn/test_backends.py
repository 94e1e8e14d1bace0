import numpy as np
import pytest

from bench.espn.system import backends, memory_budget as memory, slow_ssd
from bench.espn.system.backends import BackendUnavailable
from bench.espn.system.memory_budget import BudgetError
from bench.core.base.errors import BenchError


def _direct_ok(path):
    try:
        backends.DirectStore(path, depth=4).close()
        return True
    except BackendUnavailable:
        return False


@pytest.mark.parametrize("kind", ["mmap", "direct"])
def test_backends_agree_with_memory(table, kind):
    path, off, *_ = table
    if kind == "direct" and not _direct_ok(path):
        pytest.skip("O_DIRECT not supported here")
    idx = np.random.default_rng(0).choice(300, 120, replace=False)
    with backends.MemoryStore(path, off) as ref, backends.open_store(kind, path, off, depth=8) as st:
        st.cold()
        a, b = ref.read(idx), st.read(idx)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
        fut = st.submit(idx, then=lambda dec: dec[2].sum())
        assert fut.result() == a[2].sum()


@pytest.mark.parametrize("engine", ["threadpool", "aio"])
def test_direct_engines(table, engine):
    path, off, *_ = table
    if not _direct_ok(path):
        pytest.skip("O_DIRECT not supported here")
    from bench.espn.system import aio

    if engine == "aio" and not aio.available():
        pytest.skip("no Linux native AIO")
    dt, iops = backends.random_read_iops(path, 200, 4, seed=0, engine=engine)
    assert dt > 0 and iops > 0
    idx = np.arange(0, 300, 3)
    with backends.MemoryStore(path, off) as ref, backends.DirectStore(path, off, 8, engine) as st:
        for x, y in zip(ref.read(idx), st.read(idx)):
            np.testing.assert_array_equal(x, y)
    # background (prefetch) reads through this engine while critical-path reads use the other one;
    # reads of one record (where decode would return views of the reused buffer) stay intact
    other = "threadpool" if engine == "aio" else "aio"
    if other == "aio" and not aio.available():
        return
    with backends.MemoryStore(path, off) as ref, \
            backends.DirectStore(path, off, 8, other, background_engine=engine) as st:
        futs = [st.submit(idx[i:i + 7]) for i in range(0, len(idx), 7)]
        one = [st.read(idx[i:i + 1]) for i in range(5)]
        for i, f in zip(range(0, len(idx), 7), futs):
            for x, y in zip(ref.read(idx[i:i + 7]), f.result()):
                np.testing.assert_array_equal(x, y)
        for i, dec in enumerate(one):
            for x, y in zip(ref.read(idx[i:i + 1]), dec):
                np.testing.assert_array_equal(x, y)


def test_cold_cache_and_resident(table):
    path, *_ = table
    with open(path, "rb") as fh:
        fh.read()
    backends.evict_page_cache(path)
    assert backends.resident_bytes(path) <= path.stat().st_size


def test_vm_swap_needs_swap(table):
    path, *_ = table
    if backends.swap_available():
        pytest.skip("this machine has swap")
    with pytest.raises(BackendUnavailable):
        backends.VMSwapStore(path)


def test_budget_plan_and_errors():
    p = memory.plan(1000, 200, frac=0.5, headroom_bytes=10)
    assert p["budget_embedding_bytes"] == 500 and p["budget_total_bytes"] == 710
    with pytest.raises(BudgetError, match="ANN index"):
        memory.plan(1000, 200, total_bytes=150)
    with pytest.raises(BudgetError):
        memory.plan(1000, 200, frac=0)


def test_cgroup_cap():
    ok, why = memory.cgroup_available()
    if not ok:
        pytest.skip(f"cgroup memory cap (v1 or v2) unavailable: {why}")
    with memory.CgroupCap(512 * 2**20, name="bench-espn-test") as cap:
        import mmap

        buf = mmap.mmap(-1, 8 * 2**20)  # fresh anonymous pages, charged to the child when touched
        buf.write(b"\1" * (8 * 2**20))
        s = cap.stats()
        assert s["cgroup_max_usage_bytes"] >= 4 * 2**20
        assert memory.cgroup_mechanism() == f"cgroup-{s['cgroup_version']}"
        buf.close()
    assert not cap.path.exists()


def test_a_cap_at_the_machine_memory_measures_without_binding():
    """The cached run's cap (memory-saved's numerator): the machine's memory as its limit, its peak recorded."""
    ok, why = memory.cgroup_available()
    if not ok:
        pytest.skip(f"cgroup memory cap (v1 or v2) unavailable: {why}")
    assert memory.machine_bytes() > 2**28
    with memory.CgroupCap(memory.machine_bytes(), name="bench-espn-test-unlimited") as cap:
        import mmap

        buf = mmap.mmap(-1, 8 * 2**20)
        buf.write(b"\1" * (8 * 2**20))
        s = cap.stats()
        assert s["cgroup_max_usage_bytes"] >= 8 * 2**20 and not s.get("cgroup_failcnt")
        buf.close()


def test_blkio_throttle_slows_direct_reads(tmp_path):
    """The emulated slower SSD: a read-IOPS cap on the table's disk, cgroup blkio (v1) or io.max (v2), as
    root."""
    path = tmp_path / "t.bin"
    path.write_bytes(np.random.default_rng(0).integers(0, 255, 8 * 2**20, dtype=np.uint8).tobytes())
    ok, why = slow_ssd.blkio_available(path)
    if not ok:
        pytest.skip(f"blkio throttle unavailable: {why}")
    try:
        backends.random_read_iops(path, 8, 1, 0)
    except (OSError, BenchError) as exc:
        pytest.skip(f"no O_DIRECT here: {exc}")
    with slow_ssd.BlkioThrottle(path, 1000, name="bench-espn-test-blkio") as th:
        assert th.read_iops() == 1000
        backends.evict_page_cache(path)
        dt, iops = backends.random_read_iops(path, 300, 16, 1)
    assert iops < 1500  # about the cap (native reads here run at tens of thousands)
    assert not th.path.exists()


def test_blkio_not_on_a_block_device():
    ok, why = slow_ssd.blkio_available("/proc/self/status")
    assert not ok and why


def test_parent_removes_a_dead_workers_cgroups(tmp_path, monkeypatch):
    from bench.espn.system import memory_budget as memory

    mem, blk = tmp_path / "mem", tmp_path / "blk"
    (mem / "bench-espn-4242").mkdir(parents=True)
    (blk / "bench-espn-blkio-4242").mkdir(parents=True)
    (mem / "bench-espn-7").mkdir()
    from bench.core.machine import cgroups

    monkeypatch.setattr(cgroups, "stale_parents", lambda: {"v1 memory": mem, "v1 blkio": blk, "v2": None})
    assert len(memory.remove_worker_cgroups(4242)) == 2
    assert not (mem / "bench-espn-4242").exists() and (mem / "bench-espn-7").exists()
    assert memory.remove_worker_cgroups(4242) == []


def test_stale_cgroups_of_dead_processes_are_removed(tmp_path):
    """After a kill -9, the next run removes the empty bench-*-<pid> cgroups of processes that are gone
    (bench.core.machine.cgroups), and keeps those of live processes and foreign names."""
    import os
    import subprocess
    import sys

    from bench.core.machine import cgroups

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    mem, blk = tmp_path / "mem", tmp_path / "blk"
    for d in (mem / f"bench-espn-{dead}", blk / f"bench-espn-blkio-{dead}", mem / f"bench-loaders-{os.getpid()}",
              mem / "bench-espn-test", mem / "other-1"):
        d.mkdir(parents=True)
    removed = cgroups.remove_stale({"memory": mem, "blkio": blk})
    assert sorted(p.name for p in removed) == sorted([f"bench-espn-{dead}", f"bench-espn-blkio-{dead}"])
    assert {p.name for p in mem.iterdir()} == {f"bench-loaders-{os.getpid()}", "bench-espn-test", "other-1"}
    assert cgroups.child_name("espn", 7) == "bench-espn-7"

"""The emulated slower SSDs (ESPN devices issue): the FUSE latency pass-through keeps its queue depth,
serves O_DIRECT reads and mmap faults byte for byte, and is always unmounted; an IOPS cap below the
disk's QD1 rate is refused."""
from __future__ import annotations

import mmap
import os

import numpy as np
import pytest

from bench.espn.system import fuse_ssd, slow_ssd


def test_iops_cap_below_qd1_is_refused():
    with pytest.raises(slow_ssd.CapBelowQd1, match="below 4x this disk's measured QD1 rate"):
        slow_ssd.check_rated_peak(20000, qd1_iops=27000)
    with pytest.raises(slow_ssd.CapBelowQd1):
        slow_ssd.check_rated_peak(100000, qd1_iops=27000)   # above QD1, but not well above
    with pytest.raises(slow_ssd.CapBelowQd1, match="not measured"):
        slow_ssd.check_rated_peak(100000, qd1_iops=float("nan"))
    slow_ssd.check_rated_peak(200000, qd1_iops=27000)      # a rated peak well above QD1


def test_throttle_refuses_before_touching_cgroups(tmp_path):
    with pytest.raises(slow_ssd.CapBelowQd1):
        slow_ssd.BlkioThrottle(tmp_path, 20000, qd1_iops=27000)


def test_refusal_is_a_config_error():
    from bench.core.base.errors import ConfigError

    assert issubclass(slow_ssd.CapBelowQd1, ConfigError)


@pytest.fixture
def backing(tmp_path):
    ok, why = fuse_ssd.available()
    if not ok:
        pytest.skip(f"FUSE latency device unavailable: {why}")
    d = tmp_path / "backing"
    d.mkdir()
    data = np.random.default_rng(0).integers(0, 256, size=4 << 20, dtype=np.uint8).tobytes()
    (d / "t.bin").write_bytes(data)
    try:
        fd = os.open(d / "t.bin", os.O_RDONLY | os.O_DIRECT)
        os.close(fd)
    except OSError as exc:
        pytest.skip(f"no O_DIRECT on the test's file system: {exc}")
    return d, data


def test_reads_are_byte_exact_direct_and_mmap(backing):
    d, data = backing
    with fuse_ssd.LatencyDevice(d, 0.0005, threads=4) as dev:
        p = dev.path("t.bin")
        assert os.path.getsize(p) == len(data)
        assert sorted(os.listdir(dev.mountpoint)) == ["t.bin"]
        fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
        try:
            buf = mmap.mmap(-1, 8192)
            assert os.preadv(fd, [buf], 40960) == 8192
            assert bytes(buf) == data[40960:49152]
        finally:
            os.close(fd)
        with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ) as m:
            assert m[123456:123456 + 5000] == data[123456:123456 + 5000]
            assert m[-10:] == data[-10:]
            from bench.espn.system import backends

            cached = backends.resident_bytes(p)   # opens the file again: the cache must stay
            assert cached >= 2 * 4096 and backends.resident_bytes(p) == cached
        backends.evict_page_cache(p)          # what a cold start does (the mapping gone)
        assert backends.resident_bytes(p) < cached


def test_device_keeps_its_queue_depth(backing):
    """At 2 ms per read, 32 reads in flight give many times the QD1 rate (the pass-through's own
    overhead included); an IOPS cap would give the same rate at both depths."""
    d, _ = backing
    with fuse_ssd.LatencyDevice(d, 0.002, threads=32) as dev:
        qd1 = fuse_ssd.measure_qd(dev.path("t.bin"), 1, 40)
        qd32 = fuse_ssd.measure_qd(dev.path("t.bin"), 32, 640)
    assert qd1["iops"] < 1 / 0.002 * 1.05        # each read waits at least the latency
    assert qd32["iops"] > 4 * qd1["iops"], (qd1, qd32)


def test_always_unmounted_even_on_error(backing):
    d, _ = backing
    mp = None
    with pytest.raises(RuntimeError, match="boom"):
        with fuse_ssd.LatencyDevice(d, 0.0, threads=4, procs=2) as dev:
            mp = dev.mountpoint
            assert fuse_ssd.is_mounted(mp)
            server = dev._server
            raise RuntimeError("boom")
    assert not fuse_ssd.is_mounted(mp)
    assert not mp.exists()
    assert server.poll() is not None   # the server process is gone too, and every process it forked
    import time

    for _ in range(50):
        try:
            os.killpg(server.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("a forked server process outlived the device")


def test_unavailable_says_what_to_install(monkeypatch):
    monkeypatch.setattr(os.path, "exists", lambda p: False if p == "/dev/fuse" else True)
    ok, why = fuse_ssd.available()
    assert not ok and "/dev/fuse" in why and "modprobe fuse" in why


def test_budget_row_says_whether_it_bound():
    """A pass whose failcnt rose, or whose cap reclaimed pages, bound; one with neither says it did not."""
    from bench.espn.system import memory_budget as memory

    bud = {"budget_frac": 0.5}
    hit = memory.bound(bud, {"failcnt": 3, "workingset_refault_file": 10}, {"failcnt": 9, "workingset_refault_file": 10},
                       "cgroup-v1", "mmap")
    assert hit["budget_bound"] and hit["failcnt_pass"] == 6 and "bound: failcnt +6" in hit["budget_bound_reason"]
    rec = memory.bound(bud, {"failcnt": 0, "pgsteal": 5}, {"failcnt": 0, "pgsteal": 50}, "cgroup-v2", "mmap")
    assert rec["budget_bound"] and rec["reclaim_pass"] == 45 and rec["reclaim_counter"] == "pgsteal"
    free = memory.bound(bud, {"failcnt": 2, "workingset_refault_file": 4}, {"failcnt": 2, "workingset_refault_file": 4},
                        "cgroup-v1", "direct")
    assert free["budget_bound"] is False and "did not bind" in free["budget_bound_reason"]
    assert memory.bound(None, {}, {}, "cgroup-v1", "memory")["budget_bound"] is False
    ev = memory.bound(bud, {}, {}, "fadvise-evict", "mmap", evictions=2)
    assert ev["budget_bound"] and "2 eviction" in ev["budget_bound_reason"]


def test_cap_holds_the_ann_index():
    from bench.espn.system import memory_budget as memory

    plan = memory.plan(1000, 300, frac=0.5, headroom_bytes=50)
    assert memory.cap_bytes(plan) == 300 + 500 + 50
    # each back end's own buffers on top: the O_DIRECT ones hold read/decode/prefetch buffers, mmap few
    assert memory.headroom_for("mmap", 8, 64) == 8 << 20
    assert memory.headroom_for("direct_prefetch", 8, 64) == memory.headroom_for("direct", 8, 64) == 64 << 20


def test_back_ends_run_in_an_order_of_each_process():
    """Back ends are interleaved: a seeded order per process and configuration, not always the same."""
    from bench.espn.worker import order

    kinds = ["mmap", "direct", "direct_prefetch"]
    orders = {tuple(order(kinds, 7, "0.50", p)) for p in range(8)}
    assert len(orders) > 1 and all(sorted(o) == sorted(kinds) for o in orders)
    assert order(kinds, 7, "0.50", 3) == order(kinds, 7, "0.50", 3)   # seeded


def test_threads_named_per_back_end():
    from bench.espn import STUDY
    from bench.espn.steps.inputs import threads_of

    p = STUDY.parameters({})
    assert "page faults serial" in threads_of("mmap", p)
    assert f"{p.io_depth} O_DIRECT preadv threads" in threads_of("direct", p)
    assert "prefetch thread" in threads_of("direct_prefetch", p, "aio")


def test_e2e_refuses_an_iops_cap_below_qd1_before_measuring():
    """The e2e step checks a configured IOPS cap against the disk's measured QD1 rate first."""
    from bench.espn import STUDY
    from bench.espn.steps import e2e

    p = STUDY.parameters({"emulated_ssd": {"enabled": True, "kind": "iops", "read_iops": 20000}})
    with pytest.raises(slow_ssd.CapBelowQd1, match="20000 is below"):
        e2e._check_cap(p, {"disk_qd1_iops": 27000.0})
    e2e._check_cap(STUDY.parameters({"emulated_ssd": {"enabled": True, "kind": "iops", "read_iops": 500000}}),
                   {"disk_qd1_iops": 27000.0})
    e2e._check_cap(STUDY.parameters({"emulated_ssd": {"enabled": True, "kind": "latency"}}), {})

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


def _fake_device(monkeypatch, tmp_path, latency_s: float, overhead_s: float):
    """A latency device whose QD1 reads are measured by a model: disk 60 us, the device the disk plus the
    pass-through's own cost plus its current wait (no mount: the calibration's logic alone)."""
    monkeypatch.setattr(fuse_ssd, "available", lambda: (True, ""))
    dev = fuse_ssd.LatencyDevice(tmp_path, latency_s)
    dev.mountpoint = tmp_path
    dev._delay = mmap.mmap(-1, fuse_ssd.DELAY.size)
    dev._set_wait(latency_s)
    monkeypatch.setattr(fuse_ssd, "qd1_read_times",
                        lambda device, disk, n, seed=0: (60e-6 + overhead_s + dev.wait_s, 60e-6))
    return dev


def test_calibration_sets_the_wait_so_the_device_adds_what_it_states(monkeypatch, tmp_path):
    """The "+100 us" device ran at 290-325 us a read against the disk's ~60 us: the pass-through's own cost
    and a sleep's overshoot came on top of its wait. Calibrated, the wait drops by what was measured on top,
    and the record says what the device added."""
    dev = _fake_device(monkeypatch, tmp_path, 100e-6, 70e-6)
    got = dev.calibrate("t.bin")
    assert got["ssd_calibrated"] and got["ssd_added_us"] == pytest.approx(100, abs=10)
    assert got["ssd_wait_us"] == pytest.approx(30, abs=10) and got["ssd_disk_read_us"] == pytest.approx(60)
    assert dev.describe()["ssd_added_us"] == got["ssd_added_us"] and dev.describe()["ssd_latency_us"] == 100


def test_a_device_whose_own_cost_exceeds_its_latency_says_so(monkeypatch, tmp_path):
    dev = _fake_device(monkeypatch, tmp_path, 100e-6, 180e-6)
    got = dev.calibrate("t.bin")
    assert got["ssd_wait_us"] == 0 and not got["ssd_calibrated"] and got["ssd_added_us"] == pytest.approx(180)


def test_a_mounted_device_records_what_it_measured(backing):
    """On a real mount the calibration measures the device against the disk and takes the pass-through's own
    cost off the wait (so the wait ends below the stated latency)."""
    d, _ = backing
    with fuse_ssd.LatencyDevice(d, 0.001, threads=4) as dev:
        got = dev.calibrate("t.bin", reads=60, rounds=3)
    assert {"ssd_added_us", "ssd_read_us", "ssd_disk_read_us", "ssd_wait_us", "ssd_calibrated"} <= set(got)
    assert np.isfinite(got["ssd_added_us"]) and got["ssd_read_us"] > got["ssd_disk_read_us"]
    assert got["ssd_wait_us"] < 1000


def test_the_e2e_step_records_the_devices_calibration(monkeypatch, tmp_path):
    """Every row measured on the latency device carries what its calibration measured in that process."""
    import pandas as pd

    from bench.core.measuring.step import Context
    from bench.espn import STUDY
    from bench.espn.steps import e2e

    class Fake:
        def __init__(self, *a, **kw):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def path(self, name):
            return tmp_path / name

        def calibrate(self, name, seed=0):
            return {"ssd_added_us": 104.0, "ssd_read_us": 165.0, "ssd_disk_read_us": 61.0, "ssd_wait_us": 35.0,
                    "ssd_calibration_rounds": 2, "ssd_calibrated": True}

    monkeypatch.setattr(fuse_ssd, "available", lambda: (True, ""))
    monkeypatch.setattr(fuse_ssd, "LatencyDevice", Fake)
    monkeypatch.setattr(fuse_ssd, "measure_qd", lambda path, qd, n, seed=0: {"iops": 1000.0 * qd})
    monkeypatch.setattr(e2e, "spawn_worker", lambda *a, **kw: pd.DataFrame([{"backend": "mmap", "status": "ok"}]))
    params = STUDY.parameters({"emulated_ssd": {"enabled": True, "latencies_us": [100]}})
    ctx = Context(study="espn", step="e2e", params=params, profile="t", seed=1, threads=1, out=tmp_path)
    b = type("B", (), {"dir": tmp_path, "table": tmp_path / "table.espn"})()
    frames = e2e._latency_ssd(ctx, b, [{"budget_frac": 0.5}], ["mmap"], "cgroup-v1")
    rows = pd.concat(frames)
    assert (rows.ssd_added_us == 104.0).all() and (rows.ssd_wait_us == 35.0).all()

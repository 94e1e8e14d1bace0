"""Memory accounting: summed PSS over a process tree, checked against /proc/<pid>/smaps summed by our code
(psutil reads smaps_rollup itself, so that file would be no second source)."""
from __future__ import annotations

import os
import signal
import time

import pytest

from bench.loaders.system import footprint
from bench.loaders.system.errors import ConfigError


def _tree_holding_memory(n_children=2, mb=40):
    """A forked process with ``n_children`` children; every process holds ``mb`` MiB it wrote
    (private), and the children share the parent's pages until they write (copy on write)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(r)
        block = bytearray(os.urandom(1 << 20)) * mb
        for _ in range(n_children):
            if os.fork() == 0:
                mine = bytearray(mb << 20)  # private pages
                for i in range(0, len(mine), 4096):
                    mine[i] = 1
                os.write(w, b"c")
                time.sleep(60)
                os._exit(0)
        os.write(w, b"p")
        time.sleep(60)
        del block
        os._exit(0)
    os.close(w)
    got = b""
    while len(got) < n_children + 1:
        got += os.read(r, 8)
    os.close(r)
    return pid


def test_summed_pss_agrees_with_smaps_within_10_percent():
    pid = _tree_holding_memory()
    try:
        row = footprint.reading([pid], independent=True, per_process=True)
        assert row["n_procs"] == 3
        assert row["pss_bytes"] > 100 << 20
        assert abs(row["pss_bytes"] - row["pss_smaps_bytes"]) <= 0.10 * row["pss_smaps_bytes"]
        assert footprint.smaps_disagreement(row) <= 0.10
        assert row["pss_smaps_lo"] <= row["pss_smaps_hi"]
        # PSS splits shared pages: the sum stays below the summed RSS, which counts them per process
        assert row["pss_bytes"] < row["rss_bytes"]
        assert sorted(r for _, r, _, _ in row["procs"]) == ["main", "worker", "worker"]
    finally:
        for p in footprint.tree([pid]):
            p.send_signal(signal.SIGKILL)
        os.waitpid(pid, 0)


def test_sampler_reads_in_the_background():
    pid = _tree_holding_memory(1, 8)
    try:
        with footprint.Sampler([pid], interval_s=0.02, independent_every=2) as s:
            deadline = time.monotonic() + 10
            while len(s.samples) < 3 and time.monotonic() < deadline:  # readings are slow on a busy machine
                time.sleep(0.05)
        assert len(s.samples) >= 3 and any("pss_smaps_bytes" in x for x in s.samples)
    finally:
        for p in footprint.tree([pid]):
            p.send_signal(signal.SIGKILL)
        os.waitpid(pid, 0)
    with pytest.raises(ConfigError):
        footprint.Sampler([1], interval_s=0)


def test_cap_refused_without_root(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert footprint.cap_available() == (False, "not root")
    with pytest.raises(ConfigError, match="memory cap requested but unavailable: not root"):
        footprint.MemoryCap(1 << 30)


def test_the_second_reading_is_another_file_than_psutils():
    """Issue 29: a check against a source must not read the same file twice. psutil's PSS comes from
    smaps_rollup where the kernel has it; the check sums /proc/<pid>/smaps; both agree on this process."""
    import inspect

    assert "smaps_rollup" not in inspect.getsource(footprint.smaps_pss)
    pid = os.getpid()
    a, b = footprint.smaps_pss(pid), footprint.smaps_rollup_pss(pid)
    assert a and b and abs(a - b) <= 0.10 * b


def test_the_sampler_checks_smaps_while_the_ranks_hold_their_memory():
    """With a check hook the readings are plain; the one reading with the smaps check is taken as soon as the
    ranks hold (no wait for the interval), marked, and then releases them; a run that ends first releases
    them too."""
    import os
    import time

    class Hook:
        def __init__(self):
            self.held, self.released = False, 0

        def started(self):
            return False

        def ready(self):
            return self.held

        def release(self):
            self.released += 1

    hook = Hook()
    with footprint.Sampler([os.getpid()], interval_s=5.0, independent_every=1, check=hook) as s:
        deadline = time.monotonic() + 10
        while not s.samples and time.monotonic() < deadline:
            time.sleep(0.01)
        t_hold = time.monotonic()
        hook.held = True
        while not hook.released and time.monotonic() < deadline:
            time.sleep(0.01)
        waited = time.monotonic() - t_hold
    assert "pss_smaps_bytes" not in s.samples[0]   # plain readings beside the check
    checked = [x for x in s.samples if x.get("check")]
    assert len(checked) == 1 and "pss_smaps_bytes" in checked[0] and waited < 4 and hook.released == 1
    other = Hook()
    with footprint.Sampler([os.getpid()], interval_s=5.0, check=other):
        pass
    assert other.released == 1   # never a rank left waiting


def test_the_sampler_reads_memory_as_the_measured_steps_begin():
    """A short measured phase still has a memory reading: the sampler reads as soon as every rank has begun
    its measured steps, not an interval later (a plain reading: no smaps walk inside a timed step)."""
    import os
    import time

    class Hook:
        on = False

        def started(self):
            return self.on

        def ready(self):
            return False

        def release(self):
            pass

    hook = Hook()
    with footprint.Sampler([os.getpid()], interval_s=5.0, check=hook) as s:
        deadline = time.monotonic() + 10
        while not s.samples and time.monotonic() < deadline:
            time.sleep(0.01)
        t_start = time.monotonic()
        hook.on = True
        while len(s.samples) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        waited = time.monotonic() - t_start
    assert len(s.samples) >= 2 and waited < 4 and "pss_smaps_bytes" not in s.samples[1]


def test_a_run_without_the_check_still_marks_its_measured_start(tmp_path):
    """Every round reads memory as the measured steps begin; only the checked round holds the ranks."""
    from bench.loaders.system import launch

    (tmp_path / "measured.0").touch()
    (tmp_path / "held.0").touch()
    assert launch._Held(str(tmp_path), 1, hold=False).started()
    assert not launch._Held(str(tmp_path), 1, hold=False).ready() and launch._Held(str(tmp_path), 1).ready()
    assert not launch._Held(str(tmp_path), 2).started()

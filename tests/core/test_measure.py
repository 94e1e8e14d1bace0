"""Measurement helpers (behaviour, not speed: no timing assertions that could flake)."""
from __future__ import annotations

import pytest

from bench.core.measuring import measure


def test_repeat_separates_warmup_and_keeps_results():
    calls = []
    t = measure.repeat(lambda: calls.append(1) or len(calls), repeats=3, warmup=2, keep_results=True)
    assert len(t.warmup) == 2 and len(t.runs) == 3 and t.results == [3, 4, 5]
    assert all(s >= 0 for s in t.warmup + t.runs)
    with pytest.raises(ValueError):
        measure.repeat(lambda: None, repeats=0)


def test_summarize():
    s = measure.summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s["median"] == 3.0 and s["min"] == 1.0 and s["max"] == 100.0 and s["n"] == 5
    assert s["p25"] == 2.0 and s["p75"] == 4.0


def test_set_threads_is_explicit_and_recorded():
    import faiss
    import torch

    info = measure.set_threads(1)
    assert info["faiss_omp_threads"] == 1 == faiss.omp_get_max_threads()
    assert torch.get_num_threads() == 1
    assert measure.thread_settings()["OMP_NUM_THREADS"] == "1"
    measure.set_threads(2)
    with pytest.raises(ValueError):
        measure.set_threads(0)


class _FakeSpan:
    """quiet.Span stand-in: the first ``busy_first`` windows saw others at 60% of the machine."""

    calls = 0
    busy_first = 1

    def __init__(self, *a, **k):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        type(self).calls += 1
        self.wall_s = 0.5
        self.others_share = 0.6 if type(self).calls <= type(self).busy_first else 0.01

    @property
    def busy(self):
        return self.others_share > 0.25


def test_a_repeat_that_ran_beside_others_is_run_again_on_its_own_window(monkeypatch, quiet_checks):
    from bench.core.measuring import quiet

    _FakeSpan.calls, _FakeSpan.busy_first = 0, 2   # the warm-up and the first measured run were busy
    monkeypatch.setattr(quiet, "Span", _FakeSpan)
    monkeypatch.setattr(quiet, "wait_until_quiet", lambda **k: {"quiet": True})
    measure.drain_log()
    t = measure.repeat(lambda: None, repeats=3, warmup=1)
    assert len(t.runs) == 3 and t.reruns == 1 and t.busy == [False, False, False]
    log = measure.drain_log()
    assert log[0]["reruns"] == 1 and log[0]["still_busy"] == 0 and measure.drain_log() == []


def test_a_repeat_still_busy_after_its_rerun_is_flagged(monkeypatch, quiet_checks):
    from bench.core.measuring import quiet

    _FakeSpan.calls, _FakeSpan.busy_first = 0, 100
    monkeypatch.setattr(quiet, "Span", _FakeSpan)
    monkeypatch.setattr(quiet, "wait_until_quiet", lambda **k: {"quiet": True})
    t = measure.repeat(lambda: None, repeats=2, warmup=0)
    assert t.busy == [True, True] and measure.drain_log()[0]["still_busy"] == 2


def test_a_repeat_set_too_spread_to_be_noise_is_flagged_as_pyperf_does():
    wide = measure.Timings(warmup=[], runs=[1.0, 1.0, 1.5, 0.6])
    assert wide.unstable and wide.cv > 0.1
    tight = measure.Timings(warmup=[], runs=[1.0, 1.01, 0.99])
    assert not tight.unstable
    assert not measure.Timings(warmup=[], runs=[1.0, 2.0]).unstable   # too few runs to say

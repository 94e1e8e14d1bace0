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

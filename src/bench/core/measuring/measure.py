"""Honest wall-clock measurement shared by every study.

- ``time.perf_counter`` wall-clock timers (never process CPU time, a flaw of some original code);
- warm-up runs executed, timed and reported separately, never mixed into the measured runs;
- repeated runs summarised by median and spread (IQR, min, max);
- explicit thread counts for faiss, torch and BLAS (both faiss and torch bring an OpenMP runtime);
- CUDA synchronised before a timer stops when the measured code used the GPU.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import Any, Callable, Sequence

import numpy as np

from ..machine import devices

_THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def set_threads(n: int) -> dict[str, Any]:
    """Set faiss, torch and BLAS thread counts to ``n`` and return the settings now in force.

    torch is set directly when the process has imported it; otherwise ``OMP_NUM_THREADS`` (set here,
    before torch loads its OpenMP runtime) gives it ``n`` intra-op threads when it is imported later,
    so a step that never uses torch does not pay 2-3 s to import it."""
    if n < 1:
        raise ValueError(f"thread count must be >= 1, got {n}")
    for var in _THREAD_ENV:
        os.environ[var] = str(n)
    settings: dict[str, Any] = {"threads": n}
    try:
        import faiss

        faiss.omp_set_num_threads(n)
        settings["faiss_omp_threads"] = faiss.omp_get_max_threads()
    except ImportError:  # pragma: no cover
        pass
    settings.update(_torch_threads(set_to=n))
    return settings


def _torch_threads(set_to: int | None = None) -> dict[str, Any]:
    if "torch" not in sys.modules:
        return {"torch_threads": "OMP_NUM_THREADS (torch not imported yet)"}
    import torch

    if set_to is not None:
        torch.set_num_threads(set_to)
    return {"torch_threads": torch.get_num_threads()}


def thread_settings() -> dict[str, Any]:
    """The thread settings in force now (for provenance)."""
    settings: dict[str, Any] = {v: os.environ.get(v) for v in _THREAD_ENV}
    try:
        import faiss

        settings["faiss_omp_threads"] = faiss.omp_get_max_threads()
    except ImportError:  # pragma: no cover
        pass
    settings.update(_torch_threads())
    return settings


class Timer:
    """Context manager measuring wall-clock seconds; synchronises CUDA first when ``cuda=True``."""

    def __init__(self, cuda: bool = False):
        self.cuda = cuda
        self.seconds = float("nan")

    def __enter__(self) -> "Timer":
        if self.cuda:
            devices.synchronize()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        if self.cuda:
            devices.synchronize()
        self.seconds = time.perf_counter() - self._t0


@dataclasses.dataclass
class Timings:
    """Wall-clock seconds of the warm-up runs and of the measured runs of one configuration."""

    warmup: list[float]
    runs: list[float]
    results: list[Any] = dataclasses.field(default_factory=list, repr=False)


def repeat(fn: Callable[[], Any], repeats: int, warmup: int = 1, cuda: bool = False,
           keep_results: bool = False) -> Timings:
    """Run ``fn`` ``warmup`` times (timed, reported apart) then ``repeats`` measured times."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    warm, runs, results = [], [], []
    for i in range(warmup + repeats):
        with Timer(cuda=cuda) as t:
            out = fn()
        if i < warmup:
            warm.append(t.seconds)
        else:
            runs.append(t.seconds)
            if keep_results:
                results.append(out)
    return Timings(warmup=warm, runs=runs, results=results)


def summarize(values: Sequence[float]) -> dict[str, float]:
    """Median and spread of repeated measurements."""
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        raise ValueError("no measurements to summarise")
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return {
        "n": int(a.size),
        "median": float(med),
        "p25": float(q1),
        "p75": float(q3),
        "iqr": float(q3 - q1),
        "min": float(a.min()),
        "max": float(a.max()),
        "mean": float(a.mean()),
        "std": float(a.std(ddof=1)) if a.size > 1 else 0.0,
    }

"""Honest wall-clock measurement shared by every study.

- ``time.perf_counter`` wall-clock timers (never process CPU time, a flaw of some original code);
- warm-up runs executed, timed and reported separately, never mixed into the measured runs;
- repeated runs summarised by median and spread (IQR, min, max);
- explicit thread counts for faiss, torch and BLAS (both faiss and torch bring an OpenMP runtime);
- CUDA synchronised before a timer stops when the measured code used the GPU;
- others' share of the machine measured over each repeat's own window (:class:`bench.core.measuring.quiet.Span`):
  a repeat that ran while others used the machine is run again after a short wait (bounded), and a repeat
  set whose spread is too wide to be noise is flagged, as pyperf does (standard deviation above
  :data:`UNSTABLE_CV` of the mean). What each :func:`repeat` saw is kept in :data:`LOG` for the step
  skeleton to record (:func:`drain_log`).
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import Any, Callable, Sequence

import numpy as np

from ..machine import devices
from . import quiet

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


UNSTABLE_CV = 0.10    # pyperf's warning: a standard deviation above 10% of the mean
MIN_SPAN_S = 0.1      # a repeat shorter than this is too short for its own busy share (clock ticks of 10 ms)
LOG: list[dict] = []  # one entry per repeat set run in this process (what the quiet check saw)


@dataclasses.dataclass
class Timings:
    """Wall-clock seconds of the warm-up runs and of the measured runs of one configuration, with others'
    share of the machine over each measured run and whether it stayed busy after its rerun."""

    warmup: list[float]
    runs: list[float]
    results: list[Any] = dataclasses.field(default_factory=list, repr=False)
    others: list[float] = dataclasses.field(default_factory=list)
    busy: list[bool] = dataclasses.field(default_factory=list)
    reruns: int = 0

    @property
    def cv(self) -> float:
        """Standard deviation over mean of the measured runs (nan below three runs)."""
        a = np.asarray(self.runs, dtype=float)
        return float(a.std(ddof=1) / a.mean()) if a.size >= 3 and a.mean() > 0 else float("nan")

    @property
    def unstable(self) -> bool:
        """The spread is too wide to be noise (pyperf's rule): flagged, never hidden."""
        return self.cv > UNSTABLE_CV


def _one(fn: Callable[[], Any], cuda: bool) -> tuple[float, Any, quiet.Span]:
    with quiet.Span() as span:
        with Timer(cuda=cuda) as t:
            out = fn()
    return t.seconds, out, span


def repeat(fn: Callable[[], Any], repeats: int, warmup: int = 1, cuda: bool = False,
           keep_results: bool = False) -> Timings:
    """Run ``fn`` ``warmup`` times (timed, reported apart) then ``repeats`` measured times. Each measured run
    is watched on its own window: one that ran while others used more than :data:`quiet.BUSY_SHARE` of the
    machine is run again after a bounded wait (up to :data:`quiet.RERUNS` times); runs too short for a
    window of their own are judged together (with ``BENCH_QUIET=off``, :func:`quiet.checks_on`, none is run
    again). What it saw goes to :data:`LOG`."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    warm = [_one(fn, cuda)[0] for _ in range(warmup)]
    out = Timings(warmup=warm, runs=[])
    for _ in range(repeats):
        for attempt in range(quiet.RERUNS + 1):
            s, res, span = _one(fn, cuda)
            busy = span.busy and span.wall_s >= MIN_SPAN_S
            if not busy or attempt == quiet.RERUNS or not quiet.checks_on():
                break
            out.reruns += 1
            quiet.wait_until_quiet(bound_s=quiet.REPEAT_WAIT_S)
        out.runs.append(s)
        out.others.append(span.others_share)
        out.busy.append(busy)
        if keep_results:
            out.results.append(res)
    _short_runs_together(out)
    LOG.append({"repeats": repeats, "reruns": out.reruns, "still_busy": int(sum(out.busy)),
                "others_share_max": max(out.others) if out.others else None,
                "cv": None if out.cv != out.cv else round(out.cv, 4), "unstable": out.unstable})
    return out


def _short_runs_together(t: Timings) -> None:
    """Runs too short for their own window count as busy when others' share over all of them is."""
    short = [i for i, s in enumerate(t.runs) if s < MIN_SPAN_S]
    total = sum(t.runs[i] for i in short)
    if not short or total < MIN_SPAN_S:
        return
    share = sum(t.others[i] * t.runs[i] for i in short) / total
    if share > quiet.BUSY_SHARE:
        for i in short:
            t.busy[i] = True


def drain_log() -> list[dict]:
    """What every :func:`repeat` in this process saw since the last call, and forget it."""
    out = list(LOG)
    LOG.clear()
    return out


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

"""The step skeleton every study's measurement steps run on.

A step is a function ``step(ctx: Context) -> Result``: it measures and returns tidy rows. The skeleton
(:func:`execute`) does the rest the same way for every study: explicit thread counts, a quiet-machine
check before and after (:mod:`bench.core.quiet`), provenance collected at the start (load, software,
hardware, config and its hash, seed), the ``machine_busy`` and ``source`` columns, and the atomic write
of the record set (:mod:`bench.core.records`).

Repeats across processes (issue #18: verdicts that hold between runs). A step declared with
``processes=True`` (:func:`bench.core.study.step`) can split its measured repeats: with
``ctx.processes = P > 1`` it runs ``P`` times, each in a fresh interpreter (``spawn``), one after another,
each doing :meth:`Context.share` of its repeats; the rows carry a ``process`` column. An interval drawn
over processes (:func:`bench.core.claims.bootstrap_ci` with ``groups``) then covers what differs between
two runs (page cache and heap layout, thread pools, a noisy neighbour), not only the noise within one.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from . import measure, provenance, quiet, records
from .errors import ConfigError


@dataclasses.dataclass
class Context:
    """What a step is given: the study's typed parameters (``params``, a frozen dataclass built from the
    validated profile section, which is kept as ``section`` for provenance) and the run settings."""

    study: str
    step: str
    params: Any
    profile: str
    seed: int
    threads: int
    out: Path
    inputs: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    dataset: str | None = None
    section: dict = dataclasses.field(default_factory=dict)
    processes: int = 1    # fresh processes a ``processes=True`` step splits its repeats over
    process: int = 0      # which of them this one is

    def share(self, repeats: int) -> int:
        """This process's part of ``repeats`` measured repeats (at least one): split as evenly as it goes,
        the first processes taking one more."""
        if self.processes <= 1:
            return repeats
        base, extra = divmod(repeats, self.processes)
        return max(1, base + (1 if self.process < extra else 0))

    def shared_total(self, repeats: int) -> int:
        """The measured repeats all the processes run together (``repeats``, or one per process if more)."""
        return sum(dataclasses.replace(self, process=i).share(repeats) for i in range(max(1, self.processes)))

    def input(self, key: str) -> str:
        """The one path given for ``key`` (``--input key=path``)."""
        paths = self.inputs.get(key)
        if not paths:
            raise ConfigError(f"{self.study} {self.step}: needs --input {key}=PATH")
        if len(paths) > 1:
            raise ConfigError(f"{self.study} {self.step}: expected one --input {key}=PATH, got {len(paths)}")
        return paths[0]

    def optional(self, key: str) -> str | None:
        return self.input(key) if self.inputs.get(key) else None


@dataclasses.dataclass
class Result:
    """What a step returns: its rows and, in words, what was measured and how."""

    records: pd.DataFrame
    method: str
    summary: pd.DataFrame | None = None
    provenance: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    dataset_id: str | None = None
    dataset_checksum: str | None = None
    source: str = "measured"   # default for rows that carry no ``source`` column


def _in_process(ctx: Context, step: Callable[[Context], Result]) -> Result:
    measure.set_threads(ctx.threads)
    return step(ctx)


def _processes(ctx: Context, step: Callable[[Context], Result]) -> Result:
    """``step`` run ``ctx.processes`` times, each in a fresh interpreter, one after another; the rows
    of all of them with a ``process`` column, the first run's method and provenance."""
    spawn = multiprocessing.get_context("spawn")
    results = []
    for i in range(ctx.processes):
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
            results.append(pool.submit(_in_process, dataclasses.replace(ctx, process=i), step).result())
    first = results[0]
    rows = pd.concat([r.records.assign(process=i) for i, r in enumerate(results)], ignore_index=True)
    summaries = [r.summary.assign(process=i) for i, r in enumerate(results) if r.summary is not None]
    prov = {**first.provenance, "processes": {
        "count": ctx.processes, "how": "each a fresh Python interpreter (multiprocessing spawn), run one after "
        "another with the same seed and inputs, each doing its share of the measured repeats (and its own "
        "warm-up); rows carry `process`, and intervals resample processes, then runs within them"}}
    return dataclasses.replace(first, records=rows, provenance=prov,
                               summary=pd.concat(summaries, ignore_index=True) if summaries else None)


def execute(ctx: Context, step: Callable[[Context], Result]) -> Path:
    """Run ``step`` under the common protocol and write its record set to ``ctx.out`` (in
    ``ctx.processes`` fresh processes where the step declares ``processes=True``)."""
    thread_info = measure.set_threads(ctx.threads)
    before = quiet.sample()
    prov = provenance.collect(profile=ctx.profile, config=ctx.section or ctx.params, seed=ctx.seed)
    split = ctx.processes > 1 and getattr(getattr(step, "step", None), "processes", False)
    res = _processes(ctx, step) if split else step(dataclasses.replace(ctx, processes=1))
    after = quiet.sample()
    busy = quiet.is_busy(before, after)
    df = res.records.copy()
    if "source" not in df:
        df["source"] = res.source
    if "phase" not in df:
        df["phase"] = "measured"
    df["machine_busy"] = busy
    prov.update({"study": ctx.study, "step": ctx.step, "method": res.method,
                 "dataset_id": res.dataset_id or ctx.dataset, "dataset_checksum": res.dataset_checksum,
                 "inputs": ctx.inputs, "thread_settings": thread_info,
                 "quiet_check": {"before": before, "after": after, "busy": busy,
                                 "threshold_busy_share": quiet.BUSY_SHARE}})
    prov.update(res.provenance)
    return records.write(ctx.out, df, prov, res.summary)

"""The step skeleton every study's measurement steps run on.

A step is a function ``step(ctx: Context) -> Result``: it measures and returns tidy rows. The skeleton
(:func:`execute`) does the rest the same way for every study: explicit thread counts, a quiet-machine
check before and after (:mod:`bench.core.measuring.quiet`), provenance collected at the start (load, software,
hardware, config and its hash, seed), the ``machine_busy`` and ``source`` columns, and the atomic write
of the record set (:mod:`bench.core.measuring.records`).

Repeats across processes (verdicts that hold between runs). A step declared with
``processes=True`` (:func:`bench.core.declaring.study.step`) can split its measured repeats: with
``ctx.processes = P > 1`` it runs ``P`` times, each in a fresh interpreter (``spawn``), one after another,
each doing :meth:`Context.share` of its repeats; the rows carry a ``process`` column. An interval drawn
over processes (:func:`bench.core.judging.intervals.bootstrap_ci` with ``groups``) then covers what differs between
two runs (page cache and heap layout, thread pools, a noisy neighbour), not only the noise within one.

Measured again, not flagged: before the step the skeleton waits, with a bound, until the machine
is quiet; each fresh process (or a short whole step) that ran while other processes used the machine is run
again after another wait, with a bound (:mod:`bench.core.measuring.quiet`). Rows carry ``machine_busy`` (still busy
after the reruns), ``reruns`` and ``others_share``; the provenance records every wait and rerun.

Enough repeats to decide: a step declared with ``decide=fn`` runs a fixed two-stage design
(:mod:`bench.core.measuring.sequential`): when ``fn(rows, params)`` says the stage-1 interval does not clear its
threshold, as many fresh processes again run as stage 2; rows carry ``stage``.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from . import measure, provenance, quiet, records
from ..base.errors import ConfigError


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
    return _logged(ctx, step)


def _logged(ctx: Context, step: Callable[[Context], Result]) -> Result:
    """``step(ctx)`` with what its repeat sets saw (:func:`bench.core.measuring.measure.repeat`: others'
    share over each repeat's window, reruns, repeats still busy, sets too spread to be noise) in its
    provenance as ``repeat_sets``."""
    measure.drain_log()
    res = step(ctx)
    return dataclasses.replace(res, provenance={**res.provenance, "repeat_sets": measure.drain_log()})


def _attempts(run: Callable[[], Result], rerun_ok: Callable[[float], bool]) -> tuple[Result, dict]:
    """``run()`` under a :class:`quiet.Span`; run again (after a bounded wait for quiet) while it was busy,
    up to :data:`quiet.RERUNS` times and while ``rerun_ok(seconds it took)``. The last result and a log."""
    log = {"attempts": []}
    for attempt in range(quiet.RERUNS + 1):
        if attempt:
            log["attempts"][-1]["wait_before_rerun"] = quiet.wait_until_quiet()
        with quiet.Span() as span:
            res = run()
        sets = getattr(res, "provenance", {}).get("repeat_sets", [])
        record = {**span.record(), "repeats_still_busy": sum(s["still_busy"] for s in sets),
                  "repeats_rerun": sum(s["reruns"] for s in sets),
                  "unstable_sets": sum(bool(s["unstable"]) for s in sets)}
        record["busy"] = bool(record["busy"] or record["repeats_still_busy"])
        log["attempts"].append(record)
        if not record["busy"] or attempt == quiet.RERUNS or not rerun_ok(span.wall_s):
            break
    last = log["attempts"][-1]
    log.update(reruns=len(log["attempts"]) - 1, busy=last["busy"], others_share=last["others_share"],
               unstable=last["unstable_sets"] > 0)
    return res, log


def _one_process(ctx: Context, step: Callable[[Context], Result], i: int) -> tuple[Result, dict]:
    spawn = multiprocessing.get_context("spawn")

    def run() -> Result:
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
            return pool.submit(_in_process, dataclasses.replace(ctx, process=i), step).result()
    return _attempts(run, lambda s: True)


def _tag(res: Result, log: dict, **cols) -> pd.DataFrame:
    """The rows with what the quiet check saw and ``process_uid``: the fresh process they came from, unique
    across steps, datasets and runs (intervals cluster by it: :func:`bench.core.judging.intervals.process_of`)."""
    return res.records.assign(machine_busy=log["busy"], reruns=log["reruns"], others_share=log["others_share"],
                              repeats_unstable=log.get("unstable", False), process_uid=uuid.uuid4().hex[:16],
                              **cols)


def _processes(ctx: Context, step: Callable[[Context], Result]) -> tuple[Result, dict]:
    """``step`` run ``ctx.processes`` times, each in a fresh interpreter, one after another (each busy one
    again, with a bound); with ``decide`` declared, a second stage of as many when the first does not
    decide. The rows of all of them with ``process`` (and ``stage``), the first run's method and provenance."""
    decide = getattr(getattr(step, "step", None), "decide", None)
    results, logs, frames = [], [], []

    def stage(first: int, n: int, number: int | None) -> None:
        for i in range(first, first + n):
            res, log = _one_process(ctx, step, i)
            results.append(res)
            logs.append(log)
            frames.append(_tag(res, log, process=i, **({"stage": number} if number else {})))

    stage(0, ctx.processes, 1 if decide else None)
    stages = 1
    if decide is not None and not decide(pd.concat(frames, ignore_index=True), ctx.params):
        stage(ctx.processes, ctx.processes, 2)
        stages = 2
    first = results[0]
    rows = pd.concat(frames, ignore_index=True)
    summaries = [r.summary.assign(process=i) for i, r in enumerate(results) if r.summary is not None]
    prov = {**first.provenance, "processes": {
        "count": len(results), "how": "each a fresh Python interpreter (multiprocessing spawn), run one after "
        "another with the same seed and inputs, each doing its share of the measured repeats (and its own "
        "warm-up); rows carry `process`, and intervals resample processes, then runs within them"}}
    if decide is not None:
        from . import sequential

        prov["sequential"] = {"design": sequential.METHOD, "stages": stages, "stage_size": ctx.processes}
    return (dataclasses.replace(first, records=rows, provenance=prov,
                                summary=pd.concat(summaries, ignore_index=True) if summaries else None),
            {"per_process": logs})


def execute(ctx: Context, step: Callable[[Context], Result]) -> Path:
    """Run ``step`` under the common protocol and write its record set to ``ctx.out`` (in
    ``ctx.processes`` fresh processes where the step declares ``processes=True``): wait for a quiet
    machine first, rerun busy repeats (bounded), record the waits and reruns. A step declared
    ``timed=False`` (it times nothing) neither waits nor reruns; the CPU beside it is still recorded."""
    thread_info = measure.set_threads(ctx.threads)
    decl = getattr(step, "step", None)
    timed = getattr(decl, "timed", True)
    before = quiet.wait_until_quiet() if timed else {**quiet.sample(), "waited_s": 0.0, "quiet": None}
    prov = provenance.collect(profile=ctx.profile, config=ctx.section or ctx.params, seed=ctx.seed)
    split = ctx.processes > 1 and getattr(decl, "processes", False)
    if split:
        res, log = _processes(ctx, step)
        df = res.records.copy()
    else:
        res, log = _attempts(lambda: _logged(dataclasses.replace(ctx, processes=1), step),
                             lambda s: timed and s <= quiet.RERUN_MAX_S)
        if not timed:   # what others ran beside it changes nothing in its rows
            log.update(busy=False, untimed=True)
        df = _tag(res, log)
    after = quiet.sample()
    busy = bool(df["machine_busy"].any())
    if "source" not in df:
        df["source"] = res.source
    if "phase" not in df:
        df["phase"] = "measured"
    prov.update({"study": ctx.study, "step": ctx.step, "method": res.method,
                 "dataset_id": res.dataset_id or ctx.dataset, "dataset_checksum": res.dataset_checksum,
                 "inputs": ctx.inputs, "thread_settings": thread_info,
                 "quiet_check": {"before": before, "after": after, "busy": busy, "repeats": log,
                                 "threshold_busy_share": quiet.BUSY_SHARE, "wait_bound_s": quiet.WAIT_BOUND_S,
                                 "reruns_bound": quiet.RERUNS,
                                 "how": "waited for a quiet machine before the step; others' share of the CPU "
                                        "measured over each timed repeat's own window (bench.core.measuring."
                                        "measure.repeat) and over each fresh process; a busy repeat run again "
                                        "after a short wait, a busy process or short step after another wait "
                                        "(bounded); machine_busy: still busy after that; repeats_unstable: a "
                                        "repeat set whose standard deviation exceeds "
                                        f"{measure.UNSTABLE_CV:.0%} of its mean (pyperf's rule)"
                                 if timed else "the step times nothing (modelled or simulated rows): no wait "
                                 "for a quiet machine and no rerun; others' share of the CPU recorded only"}})
    prov.update(res.provenance)
    return records.write(ctx.out, df, prov, res.summary)

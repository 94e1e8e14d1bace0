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

Rows of two levels: a step declared with ``levels=("run", "query")`` returns rows of both in one record set,
each saying which it is in its ``level`` column (:func:`check_levels`; read one level with
:func:`bench.core.measuring.records.at_level`).

Builds record their own cost: :func:`build` runs a build step (``kind="build"``: it writes ``ctx.out``) and
writes one row beside its output (:func:`bench.core.declaring.study.build_records`): wall time, CPU time,
the process's peak resident memory while the build ran and its resident memory when it began, threads, the
size of what it wrote, others' share of the machine, with provenance. A build neither waits for a quiet machine nor reruns (one build is one reading: a claim on
it decides nothing from it alone, :mod:`bench.core.judging.claims`).

``BENCH_QUIET=off`` (:func:`bench.core.measuring.quiet.checks_on`) turns the waits, samples and reruns off for
tests that measure nothing; the provenance says so.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import os
import resource
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from . import measure, provenance, quiet, records
from ..base.errors import ConfigError
from ..declaring.study import LEVEL, build_records


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
    on = quiet.checks_on()
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
        if not record["busy"] or attempt == quiet.RERUNS or not on or not rerun_ok(span.wall_s):
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
    ``timed=False`` (it times nothing) neither waits nor reruns; the CPU beside it is still recorded. With
    ``BENCH_QUIET=off`` nothing waits, samples or reruns (tests)."""
    thread_info = measure.set_threads(ctx.threads)
    decl = getattr(step, "step", None)
    timed, on = getattr(decl, "timed", True), quiet.checks_on()
    before = quiet.off_record() if not on else quiet.wait_until_quiet() if timed else \
        {**quiet.sample(), "waited_s": 0.0, "quiet": None}
    prov = provenance.collect(profile=ctx.profile, config=ctx.section or ctx.params, seed=ctx.seed)
    if ctx.processes > 1 and getattr(decl, "processes", False):
        res, log = _processes(ctx, step)
        df = res.records.copy()
    else:
        res, log = _attempts(lambda: _logged(dataclasses.replace(ctx, processes=1), step),
                             lambda s: timed and s <= quiet.RERUN_MAX_S)
        if not timed:   # what others ran beside it changes nothing in its rows
            log.update(busy=False, untimed=True)
        df = _tag(res, log)
    check_levels(df, getattr(decl, "levels", None), f"{ctx.study} step {ctx.step}")
    after = quiet.sample() if on else quiet.off_record()
    if "source" not in df:
        df["source"] = res.source
    if "phase" not in df:
        df["phase"] = "measured"
    prov.update({"study": ctx.study, "step": ctx.step, "method": res.method,
                 "dataset_id": res.dataset_id or ctx.dataset, "dataset_checksum": res.dataset_checksum,
                 "inputs": ctx.inputs, "thread_settings": thread_info,
                 "quiet_check": {"before": before, "after": after, "busy": bool(df["machine_busy"].any()),
                                 "repeats": log, "threshold_busy_share": quiet.BUSY_SHARE,
                                 "wait_bound_s": quiet.WAIT_BOUND_S, "reruns_bound": quiet.RERUNS,
                                 "how": _quiet_how(timed, on)}})
    prov.update(res.provenance)
    return records.write(ctx.out, df, prov, res.summary)


def _quiet_how(timed: bool, on: bool) -> str:
    """What the quiet check did, in words, for the provenance."""
    if not on:
        return (f"checks off ({quiet.SWITCH}=off, a test): no wait for a quiet machine and no rerun; others' "
                "share of the CPU recorded over each repeat and process only")
    if not timed:
        return ("the step times nothing (modelled or simulated rows): no wait for a quiet machine and no rerun; "
                "others' share of the CPU recorded only")
    return ("waited for a quiet machine before the step; others' share of the CPU measured over each timed "
            "repeat's own window (bench.core.measuring.measure.repeat) and over each fresh process; a busy repeat "
            "run again after a short wait, a busy process or short step after another wait (bounded); "
            "machine_busy: still busy after that; repeats_unstable: a repeat set whose standard deviation exceeds "
            f"{measure.UNSTABLE_CV:.0%} of its mean (pyperf's rule)")


def check_levels(df: pd.DataFrame, levels: tuple[str, ...] | None, where: str) -> None:
    """Rows of a step declared ``levels=(...)`` each name their level (``level``: one of them, e.g. ``run``
    for a timed repeat and ``query`` for one query's result); a step that declares none writes no ``level``
    column. A breach is a bug in the step, named."""
    if not levels:
        if LEVEL in df:
            raise ValueError(f"{where}: rows carry a {LEVEL!r} column, but the step declares no levels=(...)")
        return
    if LEVEL not in df:
        raise ValueError(f"{where}: declares levels={tuple(levels)}, but its rows carry no {LEVEL!r} column")
    bad = sorted(set(df[LEVEL].dropna().astype(str)) - set(levels)) + (["(empty)"] if df[LEVEL].isna().any() else [])
    if bad:
        raise ValueError(f"{where}: rows at level(s) {bad}, not among the declared {tuple(levels)}")


def build(ctx: Context, step: Callable[[Context], Any]) -> Path:
    """Run a build step (it writes ``ctx.out``: an index, a table, a model) and write its own record set
    beside what it wrote (:func:`bench.core.declaring.study.build_records`): one row of its wall and CPU
    seconds, the process's peak resident memory while the build ran (its high-water mark, reset to the
    resident memory at the build's start where Linux allows; ``peak_rss_from`` says which) and that resident
    memory (``rss_start_mib``: the interpreter and its imports, to subtract), threads, the bytes it wrote,
    others' share of the machine, and any values the build returns as a mapping (an edge count, a training
    size). No wait for a
    quiet machine and no rerun: a build costs what it cost before."""
    thread_info = measure.set_threads(ctx.threads)
    reset, start = _reset_peak_rss(), _status_mib("VmRSS")
    cpu0, t0 = os.times(), time.perf_counter()
    with quiet.Span() as span:
        extra = step(ctx)
    wall, cpu1 = time.perf_counter() - t0, os.times()
    row = {"step": ctx.step, "dataset": ctx.dataset, "phase": "measured", "source": "measured", "wall_s": wall,
           "cpu_s": sum(cpu1[:4]) - sum(cpu0[:4]), "peak_rss_mib": _status_mib("VmHWM"), "rss_start_mib": start,
           "peak_rss_from": "build" if reset else "process start", "children_peak_rss_mib": _children_peak_mib(),
           "threads": ctx.threads, "out_bytes": _size(ctx.out), "machine_busy": span.busy,
           "others_share": span.others_share, "process_uid": uuid.uuid4().hex[:16],
           **(dict(extra) if isinstance(extra, Mapping) else {})}
    prov = provenance.collect(profile=ctx.profile, config=ctx.section or ctx.params, seed=ctx.seed)
    prov.update({"study": ctx.study, "step": ctx.step, "dataset_id": ctx.dataset, "inputs": ctx.inputs,
                 "output": str(ctx.out), "thread_settings": thread_info,
                 "method": "one build, timed with a wall-clock timer around the build function (data loading "
                           "included); CPU seconds of this process and its reaped children (os.times); peak "
                           "resident memory: VmHWM of /proc/self/status, reset to the resident memory at the "
                           "build's start (/proc/self/clear_refs 5) where allowed, that start in rss_start_mib; "
                           "no wait for a quiet machine, others' share recorded"})
    return records.write(build_records(ctx.out), pd.DataFrame([row]), prov)


def _reset_peak_rss() -> bool:
    """Reset this process's peak resident memory (Linux >= 4.0); False where it cannot be reset."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _status_mib(field: str) -> float:
    """A memory field of /proc/self/status (``VmHWM``: the peak resident memory; ``VmRSS``: now), in MiB;
    ru_maxrss (the peak) where /proc is not there."""
    try:
        with open("/proc/self/status") as fh:
            kib = next(int(line.split()[1]) for line in fh if line.startswith(f"{field}:"))
    except (OSError, StopIteration):
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024


def _children_peak_mib() -> float:
    """The largest peak resident memory of any child process this one reaped, in MiB (0: none)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _size(path: Path) -> int:
    """Bytes written at ``path``: a file's size, or every file's under a folder (0 where nothing is there)."""
    p = Path(path)
    if p.is_dir():
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return p.stat().st_size if p.exists() else 0

"""Measurement step ``trace`` (Trinity section 3.2): every (query, top-M) of the workload's request classes
searched once by the live engine at the serving capacity, recording each request's distance tasks per
extend and its result ids, and the measured wall time of every extend with its number of launches of the
fixed-shape distance op. The serving steps (``load``, ``sched``) replay these traces
(:func:`.inputs.load_trace_processes`). In the same process, right after, the replay is checked against the
live engine: both serve the same seeded arrivals at the check points (rows ``row=check``), so the replay's
error is measured in every fresh process, paired with the trace it replays. Where the profile runs repeatable steps in several fresh processes, the whole
trace is taken in each (rows carry ``process``): ``load`` and ``sched`` replay their seeds on them in turn, so
their intervals hold the noise between runs of the live engine, not only the arrivals'."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...ann.metrics import recall_at_k
from ...core.measuring import measure
from ...core.declaring.params import as_dict
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Params
from ..system import batching, event_loop
from ..system.workload import Request, Source
from . import _serving, inputs

METHOD = (
    "Live engine (capacity {cap}, p={p}, distance op of {chunk} lanes, {dev}), continuous batching, all {n} "
    "searches ((query, top-M) pairs, k = top-M) waiting at t=0; each extend timed with time.perf_counter "
    "(CUDA synchronised) and recorded with its distance tasks and launches (row=extend); each request's tasks "
    "per extend and its ids recorded (row=request). A first pass over {nw} searches is warm-up (phase=warmup). "
    "Calibration rows: {cal} rounds, each filling the engine level by level to every launch count of the "
    "distance op and timing {per_level} extends at each, then draining it untimed (row=extend, calibration, "
    "round). "
    "Check rows (row=check), the replay against the live engine: right after the trace, in the same fresh "
    "process, the live engine (its own, warmed by one untimed pass) serves each check point (check=load: static "
    "and continuous, {n_live} requests at {live_points} of this process's capacity; "
    "check=sched: FIFO and Trinity at the judged prefill load, {sched_s} s of emulated time), each extend timed; "
    "the replay of this process's trace serves the same seeded arrivals (engine=replay), so the two differ only "
    "by the replay's model of the engine. "
    "torch threads: {threads}.")


def _levels(eng) -> list[int]:
    """Busy slots that give each launch count of the distance op, 1 up to every slot (the fewest slots
    with that count, packed from slot 0 as :func:`.event_loop.launches_for` counts them)."""
    per = max(1, eng.lanes // eng.P)
    return sorted({min(eng.S, 1 + (n - 1) * per) for n in range(1, eng.launches + 1)} | {eng.S})


PER_LEVEL = 2   # extends timed at each level of a calibration round


def _calibrate(eng, xq, top_m: int, rounds: int, per_level: int = PER_LEVEL) -> list[dict]:
    """The extend time at every launch count, interleaved: each round fills the engine level by level
    (:func:`_levels`), timing ``per_level`` extends at each, then drains it untimed. A slow stretch of the
    host then falls on every launch count of a round alike, so the replay's cost of a partly full engine
    relative to a full one (:class:`.event_loop.TimeModel`) holds no drift between the moments each count
    was measured (rows carry ``round``)."""
    rows, levels = [], _levels(eng)
    for rnd in range(rounds):
        ad, n, active = event_loop.LiveAdapter(eng, xq), 0, []
        for level in levels:
            ad.admit([Request(i, i % len(xq), 1, top_m, 0.0) for i in range(n, level)])
            n = level
            for _ in range(per_level):
                active.append(eng.n_active())
                ad.extend()
        rows += [{"row": "extend", "phase": "measured", "tasks": t, "launches": lch, "dur_s": d, "active": a,
                  "calibration": True, "round": rnd} for (t, lch, d), a in zip(ad.samples, active)]
        while eng.n_active():
            eng.extend()
    return rows


def _pass(eng, v: inputs.Vectors, tms: list[int], n: int, phase: str, k: int) -> list[dict]:
    """One search of the first ``n`` queries at every top-M (k = top-M), all waiting at t=0."""
    src = Source([], len(v.queries), 0)
    for m in tms:
        for q in range(n):
            r = Request(len(src.heap), q, m, m, 0.0)
            src.heap.append((0.0, r.rid, r))
    ad = event_loop.LiveAdapter(eng, v.queries)
    done, log = event_loop.run(ad, batching.make("continuous", eng.S, 0.0), src)
    rows = [{"row": "extend", "phase": phase, "tasks": t, "launches": lch, "dur_s": d, "active": a}
            for t, lch, d, a in zip(log.fill, log.launches, log.dur, log.active)]
    if phase == "measured":
        rows += [{"row": "request", "phase": phase, "qidx": r.qidx, "top_m": r.top_m, "extends": r.extends,
                  "steps": list(map(int, r.steps)), "ids": list(map(int, r.ids)),
                  f"recall_at_{k}": recall_at_k(r.ids[None, :k], v.gt[[r.qidx]], k)
                  if r.top_m >= k else np.nan} for r in done]
    return rows


def _warm(eng, v: inputs.Vectors, top_m: int) -> None:
    """One untimed pass of the live engine's capacity in queries (its first extends pay for allocation)."""
    src = Source([], len(v.queries), 0)
    for q in range(min(eng.S, len(v.queries))):
        src.heap.append((0.0, q, Request(q, q, 1, top_m, 0.0)))
    event_loop.run(event_loop.LiveAdapter(eng, v.queries), batching.make("continuous", eng.S, 0.0), src)


def _load_checks(p: Params, v: inputs.Vectors, traced: inputs.Traced, eng, seed: int) -> list[dict]:
    """The batching check points, each served live and replayed with the same seeded arrivals."""
    lc, mix = p.load.live_check, inputs.classes(p).mix
    cap = traced.capacity_rps(mix)
    rows = []
    for i, at in enumerate(lc.points if lc.n_requests else ()):
        for pol in ("static", "continuous"):
            pt = _serving.Point(pol, at.arrival, at.load * cap, lc.n_requests, seed + 7919 * i)
            for engine in ("live", "replay"):
                ad = event_loop.LiveAdapter(eng, v.queries) if engine == "live" else traced.replay(pt.seed)
                done, log = _serving.load_run(ad, traced, mix, pt, p)
                rows.append({"row": "check", "check": "load", "engine": engine, "policy": pol,
                             "arrival": at.arrival, "load_frac": at.load, "seed": pt.seed, "offered_rps": pt.rate,
                             **_serving.latency_row(done, log, traced, p.load.jitter_window)})
    return rows


def _sched_checks(p: Params, v: inputs.Vectors, traced: inputs.Traced, eng, seed: int) -> list[dict]:
    """The scheduler check points: FIFO and Trinity at the judged prefill load, live and replayed."""
    dur, load = p.load.live_check.sched_seconds(p.scheduler.duration_s), p.scheduler.judged()
    if not dur or load is None:
        return []
    sp = dataclasses.replace(p.scheduler, duration_s=dur)
    cls = inputs.classes(p)
    pool = _serving.Pool(traced, cls, traced.capacity_rps(cls.prefill))
    rows = []
    for pol in ("fifo", "trinity"):
        for engine in ("live", "replay"):
            o = _serving.sched_run(pool, sp, pol, load, seed, event_loop.LiveAdapter(eng, v.queries)
                                   if engine == "live" else None)
            rows.append({"row": "check", "check": "sched", "engine": engine, "policy": pol, "load_frac": load,
                         "seed": seed, **_serving.outcome_row(o, dur, sp.token_ms / 1e3)})
    return rows


def _checks(p: Params, v: inputs.Vectors, df: pd.DataFrame, seed: int) -> list[dict]:
    """The replay checked against the live engine in this process, on this process's own trace."""
    traced = inputs.traced_of(df, seed)
    cls = inputs.classes(p)
    eng = inputs.engine(p, v, traced.capacity, max(c.top_m for c in cls.all()), seed)
    _warm(eng, v, max(c.top_m for c in cls.all()))
    return _load_checks(p, v, traced, eng, seed) + _sched_checks(p, v, traced, eng, seed)


def _described(df: pd.DataFrame, v: inputs.Vectors, eng) -> pd.DataFrame:
    """The columns every trace row carries: dataset, capacity, lanes per launch and how launches were counted."""
    df.insert(0, "dataset", v.ds.name)
    df["capacity"], df["chunk"] = eng.S, eng.lanes
    df["slot_lanes"], df["fixed_shape"] = eng.P, not eng.skip_idle
    return df


@step("trace", needs=("manifest", "graph"), processes=True,
      keys=("graph", "engine", "trace_queries", "trace_calibration", "recall", "workload", "load", "scheduler"))
def trace(ctx: Context) -> Result:
    p: Params = ctx.params
    measure.set_threads(p.engine.threads)
    v = inputs.loaded(p, ctx.input("manifest"), ctx.input("graph"))
    tms = sorted({c.top_m for c in inputs.classes(p).all()})
    cap = p.engine.capacity
    eng = inputs.engine(p, v, cap, max(tms), ctx.seed, trace=True)
    nq = min(p.trace_queries, len(v.queries))
    nw = min(2 * cap, nq)
    rows = []
    for phase, n in (("warmup", nw), ("measured", nq)):
        rows += _pass(eng, v, tms, n, phase, p.recall.k)
    rows += _calibrate(eng, v.queries, max(tms), p.trace_calibration)
    df = _described(pd.DataFrame(rows).assign(source="measured"), v, eng)
    chk = pd.DataFrame(_checks(p, v, df, ctx.seed))
    if len(chk):
        chk = chk.assign(phase="measured", source=np.where(chk.engine == "live", "measured", "emulated"))
        df = pd.concat([df, _described(chk, v, eng)], ignore_index=True)
    dev = inputs.device(p)
    return Result(records=df, dataset_id=f"{v.ds.name} ({v.ds.id})", dataset_checksum=v.ds.checksum,
                  method=METHOD.format(cap=cap, p=p.engine.p, chunk=eng.lanes, dev=dev, n=nq * len(tms),
                                       nw=nw * len(tms), threads=p.engine.threads, cal=p.trace_calibration,
                                       per_level=PER_LEVEL, n_live=p.load.live_check.n_requests,
                                       live_points=", ".join(f"{q.arrival} {q.load:g}"
                                                             for q in p.load.live_check.points),
                                       sched_s=p.load.live_check.sched_seconds(p.scheduler.duration_s)),
                  provenance={"graph": v.side, "engine": as_dict(p.engine), "device": dev, "top_ms": tms})

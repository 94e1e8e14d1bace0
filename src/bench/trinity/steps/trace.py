"""Measurement step ``trace`` (Trinity section 3.2): every (query, top-M) of the workload's request classes
searched once by the live engine at the serving capacity, recording each request's distance tasks per
extend and its result ids, and the measured wall time of every extend with its number of launches of the
fixed-shape distance op. The serving steps (``load``, ``sched``) replay these traces
(:func:`.inputs.load_trace_processes`). Where the profile runs repeatable steps in several fresh processes, the whole
trace is taken in each (rows carry ``process``): ``load`` and ``sched`` replay their seeds on them in turn, so
their intervals hold the noise between runs of the live engine, not only the arrivals'."""
from __future__ import annotations

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
from . import inputs

METHOD = (
    "Live engine (capacity {cap}, p={p}, distance op of {chunk} lanes, {dev}), continuous batching, all {n} "
    "searches ((query, top-M) pairs, k = top-M) waiting at t=0; each extend timed with time.perf_counter "
    "(CUDA synchronised) and recorded with its distance tasks and launches (row=extend); each request's tasks "
    "per extend and its ids recorded (row=request). A first pass over {nw} searches is warm-up (phase=warmup). "
    "Calibration rows: {cal} rounds, each filling the engine level by level to every launch count of the "
    "distance op and timing {per_level} extends at each, then draining it untimed (row=extend, calibration, "
    "round). "
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
    df = pd.DataFrame(rows)
    df.insert(0, "dataset", v.ds.name)
    df["capacity"], df["chunk"], df["source"] = cap, eng.lanes, "measured"
    df["slot_lanes"], df["fixed_shape"] = eng.P, not eng.skip_idle      # how the launches were counted
    dev = inputs.device(p)
    return Result(records=df, dataset_id=f"{v.ds.name} ({v.ds.id})", dataset_checksum=v.ds.checksum,
                  method=METHOD.format(cap=cap, p=p.engine.p, chunk=eng.lanes, dev=dev, n=nq * len(tms),
                                       nw=nw * len(tms), threads=p.engine.threads, cal=p.trace_calibration,
                                       per_level=PER_LEVEL),
                  provenance={"graph": v.side, "engine": as_dict(p.engine), "device": dev, "top_ms": tms})

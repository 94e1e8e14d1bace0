"""Measurement step ``load`` (Trinity section 3.2): the vector-search pool as a service, static against
continuous batching, heterogeneous requests, Poisson and bursty arrivals, across offered loads (fractions
of the engine's estimated capacity): p50/p95/p99 latency, throughput, lane utilisation of the distance op,
extends per request. It replays the ``trace`` step's real searches on the event loop's virtual clock
(:mod:`..system.event_loop`), seed r on the trace's fresh process r mod their number, and runs one load
point per policy live (the real engine inside the same loop, each extend timed) as a check of the replay."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...core.measuring import measure
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Params
from ..system import batching, event_loop
from ..system.workload import RequestClass, Source, schedule
from . import inputs

@dataclasses.dataclass(frozen=True)
class Point:
    """One run: a batching policy under ``n`` open-loop arrivals at ``rate`` requests/s, seeded."""

    policy: str
    arrival: str
    rate: float
    n: int
    seed: int


def _chunk_utils(log, traced: inputs.Traced, chunks) -> dict:
    """What-if lane utilisation of the same extends with another distance-op size, launched as the traced
    engine launches (tasks per extend do not depend on the size; the timing would)."""
    fill = float(np.sum(log.fill))
    return {f"lane_util_c{c}": fill / sum(traced.launches(a, f, c) * c for a, f in zip(log.active, log.fill))
            for c in chunks}


def _latency_row(done, log, traced: inputs.Traced, chunks=()) -> dict:
    lat = np.array([r.latency for r in done])
    t0 = min(r.arrival for r in done)
    p50, p95, p99 = np.percentile(lat, [50, 95, 99])       # exact percentiles (few hundred values per run)
    return {"n": lat.size, "p50_s": p50, "p95_s": p95, "p99_s": p99, "mean_s": float(lat.mean()),
            "throughput_rps": lat.size / (max(r.done for r in done) - t0),
            "lane_util": float(np.sum(log.fill) / (np.sum(log.launches) * traced.lanes)),
            "extends_mean": float(np.mean([r.extends for r in done])),
            "recall": float(np.nanmean([traced.recall_by[(r.qidx, r.top_m)] for r in done])),
            **_chunk_utils(log, traced, chunks)}


def _run(adapter, traced: inputs.Traced, mix: list[RequestClass], pt: Point, p: Params):
    src = Source(mix, traced.n_queries, pt.seed)
    src.add_open_loop(schedule(pt.arrival, pt.rate, pt.n, pt.seed, dataclasses.asdict(p.load.burst)))
    return event_loop.run(adapter, batching.make(pt.policy, traced.capacity, p.load.flush_ms / 1e3), src)


def _replayed(traces: list[inputs.Traced], mix: list[RequestClass], p: Params, seed0: int) -> list[dict]:
    """The replayed grid: seed r replays the trace's fresh process r mod their number (``trace_process``),
    at fractions of that process's capacity, so the seeds hold the noise between runs of the live engine."""
    lp = p.load
    rows = []
    for arrival in lp.arrivals:
        for frac in lp.loads:
            for pol in ("static", "continuous"):
                for rep in range(lp.repeats):
                    which = inputs.trace_for(rep, traces)
                    traced = traces[which]
                    cap = traced.capacity_rps(mix)
                    seed = seed0 + 7919 * rep + int(frac * 1000)
                    n = max(lp.min_requests, int(frac * cap * lp.duration_s))
                    pt = Point(pol, arrival, frac * cap, n, seed)
                    done, log = _run(traced.replay(seed), traced, mix, pt, p)
                    rows.append({"policy": pol, "arrival": arrival, "load_frac": frac, "offered_rps": frac * cap,
                                 "repeat": rep, "trace_process": which, "capacity_rps": cap,
                                 "t_ext_full_s": traced.t_full, "engine": "replay", "source": "emulated",
                                 **_latency_row(done, log, traced, lp.util_chunks)})
    return rows


def _live(traced: inputs.Traced, mix: list[RequestClass], p: Params, v: inputs.Vectors, seed: int) -> list[dict]:
    live, cap = p.load.live_check, traced.capacity_rps(mix)
    rows = []
    for pol in ("static", "continuous") if live.n_requests else ():
        eng = inputs.engine(p, v, traced.capacity, max(c.top_m for c in mix), seed)
        pt = Point(pol, "poisson", live.load * cap, live.n_requests, seed)
        done, log = _run(event_loop.LiveAdapter(eng, v.queries), traced, mix, pt, p)
        rows.append({"policy": pol, "arrival": "poisson", "load_frac": live.load,
                     "offered_rps": live.load * cap, "repeat": 0, "trace_process": 0, "capacity_rps": cap,
                     "t_ext_full_s": traced.t_full, "engine": "live", "source": "measured",
                     **_latency_row(done, log, traced)})
    return rows


@step("load", needs=("manifest", "graph", "trace"),
      keys=("graph", "engine", "recall", "workload", "load", "scheduler"))
def load(ctx: Context) -> Result:
    p: Params = ctx.params
    lp = p.load
    measure.set_threads(p.engine.threads)
    v = inputs.loaded(p, ctx.input("manifest"), ctx.input("graph"))
    traces = inputs.load_trace_processes(ctx.input("trace"), ctx.seed)
    traced = traces[0]
    mix = inputs.classes(p).mix
    caps = [t.capacity_rps(mix) for t in traces]
    df = pd.DataFrame(_replayed(traces, mix, p, ctx.seed) + _live(traced, mix, p, v, ctx.seed))
    df.insert(0, "dataset", traced.dataset)
    df["capacity"], df["lanes"] = traced.capacity, traced.lanes
    return Result(records=df, method=inputs.REPLAY + (
        f"Offered loads are fractions of the estimated capacity ({', '.join(f'{c:.0f}' for c in caps)} requests/s, "
        f"one per fresh trace process; seed r replays process r mod {len(caps)}: capacity {traced.capacity} "
        f"slots / (mean extends x mean extend time at full occupancy, "
        f"{', '.join(f'{t.t_full * 1e3:.3f}' for t in traces)} ms)); "
        f"max({lp.min_requests}, rate x {lp.duration_s} s) requests per run, {lp.repeats} seeds per point; "
        f"exact percentiles (numpy). engine=live rows: the real engine in the same loop, each extend timed with "
        f"perf_counter (measured), {lp.live_check.n_requests} Poisson requests."),
        provenance={"capacity_rps": caps, "t_ext_full_s": [t.t_full for t in traces], "trace_processes": len(traces),
                    "extends_by_top_m": traced.ext_by_m})

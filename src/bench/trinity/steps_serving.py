"""Trinity steps ``load`` and ``sched``: the vector-search pool as a service (paper sections 3.2 and 3.3).

Both replay the ``trace`` step's real searches on the virtual clock of :mod:`.serve`: what was measured is
each request's extends and distance tasks (real searches, real ids) and the wall time of every extend of the
live engine; what is simulated is the waiting (queues, batches, the clock between arrivals); latency runs
from each request's intended arrival time of the open-loop schedule. ``load`` also runs one load point per
policy live (the real engine inside the same loop, each extend timed) as a check of the replay.

- ``load``: static against continuous batching, heterogeneous requests, Poisson and bursty arrivals, across
  offered loads (fractions of the engine's estimated capacity): p50/p95/p99 latency, throughput, lane
  utilisation of the distance op, extends per request;
- ``sched``: prefill retrievals (open loop, TTFT deadline) and decode streams (closed loop, a retrieval
  every delta tokens) through each scheduling policy across prefill loads: prefill p95 wait, share within
  the deadline, decode stall fraction, emulated token throughput; the control loop's r and tau_pre.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..core import records
from ..core.step import Context, Result, reads
from . import batching, scheduler, serve, setup
from .workload import RequestClass, Source, add_decode_streams, parse_classes, schedule

REPLAY = ("replayed: each request's extends and distance tasks and result ids come from the trace step's "
          "real searches; each extend's duration is drawn from the live engine's measured extend times with "
          "the same number of distance-op launches; queueing, batching and the clock are simulated; latency "
          "= completion - intended arrival (open-loop schedule from bench.core.loadgen). ")


@dataclasses.dataclass
class Traced:
    traces: dict
    times: serve.TimeModel
    capacity: int
    lanes: int
    ext_by_m: dict
    recall_by: dict
    t_full: float
    n_queries: int
    dataset: str

    def extends(self, classes: list[RequestClass]) -> float:
        w = np.array([c.weight for c in classes])
        return float(np.dot(w / w.sum(), [self.ext_by_m[c.top_m] for c in classes]))

    def capacity_rps(self, classes: list[RequestClass]) -> float:
        """Requests/s the engine sustains with every slot busy: capacity / (E x mean T_ext at full occupancy)."""
        return self.capacity / (self.extends(classes) * self.t_full)


def load_traces(path: str, seed: int) -> Traced:
    df = records.read(path)
    m = df[df.phase == "measured"]
    req, ext = m[m.row == "request"], m[m.row == "extend"]
    traces = {(int(r.qidx), int(r.top_m)): serve.Trace(np.asarray(r.steps, dtype=int), np.asarray(r.ids))
              for r in req.itertuples()}
    rcol = [c for c in req if c.startswith("recall_at_")][0]
    cap = int(df.capacity.iloc[0])
    full = ext[ext.active == cap]
    samples = list(zip(ext.tasks.astype(int), ext.launches.astype(int), ext.dur_s.astype(float)))
    return Traced(traces, serve.TimeModel(samples, seed), cap, int(df.chunk.iloc[0]),
                  req.groupby("top_m").extends.mean().to_dict(),
                  {(int(r.qidx), int(r.top_m)): float(getattr(r, rcol)) for r in req.itertuples()},
                  float((full if len(full) else ext).dur_s.mean()), int(req.qidx.max()) + 1, str(df.dataset.iloc[0]))


def _chunk_utils(log, chunks) -> dict:
    """What-if lane utilisation of the same extends with another distance-op size (tasks per extend do not
    depend on it; the timing would)."""
    fill = np.asarray(log.fill, dtype=float)
    return {f"lane_util_c{c}": float(fill.sum() / (np.maximum(1, np.ceil(fill / c)) * c).sum()) for c in chunks}


def _latency_row(done, log, lanes: int, traced: Traced, chunks=()) -> dict:
    lat = np.array([r.latency for r in done])
    t0 = min(r.arrival for r in done)
    p50, p95, p99 = np.percentile(lat, [50, 95, 99])       # exact percentiles (few hundred values per run)
    return {"n": lat.size, "p50_s": p50, "p95_s": p95, "p99_s": p99, "mean_s": float(lat.mean()),
            "throughput_rps": lat.size / (max(r.done for r in done) - t0),
            "lane_util": float(np.sum(log.fill) / (np.sum(log.launches) * lanes)),
            "extends_mean": float(np.mean([r.extends for r in done])),
            "recall": float(np.nanmean([traced.recall_by[(r.qidx, r.top_m)] for r in done])),
            **_chunk_utils(log, chunks)}


def _replay_load(traced, mix, policy, arrival, rate, n, flush_s, burst, seed):
    src = Source(mix, traced.n_queries, seed)
    src.add_open_loop(schedule(arrival, rate, n, seed, burst))
    ad = serve.ReplayAdapter(traced.traces, traced.capacity, traced.lanes, traced.times.with_seed(seed))
    return serve.serve(ad, batching.make(policy, traced.capacity, flush_s), src)


def _live_load(ctx, traced, mix, policy, rate, n, flush_s, seed):
    p = ctx.params
    ds, base, xq, g, _ = setup.load(ctx.input("manifest"), ctx.input("graph"))
    eng = setup.engine(p, base, g, traced.capacity, max(c.top_m for c in mix), ctx.seed)
    src = Source(mix, traced.n_queries, seed)
    src.add_open_loop(schedule("poisson", rate, n, seed))
    return serve.serve(serve.LiveAdapter(eng, xq), batching.make(policy, traced.capacity, flush_s), src)


@reads("manifest", "graph", "trace")
def load(ctx: Context) -> Result:
    p, lp = ctx.params, ctx.params["load"]
    setup.set_threads(p)
    setup.check(p, *setup.load(ctx.input("manifest"), ctx.input("graph"))[:4])
    traced = load_traces(ctx.input("trace"), ctx.seed)
    mix = parse_classes(p["workload"]["classes"], "trinity.workload.classes")
    cap = traced.capacity_rps(mix)
    rows = []
    for arrival in lp["arrivals"]:
        for frac in lp["loads"]:
            for pol in ("static", "continuous"):
                for rep in range(lp["repeats"]):
                    seed = ctx.seed + 7919 * rep + int(frac * 1000)
                    n = max(lp["min_requests"], int(frac * cap * lp["duration_s"]))
                    done, log = _replay_load(traced, mix, pol, arrival, frac * cap, n, lp["flush_ms"] / 1e3,
                                             lp["burst"], seed)
                    rows.append({"policy": pol, "arrival": arrival, "load_frac": frac, "offered_rps": frac * cap,
                                 "repeat": rep, "engine": "replay", "source": "emulated",
                                 **_latency_row(done, log, traced.lanes, traced, lp["util_chunks"])})
    live = lp["live_check"]
    for pol in ("static", "continuous") if live["n_requests"] else ():
        done, log = _live_load(ctx, traced, mix, pol, live["load"] * cap, live["n_requests"], lp["flush_ms"] / 1e3,
                               ctx.seed)
        rows.append({"policy": pol, "arrival": "poisson", "load_frac": live["load"],
                     "offered_rps": live["load"] * cap, "repeat": 0, "engine": "live", "source": "measured",
                     **_latency_row(done, log, traced.lanes, traced)})
    df = pd.DataFrame(rows)
    df.insert(0, "dataset", traced.dataset)
    df["capacity"], df["lanes"] = traced.capacity, traced.lanes
    df["capacity_rps"], df["t_ext_full_s"] = cap, traced.t_full
    return Result(records=df, method=REPLAY + (
        f"Offered loads are fractions of the estimated capacity {cap:.0f} requests/s (capacity {traced.capacity} "
        f"slots / (mean extends x median extend time at full occupancy {traced.t_full * 1e3:.3f} ms)); "
        f"max({lp['min_requests']}, rate x {lp['duration_s']} s) requests per run, {lp['repeats']} seeds per point; "
        f"exact percentiles (numpy). engine=live rows: the real engine in the same loop, each extend timed with "
        f"perf_counter (measured), {lp['live_check']['n_requests']} Poisson requests."),
        provenance={"capacity_rps": cap, "t_ext_full_s": traced.t_full, "extends_by_top_m": traced.ext_by_m})


def _sched_params(sp: dict, deadline_s: float, gen_s: float) -> scheduler.SchedParams:
    return scheduler.SchedParams(
        flush_s=sp["flush_ms"] / 1e3, tau_pre_s=sp["tau_pre_ms"] / 1e3, r=sp["r"], r_min=sp["r_min"],
        r_max=sp["r_max"], r_step=sp["r_step"], aging_s=sp["aging_ms"] / 1e3, control_s=sp["control_ms"] / 1e3,
        urgent_s=sp["urgent"] * deadline_s,
        wait_target_s=sp["wait_target"] * deadline_s, stall_target=sp["stall_target"], gen_s=gen_s,
        tau_min_s=sp["tau_pre_min_ms"] / 1e3, tau_max_s=sp["tau_pre_max_ms"] / 1e3)


def _sched_run(traced, cls, sp, policy, frac, cap, seed):
    gen_s = sp["delta_tokens"] * sp["token_ms"] / 1e3
    deadline = sp["deadline_factor"] * traced.extends(cls["prefill"]) * traced.t_full
    src = Source(cls["prefill"], traced.n_queries, seed)
    rate = frac * cap
    n = max(1, int(rate * sp["duration_s"]))
    src.add_open_loop(schedule(sp["arrival"], rate, n, seed, sp.get("burst")), "prefill", deadline, cls["prefill"])
    # decode_share of the engine's slot-extends: streams x E_dec / gen_s = share x capacity / T_ext
    slot_rate = traced.capacity / traced.t_full
    n_streams = max(1, round(sp["decode_share"] * slot_rate * gen_s / traced.extends(cls["decode"])))
    streams = add_decode_streams(src, n_streams, cls["decode"], sp["delta_tokens"], sp["token_ms"] / 1e3,
                                 sp["duration_s"], seed)
    prm = _sched_params(sp, deadline, gen_s)
    e_ext = {c.top_m: traced.ext_by_m[c.top_m] for g in cls.values() for c in g}
    pol = scheduler.make(policy, traced.capacity, prm, e_ext, traced.t_full)
    ad = serve.ReplayAdapter(traced.traces, traced.capacity, traced.lanes, traced.times.with_seed(seed))
    done, _ = serve.serve(ad, pol, src)
    return done, streams, pol, deadline, n_streams


def _sched_row(done, streams, deadline, duration, token_s) -> dict:
    pre = [r for r in done if r.kind == "prefill"]
    dec = [r for r in done if r.kind == "decode"]
    stall = sum(s.stall_s for s in streams)
    busy = stall + sum(s.tokens for s in streams) * token_s
    return {"n_prefill": len(pre), "n_decode": len(dec), "deadline_s": deadline,
            "pre_p50_wait_s": float(np.percentile([r.latency for r in pre], 50)),
            "pre_p95_wait_s": float(np.percentile([r.latency for r in pre], 95)),
            "pre_within_deadline": float(np.mean([not r.missed for r in pre])),
            "dec_p95_wait_s": float(np.percentile([r.latency for r in dec], 95)) if dec else np.nan,
            "dec_stall_fraction": stall / busy if busy > 0 else np.nan,
            "tokens_per_s": sum(s.tokens for s in streams) / duration}


SWEEP = ("Parameter sweep (row = sweep): one open parameter at a time (sweep_param = sweep_value, the others "
         "as configured) at prefill load {load_frac} of capacity. ")


def _policy_run(traced, cls, sp, policy, frac, cap, seed0, rep) -> tuple[dict, dict, object]:
    """One emulated run of ``policy`` at prefill load ``frac`` (seed from the repeat and the load): the
    row's identifying columns, its measured outcome, and the policy (its control history)."""
    seed = seed0 + 104729 * rep + int(frac * 1000)
    done, streams, pol, deadline, n_streams = _sched_run(traced, cls, sp, policy, frac, cap, seed)
    base = {"policy": policy, "load_frac": frac, "total_load": frac + sp["decode_share"], "prefill_rps": frac * cap,
            "repeat": rep, "decode_streams": n_streams, "source": "emulated"}
    return base, _sched_row(done, streams, deadline, sp["duration_s"], sp["token_ms"] / 1e3), pol


def _sweep_rows(traced, cls, sp, cap, seed0) -> list[dict]:
    """The sweep: each value of each swept parameter, each policy, ``repeats`` seeds (as the main grid)."""
    sw = sp.get("sweep") or {}
    rows, frac = [], sw.get("load_frac", 0.7)
    for name, values in (sw.get("params") or {}).items():
        for value in values:
            for policy in sw.get("policies", ["fifo", "trinity"]):
                for rep in range(sw.get("repeats", 2)):
                    base, out, _ = _policy_run(traced, cls, {**sp, name: value}, policy, frac, cap, seed0, rep)
                    rows.append({"row": "sweep", **base, "sweep_param": name, "sweep_value": float(value), **out})
    return rows


@reads("manifest", "graph", "trace")
def sched(ctx: Context) -> Result:
    p, sp = ctx.params, ctx.params["scheduler"]
    setup.check(p, *setup.load(ctx.input("manifest"), ctx.input("graph"))[:4])
    traced = load_traces(ctx.input("trace"), ctx.seed)
    cls = setup.all_classes(p)
    cap = traced.capacity_rps(cls["prefill"])
    rows = []
    for policy in sp["policies"]:
        for frac in sp["prefill_loads"]:
            for rep in range(sp["repeats"]):
                base, out, pol = _policy_run(traced, cls, sp, policy, frac, cap, ctx.seed, rep)
                rows.append({"row": "run", **base, **out})
                rows += [{"row": "control", **base, **h} for h in pol.history]
    rows += _sweep_rows(traced, cls, sp, cap, ctx.seed)
    df = pd.DataFrame(rows)
    df.insert(0, "dataset", traced.dataset)
    df["capacity_rps"], df["t_ext_full_s"] = cap, traced.t_full
    return Result(records=df, method=REPLAY + SWEEP.format(**sp.get("sweep", {}) or {"load_frac": "-"}) + (
        f"Emulated LLM stages: prefill retrievals arrive open-loop ({sp['arrival']}) at fractions (load_frac) of "
        f"the prefill capacity {cap:.0f}/s (slots / (prefill extends x mean extend time at full occupancy)) with "
        f"deadline L_pre,max = {sp['deadline_factor']} x the prefill search time at full occupancy; decode "
        f"streams, sized to use decode_share {sp['decode_share']} of the engine's slot-extends when never "
        f"stalled (total_load = load_frac + decode_share), generate {sp['delta_tokens']} "
        f"tokens at {sp['token_ms']} ms each between retrievals and stall until each returns; "
        f"{sp['duration_s']} s of emulated time per run, {sp['repeats']} seeds. Decode stall fraction = stalled "
        f"time / (stalled + generating time) over all streams."),
        provenance={"capacity_rps": cap, "t_ext_full_s": traced.t_full})

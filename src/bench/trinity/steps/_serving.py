"""One run of Trinity's vector-search pool as a service (paper sections 3.2 and 3.3), shared by the steps that
serve: ``load`` and ``sched`` replay the ``trace`` step's searches; ``trace`` also serves its live check
points with the real engine and with the replay of its own trace, so the replay's error is measured where
it is made. A run is one policy under one seeded open-loop schedule on one adapter (the live engine or a
replay, :mod:`..system.event_loop`); the same seed gives the same arrivals, classes and queries on either.
No step of its own (a shared helper of :mod:`.`)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..params import Params, Scheduler
from ..system import batching, event_loop, scheduler
from ..system.workload import RequestClass, Source, add_decode_streams, schedule
from . import inputs


@dataclasses.dataclass(frozen=True)
class Point:
    """One run: a batching policy under ``n`` open-loop arrivals at ``rate`` requests/s, seeded."""

    policy: str
    arrival: str
    rate: float
    n: int
    seed: int


def load_run(adapter, traced: inputs.Traced, mix: list[RequestClass], pt: Point, p: Params):
    """The finished requests and the log of extends of one batching run (``load`` step, live check)."""
    src = Source(mix, traced.n_queries, pt.seed)
    src.add_open_loop(schedule(pt.arrival, pt.rate, pt.n, pt.seed, dataclasses.asdict(p.load.burst)))
    return event_loop.run(adapter, batching.make(pt.policy, traced.capacity, p.load.flush_ms / 1e3), src)


def jitter(done, window: int) -> dict:
    """How smooth the run's latency is (section 3.2, "smoother P50/P95"): the requests in arrival order cut
    into consecutive windows of ``window`` (a last, shorter window dropped), each window's p50 and p95, and
    their standard deviation over the windows (seconds; NaN with fewer than two windows)."""
    lat = np.array([r.latency for r in sorted(done, key=lambda r: (r.arrival, r.rid))])
    w = lat.size // window
    if w < 2:
        return {"p50_jitter_s": np.nan, "p95_jitter_s": np.nan, "windows": w}
    win = lat[: w * window].reshape(w, window)
    p50, p95 = np.percentile(win, [50, 95], axis=1)
    return {"p50_jitter_s": float(np.std(p50, ddof=1)), "p95_jitter_s": float(np.std(p95, ddof=1)), "windows": w}


def chunk_utils(log, traced: inputs.Traced, chunks) -> dict:
    """What-if lane utilisation of the same extends with another distance-op size, launched as the traced
    engine launches (tasks per extend do not depend on the size; the timing would)."""
    fill = float(np.sum(log.fill))
    return {f"lane_util_c{c}": fill / sum(traced.launches(a, f, c) * c for a, f in zip(log.active, log.fill))
            for c in chunks}


def latency_row(done, log, traced: inputs.Traced, window: int, chunks=()) -> dict:
    """A batching run's outcome: exact latency percentiles from the intended arrival, throughput, lane
    utilisation of the distance op, extends per request, the request mix's recall and the smoothness."""
    lat = np.array([r.latency for r in done])
    t0 = min(r.arrival for r in done)
    p50, p95, p99 = np.percentile(lat, [50, 95, 99])       # exact percentiles (few hundred values per run)
    return {"n": lat.size, "p50_s": p50, "p95_s": p95, "p99_s": p99, "mean_s": float(lat.mean()),
            "throughput_rps": lat.size / (max(r.done for r in done) - t0),
            "lane_util": float(np.sum(log.fill) / (np.sum(log.launches) * traced.lanes)),
            "extends_mean": float(np.mean([r.extends for r in done])),
            "recall": float(np.nanmean([traced.recall_by[(r.qidx, r.top_m)] for r in done])),
            **jitter(done, window), **chunk_utils(log, traced, chunks)}


@dataclasses.dataclass(frozen=True)
class Pool:
    """What every scheduler run shares: the replay model, the request classes, the prefill capacity
    (requests/s)."""

    traced: inputs.Traced
    classes: inputs.Classes
    capacity_rps: float


@dataclasses.dataclass(frozen=True)
class Outcome:
    done: list
    streams: list
    policy: object          # the policy after the run (its control history)
    deadline_s: float
    n_streams: int


def sched_params(sp: Scheduler, deadline_s: float, gen_s: float) -> scheduler.SchedParams:
    return scheduler.SchedParams(
        flush_s=sp.flush_ms / 1e3, tau_pre_s=sp.tau_pre_ms / 1e3, r=sp.r, r_min=sp.r_min,
        r_max=sp.r_max, r_step=sp.r_step, aging_s=sp.aging_ms / 1e3, control_s=sp.control_ms / 1e3,
        urgent_s=sp.urgent * deadline_s,
        wait_target_s=sp.wait_target * deadline_s, stall_target=sp.stall_target, gen_s=gen_s,
        tau_min_s=sp.tau_pre_min_ms / 1e3, tau_max_s=sp.tau_pre_max_ms / 1e3)


def sched_run(pool: Pool, sp: Scheduler, policy: str, frac: float, seed: int, adapter=None) -> Outcome:
    """One scheduler run: prefill arrivals with their deadline, decode streams, ``policy``, on ``adapter``
    (the replay of ``pool``'s trace where None; the live engine for the live check)."""
    traced, cls = pool.traced, pool.classes
    gen_s = sp.delta_tokens * sp.token_ms / 1e3
    deadline = sp.deadline_factor * traced.extends(cls.prefill) * traced.t_full
    src = Source(cls.prefill, traced.n_queries, seed)
    rate = frac * pool.capacity_rps
    n = max(1, int(rate * sp.duration_s))
    src.add_open_loop(schedule(sp.arrival, rate, n, seed, dataclasses.asdict(sp.burst)), "prefill", deadline,
                      cls.prefill)
    # decode_share of the engine's slot-extends: streams x E_dec / gen_s = share x capacity / T_ext
    slot_rate = traced.capacity / traced.t_full
    n_streams = max(1, round(sp.decode_share * slot_rate * gen_s / traced.extends(cls.decode)))
    streams = add_decode_streams(src, n_streams, cls.decode, sp.delta_tokens, sp.token_ms / 1e3,
                                 sp.duration_s, seed)
    e_ext = {c.top_m: traced.ext_by_m[c.top_m] for c in cls.all()}
    pol = scheduler.make(policy, traced.capacity, sched_params(sp, deadline, gen_s), e_ext, traced.t_full)
    done, _ = event_loop.run(adapter if adapter is not None else traced.replay(seed), pol, src)
    return Outcome(done, streams, pol, deadline, n_streams)


def outcome_row(o: Outcome, duration: float, token_s: float) -> dict:
    """A scheduler run's outcome: prefill waits and the share within the deadline, decode stall and tokens."""
    pre = [r for r in o.done if r.kind == "prefill"]
    dec = [r for r in o.done if r.kind == "decode"]
    stall = sum(s.stall_s for s in o.streams)
    busy = stall + sum(s.tokens for s in o.streams) * token_s
    return {"n_prefill": len(pre), "n_decode": len(dec), "deadline_s": o.deadline_s,
            "pre_p50_wait_s": float(np.percentile([r.latency for r in pre], 50)),
            "pre_p95_wait_s": float(np.percentile([r.latency for r in pre], 95)),
            "pre_within_deadline": float(np.mean([not r.missed for r in pre])),
            "dec_p95_wait_s": float(np.percentile([r.latency for r in dec], 95)) if dec else np.nan,
            "dec_stall_fraction": stall / busy if busy > 0 else np.nan,
            "tokens_per_s": sum(s.tokens for s in o.streams) / duration}

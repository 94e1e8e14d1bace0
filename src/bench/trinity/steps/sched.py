"""Measurement step ``sched`` (Trinity section 3.3, Figure 4): prefill retrievals (open loop, TTFT deadline)
and decode streams (closed loop, a retrieval every delta tokens) through each scheduling policy of
:mod:`..system.scheduler` across prefill loads, on a replay of the ``trace`` step's real searches: prefill
p95 wait, share within the deadline, decode stall fraction, emulated token throughput, and the control
loop's r and tau_pre; then the parameters the paper leaves open, swept one at a time."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Params, Scheduler
from ..system import event_loop, scheduler
from ..system.workload import Source, add_decode_streams, schedule
from . import inputs

SWEEP = ("Parameter sweep (row = sweep): one open parameter at a time (sweep_param = sweep_value, the others "
         "as configured) at prefill load {load_frac} of capacity. ")


@dataclasses.dataclass(frozen=True)
class Pool:
    """What every run shares: the replay model, the request classes, the prefill capacity (requests/s)."""

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


def _sched_params(sp: Scheduler, deadline_s: float, gen_s: float) -> scheduler.SchedParams:
    return scheduler.SchedParams(
        flush_s=sp.flush_ms / 1e3, tau_pre_s=sp.tau_pre_ms / 1e3, r=sp.r, r_min=sp.r_min,
        r_max=sp.r_max, r_step=sp.r_step, aging_s=sp.aging_ms / 1e3, control_s=sp.control_ms / 1e3,
        urgent_s=sp.urgent * deadline_s,
        wait_target_s=sp.wait_target * deadline_s, stall_target=sp.stall_target, gen_s=gen_s,
        tau_min_s=sp.tau_pre_min_ms / 1e3, tau_max_s=sp.tau_pre_max_ms / 1e3)


def _run(pool: Pool, sp: Scheduler, policy: str, frac: float, seed: int) -> Outcome:
    """One emulated run: prefill arrivals with their deadline, decode streams, ``policy``, the replay."""
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
    pol = scheduler.make(policy, traced.capacity, _sched_params(sp, deadline, gen_s), e_ext, traced.t_full)
    done, _ = event_loop.run(traced.replay(seed), pol, src)
    return Outcome(done, streams, pol, deadline, n_streams)


def _outcome_row(o: Outcome, duration: float, token_s: float) -> dict:
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


def _policy_run(pools: list[Pool], sp: Scheduler, policy: str, frac: float, seed0: int,
                rep: int) -> tuple[dict, dict, object]:
    """One emulated run of ``policy`` at prefill load ``frac`` (seed from the repeat and the load) on the
    replay of trace process ``rep mod len(pools)``: the row's identifying columns, its measured outcome, and
    the policy (its control history)."""
    seed = seed0 + 104729 * rep + int(frac * 1000)
    which = inputs.trace_for(rep, pools)
    pool = pools[which]
    o = _run(pool, sp, policy, frac, seed)
    base = {"policy": policy, "load_frac": frac, "total_load": frac + sp.decode_share,
            "prefill_rps": frac * pool.capacity_rps, "repeat": rep, "trace_process": which,
            "capacity_rps": pool.capacity_rps, "t_ext_full_s": pool.traced.t_full,
            "decode_streams": o.n_streams, "source": "emulated"}
    return base, _outcome_row(o, sp.duration_s, sp.token_ms / 1e3), o.policy


def _sweep_rows(pools: list[Pool], sp: Scheduler, seed0: int) -> list[dict]:
    """The sweep: each value of each swept parameter, each policy, ``repeats`` seeds (as the main grid)."""
    sw = sp.sweep
    rows = []
    for f in dataclasses.fields(sw.params):
        for value in getattr(sw.params, f.name) or ():
            for policy in sw.policies:
                for rep in range(sw.repeats):
                    swept = dataclasses.replace(sp, **{f.name: value})
                    base, out, _ = _policy_run(pools, swept, policy, sw.load_frac, seed0, rep)
                    rows.append({"row": "sweep", **base, "sweep_param": f.name, "sweep_value": float(value), **out})
    return rows


def _method(sp: Scheduler, caps: list[float]) -> str:
    procs = (f"Seed r replays the trace's fresh process r mod {len(caps)} (trace_process), so the seeds hold "
             f"the noise between runs of the live engine as well as the arrivals'. " if len(caps) > 1 else
             "Every seed replays the trace's one process. ")
    return inputs.REPLAY + SWEEP.format(load_frac=sp.sweep.load_frac) + procs + (
        f"Emulated LLM stages: prefill retrievals arrive open-loop ({sp.arrival}) at fractions (load_frac) of "
        f"the prefill capacity ({', '.join(f'{c:.0f}' for c in caps)}/s, one per trace process: slots / "
        f"(prefill extends x mean extend time at full occupancy)) with "
        f"deadline L_pre,max = {sp.deadline_factor} x the prefill search time at full occupancy; decode "
        f"streams, sized to use decode_share {sp.decode_share} of the engine's slot-extends when never "
        f"stalled (total_load = load_frac + decode_share), generate {sp.delta_tokens} "
        f"tokens at {sp.token_ms} ms each between retrievals and stall until each returns; "
        f"{sp.duration_s} s of emulated time per run, {sp.repeats} seeds. Decode stall fraction = stalled "
        f"time / (stalled + generating time) over all streams.")


@step("sched", needs=("manifest", "graph", "trace"), per="first",
      keys=("graph", "engine", "recall", "workload", "load", "scheduler"))
def sched(ctx: Context) -> Result:
    p: Params = ctx.params
    sp = p.scheduler
    inputs.loaded(p, ctx.input("manifest"), ctx.input("graph"))     # the graph checked, sizes checked
    cls = inputs.classes(p)
    pools = [Pool(t, cls, t.capacity_rps(cls.prefill))
             for t in inputs.load_trace_processes(ctx.input("trace"), ctx.seed)]
    rows = []
    for policy in sp.policies:
        for frac in sp.prefill_loads:
            for rep in range(sp.repeats):
                base, out, pol = _policy_run(pools, sp, policy, frac, ctx.seed, rep)
                rows.append({"row": "run", **base, **out})
                rows += [{"row": "control", **base, **h} for h in pol.history]
    rows += _sweep_rows(pools, sp, ctx.seed)
    df = pd.DataFrame(rows)
    df.insert(0, "dataset", pools[0].traced.dataset)
    caps = [q.capacity_rps for q in pools]
    return Result(records=df, method=_method(sp, caps),
                  provenance={"capacity_rps": caps, "t_ext_full_s": [q.traced.t_full for q in pools],
                              "trace_processes": len(pools)})

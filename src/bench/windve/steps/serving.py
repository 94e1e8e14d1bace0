"""Step ``serving``: the service at work, in ``service_processes`` fresh service processes one after another
(each loads the model and warms up anew; rows carry ``process``), each running:

1. the service against the bare model on the same cores (target: HTTP + queueing cost <= 10%);
2. Tables I/II (Section V-B): fine-tuned max concurrency per pair and SLO, accelerator only and with CPU
   offload, depths fine-tuned with both devices running;
3. CPU utilisation at those depths without and with offload (the paper: 8% -> 80%);
4. the overload case: 3x the max concurrency at once (every answer an embedding or a 429), which also
   times the queue manager's decisions;
5. beyond the paper, drawn only, in the first service process: open-loop Poisson and bursty load (goodput,
   p50/p99, shares) without and with offload
   (Poisson runs by MLPerf LoadGen's Server scenario unless ``windve.openloop.generator: ours``; bursty runs by
   our generator; the ``generator`` column says which ran),
   one ``openloop`` row per run and one ``openloop_request`` row per request (intended send time, sent,
   answered, status, device: the bursty run stands for Figure 2's daily load curve).

Depths start from the ``profile`` step's regression depths. The accelerator is the one the service runs
(``svc.accelerator``): the CUDA GPU where there is one (rows ``source=measured``, ``accelerator=cuda``),
else the emulated one (its law from the profile's CPU fit and the pair's paper ratios; ``source=emulated``).
Depth columns are ``depth_acc`` and ``depth_cpu`` whichever the accelerator.

Admission: Tables I/II and the utilisation rounds use the paper's Algorithm 1 alone (depth only: the
depths are what is being measured); the overload case and the open loop run the service as deployed,
with deadline admission at the SLO (:mod:`..system.admission`), recorded in the ``admission`` column.
"""
from __future__ import annotations

import asyncio

import numpy as np
import pandas as pd
import psutil

from bench.core.measuring import records
from bench.core.measuring.step import Context, Result
from bench.core.declaring.study import step
from bench.serving import loadgen

from .. import load
from ..params import Params, check
from ..system import emulation, estimator
from ..system.textgen import load_fast_tokenizer
from .inputs import (Clock, Pools, accelerator_words, decision_rows, first_index, overhead, profile_depths, run_pairs,
                     service, share, source_of)

METHOD = (
    "Against `bench windve serve` on 127.0.0.1 over HTTP (/embed), every instance warmed before /health said ready, "
    "in {processes} fresh service processes one after another (rows carry `process`; each runs its share of the "
    "overhead pairs and fine-tuning searches, and its own utilisation rounds and overload; the open loop, drawn "
    "only, in the first). "
    "{acc_words} Overhead: bare model (same cores and "
    "threads, in the load generator's process while the service idles) against the CPU-only service at the same "
    "batch, repeats interleaved, one paired ratio per repeat (the profile step measures it too, in its own service "
    "process). Every request's Algorithm 1 decision time is recorded by the service (`dispatch` rows). Tables I/II: closed loop (all queues filled at once, next round when all "
    "answered), depths fine-tuned from the regression depths (step {fine_tune_step}, at most {fine_tune_max_runs} "
    "runs of {rounds} rounds; a device meets the SLO when the median over rounds of its slowest query does; "
    "admission by depth only, Algorithm 1); interval: largest C met in every round .. in any round. Utilisation: "
    "the service process's CPU seconds over wall time during rounds at the fine-tuned depths, without and with "
    "offload. Overload: {overload_factor}x the max concurrency at once with deadline admission at the SLO (a "
    "request admitted only where its predicted completion, running batch and queue included, meets it); each "
    "answer checked (200 + cosine to the model's own embedding, or 429 + Retry-After). Open loop (deadline "
    "admission too): Poisson / bursty schedules at multiples of the "
    "accelerator-only capacity (max concurrency / SLO), latency from the intended send time, HDR percentiles, "
    "goodput = answers within the SLO per second; the load generator's own CPU recorded; each request also "
    "recorded as it went (intended send, sent and answered times, status, device). Poisson runs by {generator}; "
    "bursty runs by our generator (bench.serving.loadgen: LoadGen's Server scenario has one fixed rate); the "
    "generator column says which ran.")


GENERATOR_WORDS = {"loadgen": "MLPerf LoadGen's Server scenario (mlcommons-loadgen: its Poisson arrivals, latency "
                             "from its scheduled times; its own percentiles, validity and early stopping in mlperf_* "
                             "columns)",
                   "ours": "our open-loop generator (bench.serving.loadgen)"}


def depth_cols(depths: dict[str, int]) -> dict[str, int]:
    """``{device: depth}`` as record columns ``depth_acc`` / ``depth_cpu``."""
    return {f"depth_{'cpu' if d == 'cpu' else 'acc'}": v for d, v in depths.items()}


class Tuner:
    """Closed-loop rounds at given depths (every queue filled at once); its rounds collect in :attr:`rows`."""

    def __init__(self, svc, sess, pool, params: Params, tags: dict):
        self.svc, self.sess, self.pool, self.p, self.tags = svc, sess, pool, params, tags
        self.rows: list[dict] = []

    async def measure(self, depths: dict[str, int]) -> dict[str, float]:
        self.svc.admin(depths=depths)
        got = await load.closed_level(self.sess, self.svc.url, self.pool, sum(depths.values()), self.p.rounds, 0)
        for r in got:
            self.rows.append({"kind": "round", **self.tags, **r, **depth_cols(depths)})
        return {dev: load.level_stat(got, f"latency_max_{dev}_s") if all(r[f"n_{dev}"] for r in got) else float("inf")
                for dev in depths}


def bounds(rows: list[dict], tags: dict, slo: float) -> tuple[int, int]:
    """(low, high) of the max concurrency from the rounds: largest total C whose every round met the SLO,
    and largest total C with at least one round meeting it."""
    mine = [r for r in rows if r["kind"] == "round" and all(r.get(k) == v for k, v in tags.items())]
    by_c: dict[int, list[bool]] = {}
    for r in mine:
        by_c.setdefault(r["concurrency"], []).append(r["n_ok"] == r["n"] and r["latency_max_s"] <= slo)
    low = max([c for c, ok in by_c.items() if all(ok)], default=0)
    high = max([c for c, ok in by_c.items() if any(ok)], default=0)
    return low, high


async def _max_concurrency(svc, sess, p: Params, pool, start: dict, tags: dict, slo: float) -> tuple[dict, list[dict]]:
    """One Tables I/II cell: fine-tuned depths from ``start``; the rounds and the ``maxconc`` row."""
    tuner = Tuner(svc, sess, pool, p, tags)
    s = await estimator.fine_tune(tuner.measure, start, slo, step=p.fine_tune_step, max_runs=p.fine_tune_max_runs)
    low, high = bounds(tuner.rows, tags, slo)
    row = {"kind": "maxconc", **tags, "cannot_help": False, "total": s.depth, "runs": s.runs, "converged": s.converged,
           "bracketed": s.bracketed, "total_low": low, "total_high": high, **depth_cols(s.depths)}
    return s.depths, tuner.rows + [row]


async def tables(svc, sess, p: Params, pool, fit: dict, depths: dict, reps: range = range(1)) -> tuple[dict, list[dict]]:
    """Per pair and SLO: fine-tuned accelerator-only depth, then both devices with offload, once per search of
    ``reps`` (this service process's searches, numbered across processes). Returns the first search's
    fine-tuned depths {(pair, slo, config): {device: depth}} and the rows."""
    final, rows = {}, []
    for rep in reps:   # independent searches from the same start: the boundary's spread
        f, r = await _tables_once(svc, sess, p, pool, fit, depths, rep)
        rows += r
        final = final or f   # the first search's depths drive the utilisation and open-loop rounds
    return final, rows


async def _tables_once(svc, sess, p: Params, pool, fit: dict, depths: dict, rep: int) -> tuple[dict, list[dict]]:
    """One fine-tuning search of every pair, SLO and configuration (``search`` = ``rep`` on its rows)."""
    final, rows, acc = {}, [], svc.accelerator
    for pair in run_pairs(p, acc, serving=True):
        if acc == "emulated":
            svc.admin(emulated_law=vars(emulation.emulated_law(fit["alpha"], fit["beta"], pair)))
        for slo in p.slos_s:
            for config in ("accelerator_only", "offload"):
                tags = {"pair": pair, "slo_s": slo, "config": config, "accelerator": acc, "source": source_of(acc),
                        "admission": "depth", "search": rep}
                devs = [acc] if config == "accelerator_only" else [acc, "cpu"]
                svc.admin(active=devs, offload=config == "offload", slo_s=None)
                start = {acc: final.get((pair, slo, "accelerator_only"), {}).get(acc)
                         or max(1, depths[(acc, pair, slo)])}
                if config == "offload":
                    start["cpu"] = depths.get(("cpu", "", slo), 0)
                    if start["cpu"] < 1:
                        rows.append({"kind": "maxconc", **tags, "cannot_help": True, "depth_acc": start[acc],
                                     "depth_cpu": 0, "total": start[acc], "runs": 0})
                        continue
                final[(pair, slo, config)], got = await _max_concurrency(svc, sess, p, pool, start, tags, slo)
                rows += got
    return final, rows


async def utilisation(svc, sess, p: Params, pool, final: dict) -> list[dict]:
    """The service process's CPU use per closed round at the fine-tuned depths, without and with offload
    (CPU seconds over the round's wall time; the paper's "average CPU utilisation")."""
    pair, slo = run_pairs(p, svc.accelerator, serving=True)[0], max(p.slos_s)
    proc = psutil.Process(svc.proc.pid)
    cores = svc.admin()["cpu_cores"]
    rows = []
    for config in ("accelerator_only", "offload"):
        depths = final.get((pair, slo, config))
        if not depths:
            continue
        svc.admin(active=list(depths), offload=config == "offload", depths=depths, slo_s=None)
        for r in range(p.rounds):
            t0, meter = proc.cpu_times(), loadgen.CpuMeter().start()
            got = (await load.closed_level(sess, svc.url, pool, sum(depths.values()), 1, 0))[0]
            t1, gen = proc.cpu_times(), meter.stop()
            used = (t1.user + t1.system) - (t0.user + t0.system)
            rows.append({"kind": "util", "pair": pair, "slo_s": slo, "config": config, "round": r,
                         "accelerator": svc.accelerator, "source": source_of(svc.accelerator), "admission": "depth",
                         "service_cpu_s": used, "served": got["n_ok"], "service_cores": used / gen["loadgen_wall_s"],
                         "machine_cores": psutil.cpu_count(), "cpu_instance_cores": ",".join(map(str, cores)),
                         **{k: v for k, v in gen.items() if k != "loadgen_pid"}})
    return rows


async def overload(svc, sess, p: Params, pool, refs: dict, final: dict) -> list[dict]:
    """``overload_factor`` x the fine-tuned max concurrency at once, with deadline admission at the SLO:
    each answer an embedding (predicted and, the target, served within the SLO) or a 429."""
    pair, slo = run_pairs(p, svc.accelerator, serving=True)[0], max(p.slos_s)
    depths = final.get((pair, slo, "offload")) or final[(pair, slo, "accelerator_only")]
    svc.admin(active=list(depths), offload=len(depths) > 1, depths=depths, slo_s=slo)
    n = p.overload_factor * sum(depths.values())
    rows = []
    for r in range(p.rounds):
        texts = load.round_texts(pool, n, r * n)
        res = await load.closed_round(sess, svc.url, texts)
        for i, (t, x) in enumerate(zip(texts, res)):
            cos = float(np.dot(x["vector"], refs[t]) / np.linalg.norm(x["vector"])) if x["vector"] else np.nan
            rows.append({"kind": "overload", "pair": pair, "slo_s": slo, "round": r, "request": i, "sent": n,
                         "max_concurrency": sum(depths.values()), "status": x["status"], "device": x["device"],
                         "latency_s": x["latency_s"], "service_s": x.get("service_s", np.nan),
                         "queue_s": x.get("queue_s", np.nan), "compute_s": x.get("compute_s", np.nan),
                         "cosine": cos, "dispatch_us": x["dispatch_us"],
                         "retry_after": x["retry_after"] or "", "predicted_s": x["predicted_s"],
                         "predicted_batch_s": x.get("predicted_batch_s", np.nan),
                         "refused_by": x["refused_by"], "admission": "depth+deadline", "accelerator": svc.accelerator,
                         "source": source_of(x["device"]) if x["device"] else source_of(svc.accelerator)})
    health = svc.admin(slo_s=None)   # the service still answers
    rows.append({"kind": "overload_health", "pair": pair, "slo_s": slo, "healthy": bool(health["ready"]),
                 "source": "measured"})
    return rows


async def _open(svc, sess, pool: list[str], sched, slo: float, tags: dict, generator: str = "ours",
                rate: float | None = None, seed: int | None = None) -> list[dict]:
    """One open-loop run: its summary row (``openloop``) and one row per request (``openloop_request``:
    intended send time, sent, answered, status, device; Figure 2's stand-in reads them)."""
    summ, reqs = await load.open_run(svc, sess, pool, sched, slo, generator, rate, seed)
    acc = tags["accelerator"]
    return [{"kind": "openloop", **tags, **summ}] + [
        {"kind": "openloop_request", **tags, **q, "source": source_of(q["device"]) if q["device"] else source_of(acc)}
        for q in reqs]


async def openloop(svc, sess, p: Params, pool: list[str], final: dict, seed: int) -> list[dict]:
    """Beyond the paper: every offered rate and the bursty schedule, without and with offload, for the
    first pair and largest SLO, at multiples of the accelerator-only capacity (its max concurrency / SLO)."""
    acc = svc.accelerator
    o, pair, slo = p.openloop, run_pairs(p, acc, serving=True)[0], max(p.slos_s)
    base = final.get((pair, slo, "accelerator_only"))
    if not base:
        return []
    capacity = base[acc] / slo   # accelerator-only queries per second at its max concurrency
    common = {"pair": pair, "slo_s": slo, "accelerator": acc, "source": source_of(acc), "admission": "depth+deadline"}
    rows = []
    for config in ("accelerator_only", "offload"):
        depths = final.get((pair, slo, config))
        if not depths:
            continue
        svc.admin(active=list(depths), offload=config == "offload", depths=depths, slo_s=slo)
        for j, f in enumerate(o.load_factors):
            rate = f * capacity
            sched = loadgen.poisson_schedule(rate, max(1, int(rate * o.duration_s)), seed + j)
            tags = {**common, "config": config, "arrivals": "poisson", "load_factor": f, "offered_rps": rate}
            rows += await _open(svc, sess, pool, sched, slo, tags, o.generator, rate, seed + j)
        rate = o.burst_load_factor * capacity   # bursty: our generator (LoadGen has one fixed rate)
        sched = loadgen.bursty_schedule(rate, max(1, int(rate * o.duration_s)), seed + 99,
                                        burst_factor=o.burst_factor, burst_s=o.burst_s, period_s=o.period_s)
        tags = {**common, "config": config, "arrivals": "bursty", "load_factor": o.burst_load_factor,
                "offered_rps": rate, "burst_factor": o.burst_factor, "burst_s": o.burst_s, "period_s": o.period_s}
        rows += await _open(svc, sess, pool, sched, slo, tags)
    return rows


def references(model_path, texts):
    """An encoder in the load generator and the model's own normalised embeddings of the pool (client
    side, for the overload check)."""
    from ..system.encoder import Encoder, normalize

    enc = Encoder(model_path)
    return enc, dict(zip(texts, normalize(enc.embed(texts))))


async def _run(svc, p: Params, pool, fit, depths, encoder, refs, seed, k: int = 0) -> tuple[dict, list[dict]]:
    """Service process ``k``: its share of the overhead pairs and of the fine-tuning searches, the utilisation
    rounds and the overload at its own fine-tuned depths; the open loop (drawn only) in the first."""
    n = p.service_processes
    async with load.session() as sess:
        acc = svc.accelerator
        svc.admin(active=[acc], depths={acc: len(pool)})
        async with sess.post(svc.url + "/embed", json={"inputs": pool[:32]}) as r:   # emulated cache / warm, before the run
            await r.read()
        rows = await overhead(svc, sess, p, pool, encoder, "serving", share(p.overhead_repeats, k, n))
        first = first_index(p.search_repeats, k, n)
        final, got = await tables(svc, sess, p, pool, fit, depths, range(first, first + share(p.search_repeats, k, n)))
        rows += got
        rows += await utilisation(svc, sess, p, pool, final)
        rows += await overload(svc, sess, p, pool, refs, final)
        if k == 0:
            rows += await openloop(svc, sess, p, pool, final, seed)
        rows += decision_rows(svc, "serving")
        return {"final_depths": {"/".join(map(str, key)): v for key, v in final.items()}}, rows


@step("serving", needs=("profile",), writes="serving",
      keys=("accelerator", "model", "query_tokens", "slos_s", "pairs", "serving_pairs", "service_processes", "rounds",
            "cpu_cores",
            "cpu_instance_threads", "text_pool", "batch_delay_ms", "start_timeout_s", "fine_tune_step",
            "fine_tune_max_runs", "search_repeats", "overload_factor", "overhead_batch", "overhead_repeats",
            "openloop"))
def serving(ctx: Context) -> Result:
    p: Params = ctx.params
    check(p)   # cross-key checks before any service starts
    clock = Clock()
    fit, depths = profile_depths(records.read(ctx.input("profile")))
    pool = Pools(load_fast_tokenizer(p.model), p.text_pool, ctx.seed)(p.query_tokens)
    rows, finals, started, prepared = [], {}, [], None
    for k in range(p.service_processes):   # fresh service processes, one after another
        with service(p, p.pairs[0], meanwhile=(lambda: references(p.model, pool)) if prepared is None else None) as svc:
            prepared = prepared or svc.prepared
            encoder, refs = prepared
            extra, got = asyncio.run(_run(svc, p, pool, fit, depths, encoder, refs, ctx.seed, k))
            rows += [{**r, "process": k} for r in got]
            finals[str(k)] = extra["final_depths"]
            info, acc = svc.admin(), svc.accelerator
            started.append(svc.started_s)
    prov = {"final_depths": finals, "accelerator": acc, "service_info": info, "cpu_fit": fit,
            "service_start_s": started, "service_processes": p.service_processes, "step_wall_s": clock()}
    if acc == "emulated":
        prov["emulated_laws"] = {pr: vars(emulation.emulated_law(fit["alpha"], fit["beta"], pr)) for pr in p.pairs}
    method = METHOD.format(processes=p.service_processes, fine_tune_step=p.fine_tune_step, fine_tune_max_runs=p.fine_tune_max_runs, rounds=p.rounds,
                           overload_factor=p.overload_factor, acc_words=accelerator_words(acc, info),
                           generator=GENERATOR_WORDS[p.openloop.generator])
    return Result(records=pd.DataFrame(rows), method=method, provenance=prov)

"""Step ``serving``: the service at work, in one service process (one model load for the whole step):

1. the service against the bare model on the same cores (target: HTTP + queueing cost <= 10%);
2. Tables I/II: fine-tuned max concurrency per pair and SLO, accelerator only and with CPU offload;
3. CPU utilisation at those depths without and with offload (the paper: 8% -> 80%);
4. the overload case: 3x the max concurrency at once (every answer an embedding or a 429);
5. beyond the paper: open-loop Poisson and bursty load (goodput, p50/p99, shares) without and with offload.

Depths start from the ``profile`` step's regression depths. The accelerator is the CUDA GPU where there is
one (measured), else EMULATED (:func:`.common.resolve_accelerator`); rows say which (``accelerator``,
``source``).
"""
from __future__ import annotations

import asyncio

import pandas as pd

from bench.core import records
from bench.core.step import Context, Result

from .. import client, emulation
from ..textgen import load_fast_tokenizer
from .common import Clock, Pools, accelerator_words, service
from .concurrency import overhead, overload, profile_depths, references, tables, utilisation
from .openloop import openloop

METHOD = (
    "Against `bench windve serve` on 127.0.0.1 over HTTP (/embed), every instance warmed before /health said ready. "
    "{acc_words} Overhead: bare model (same cores and "
    "threads, in the load generator's process while the service idles) against the CPU-only service at the same "
    "batch, repeats interleaved. Tables I/II: closed loop (all queues filled at once, next round when all "
    "answered), depths fine-tuned from the regression depths (step {fine_tune_step}, at most {fine_tune_max_runs} "
    "runs of {rounds} rounds; a device meets the SLO when the median over rounds of its slowest query does; "
    "admission by depth only, Algorithm 1); interval: largest C met in every round .. in any round. Utilisation: "
    "the service process's CPU seconds over wall time during rounds at the fine-tuned depths, without and with "
    "offload. Overload: {overload_factor}x the max concurrency at once with deadline admission at the SLO (a "
    "request admitted only where its predicted completion, running batch and queue included, meets it); each "
    "answer checked (200 + cosine to the model's own embedding, or 429 + Retry-After). Open loop (deadline "
    "admission too): Poisson / bursty schedules at multiples of the "
    "accelerator-only capacity (max concurrency / SLO), latency from the intended send time, HDR percentiles, "
    "goodput = answers within the SLO per second; the load generator's own CPU recorded.")


async def _run(svc, p, pool, fit, depths, encoder, refs, seed, rows) -> dict:
    async with client.session() as sess:
        acc = svc.accelerator
        svc.admin(active=[acc], depths={acc: len(pool)})
        async with sess.post(svc.url + "/embed", json={"inputs": pool[:32]}) as r:   # emulated cache / warm, before the run
            await r.read()
        rows += await overhead(svc, sess, p, pool, encoder)
        final = await tables(svc, sess, p, pool, fit, depths, rows)
        await utilisation(svc, sess, p, pool, final, rows)
        await overload(svc, sess, p, pool, refs, final, rows)
        await openloop(svc, sess, p, pool, final, rows, seed)
        return {"final_depths": {"/".join(map(str, k)): v for k, v in final.items()}}


def serving(ctx: Context) -> Result:
    p, clock, rows = ctx.params, Clock(), []
    fit, depths = profile_depths(records.read(ctx.input("profile")))
    pool = Pools(load_fast_tokenizer(p.get("model")), p["text_pool"], ctx.seed)(p["query_tokens"])
    ref: list = []
    with service(p, p["pairs"][0], meanwhile=lambda: ref.extend(references(p.get("model"), pool))) as svc:
        encoder, refs = ref
        extra = asyncio.run(_run(svc, p, pool, fit, depths, encoder, refs, ctx.seed, rows))
        info, started, acc = svc.admin(), svc.started_s, svc.accelerator
    prov = {**extra, "accelerator": acc, "service_info": info, "cpu_fit": fit, "service_start_s": started,
            "step_wall_s": clock()}
    if acc == "emulated":
        prov["emulated_laws"] = {pr: vars(emulation.emulated_law(fit["alpha"], fit["beta"], pr)) for pr in p["pairs"]}
    method = METHOD.format(**p, acc_words=accelerator_words(acc, info))
    return Result(records=pd.DataFrame(rows), method=method, provenance=prov)

"""The closed-loop parts of step ``serving``: Tables I/II (max concurrency at each SLO, accelerator only against
accelerator + CPU offload, depths fine-tuned with both devices running, Section V-B), the 3x overload
case, CPU utilisation with and without offload, the queue manager's own time, and the service's
throughput against the bare model's on the same cores.

Starts from the regression depths of the ``profile`` records. The accelerator is the one the service runs
(``svc.accelerator``): the CUDA GPU where there is one (rows ``source=measured``, ``accelerator=cuda``),
else the emulated one (its law from the profile's CPU fit and the pair's paper ratios; ``source=emulated``).
Depth columns are ``depth_acc`` and ``depth_cpu`` whichever the accelerator.

Admission: Tables I/II and the utilisation rounds use the paper's Algorithm 1 alone (depth only: the
depths are what is being measured); the overload case and the open loop run the service as deployed,
with deadline admission at the SLO (:mod:`..admission`), recorded in the ``admission`` column.
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import psutil

from bench.core.loadgen import CpuMeter

from .. import client, emulation, estimator
from .common import closed_level, level_stat, run_pairs, source_of


def depth_cols(depths: dict[str, int]) -> dict[str, int]:
    """``{device: depth}`` as record columns ``depth_acc`` / ``depth_cpu``."""
    return {f"depth_{'cpu' if d == 'cpu' else 'acc'}": v for d, v in depths.items()}


def profile_depths(df: pd.DataFrame) -> tuple[dict, dict]:
    """(CPU base fit {alpha, beta}, regression depths {(device, pair, slo): depth}) from profile records."""
    fit = df[(df.kind == "fit") & (df.experiment == "base") & (df.device == "cpu")].iloc[0]
    d = df[(df.kind == "depth") & (df.experiment == "base") & (df.method == "regression")]
    depths = {(r.device, r.pair, float(r.slo_s)): int(r.depth) for r in d.itertuples()}
    return {"alpha": float(fit.alpha), "beta": float(fit.beta)}, depths


class Tuner:
    """Closed-loop rounds at given depths (every queue filled at once), recorded as rows."""

    def __init__(self, svc, sess, pool, params, rows, tags):
        self.svc, self.sess, self.pool, self.p, self.rows, self.tags = svc, sess, pool, params, rows, tags

    async def measure(self, depths: dict[str, int]) -> dict[str, float]:
        self.svc.admin(depths=depths)
        got = await closed_level(self.sess, self.svc.url, self.pool, sum(depths.values()), self.p["rounds"], 0)
        for r in got:
            self.rows.append({"kind": "round", **self.tags, **r, **depth_cols(depths)})
        return {dev: level_stat(got, f"latency_max_{dev}_s") if all(r[f"n_{dev}"] for r in got) else float("inf")
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


async def tables(svc, sess, p, pool, fit, depths, rows) -> dict:
    """Per pair and SLO: fine-tuned accelerator-only depth, then both devices with offload."""
    final, acc = {}, svc.accelerator
    for pair in run_pairs(p, acc, "serving_pairs"):
        if acc == "emulated":
            svc.admin(emulated_law=vars(emulation.emulated_law(fit["alpha"], fit["beta"], pair)))
        for slo in p["slos_s"]:
            for config in ("accelerator_only", "offload"):
                tags = {"pair": pair, "slo_s": slo, "config": config, "accelerator": acc, "source": source_of(acc),
                        "admission": "depth"}
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
                tuner = Tuner(svc, sess, pool, p, rows, tags)
                s = await estimator.fine_tune(tuner.measure, start, slo, step=p["fine_tune_step"],
                                              max_runs=p["fine_tune_max_runs"])
                low, high = bounds(rows, tags, slo)
                final[(pair, slo, config)] = s.depths
                rows.append({"kind": "maxconc", **tags, "cannot_help": False, "total": s.depth, "runs": s.runs,
                             "converged": s.converged,
                             "total_low": low, "total_high": high, **depth_cols(s.depths)})
    return final


async def utilisation(svc, sess, p, pool, final, rows) -> None:
    """The service process's CPU use per closed round at the fine-tuned depths, without and with offload
    (CPU seconds over the round's wall time; the paper's "average CPU utilisation")."""
    pair, slo = run_pairs(p, svc.accelerator, "serving_pairs")[0], max(p["slos_s"])
    proc = psutil.Process(svc.proc.pid)
    cores = svc.admin()["cpu_cores"]
    for config in ("accelerator_only", "offload"):
        depths = final.get((pair, slo, config))
        if not depths:
            continue
        svc.admin(active=list(depths), offload=config == "offload", depths=depths, slo_s=None)
        for r in range(p["rounds"]):
            t0, meter = proc.cpu_times(), CpuMeter().start()
            got = (await closed_level(sess, svc.url, pool, sum(depths.values()), 1, 0))[0]
            t1, gen = proc.cpu_times(), meter.stop()
            used = (t1.user + t1.system) - (t0.user + t0.system)
            rows.append({"kind": "util", "pair": pair, "slo_s": slo, "config": config, "round": r,
                         "accelerator": svc.accelerator, "source": source_of(svc.accelerator), "admission": "depth",
                         "service_cpu_s": used, "served": got["n_ok"], "service_cores": used / gen["loadgen_wall_s"],
                         "machine_cores": psutil.cpu_count(), "cpu_instance_cores": ",".join(map(str, cores)),
                         **{k: v for k, v in gen.items() if k != "loadgen_pid"}})


async def overload(svc, sess, p, pool, refs, final, rows) -> None:
    """``overload_factor`` x the fine-tuned max concurrency at once, with deadline admission at the SLO:
    each answer an embedding (predicted and, the target, served within the SLO) or a 429."""
    pair, slo = run_pairs(p, svc.accelerator, "serving_pairs")[0], max(p["slos_s"])
    depths = final.get((pair, slo, "offload")) or final[(pair, slo, "accelerator_only")]
    svc.admin(active=list(depths), offload=len(depths) > 1, depths=depths, slo_s=slo)
    n = p["overload_factor"] * sum(depths.values())
    for r in range(p["rounds"]):
        texts = client.round_texts(pool, n, r * n)
        res = await client.closed_round(sess, svc.url, texts)
        for i, (t, x) in enumerate(zip(texts, res)):
            cos = float(np.dot(x["vector"], refs[t]) / np.linalg.norm(x["vector"])) if x["vector"] else np.nan
            rows.append({"kind": "overload", "pair": pair, "slo_s": slo, "round": r, "request": i, "sent": n,
                         "max_concurrency": sum(depths.values()), "status": x["status"], "device": x["device"],
                         "latency_s": x["latency_s"], "cosine": cos, "dispatch_us": x["dispatch_us"],
                         "retry_after": x["retry_after"] or "", "predicted_s": x["predicted_s"],
                         "refused_by": x["refused_by"], "admission": "depth+deadline", "accelerator": svc.accelerator,
                         "source": source_of(x["device"]) if x["device"] else source_of(svc.accelerator)})
    health = svc.admin(slo_s=None)   # the service still answers
    rows.append({"kind": "overload_health", "pair": pair, "slo_s": slo, "healthy": bool(health["ready"]),
                 "source": "measured"})


async def overhead(svc, sess, p, pool, encoder) -> list[dict]:
    """The CPU-only service against the bare model on the same cores and threads, repeats interleaved
    (bare, service, bare, ...) so machine noise hits both alike; the first of each is warm-up."""
    import time

    import torch

    batch = p["overhead_batch"]
    info = svc.admin(active=["cpu"], depths={"cpu": batch})
    texts = pool[:batch]
    before = os.sched_getaffinity(0)
    rows = []
    for i in range(p["overhead_repeats"] + 1):
        phase = "warmup" if i == 0 else "measured"
        os.sched_setaffinity(0, set(info["cpu_cores"]))
        torch.set_num_threads(info["cpu_threads"])
        try:
            t0 = time.perf_counter()
            encoder.embed(texts)
            bare = time.perf_counter() - t0
        finally:
            os.sched_setaffinity(0, before)
        got = (await closed_level(sess, svc.url, pool, batch, 1, 0))[0]
        for mode, sec, n in (("bare_model", bare, batch), ("service", got["latency_max_s"], got["n_ok"])):
            rows.append({"kind": "overhead", "mode": mode, "repeat": i, "batch": batch, "phase": phase,
                         "seconds": sec, "throughput": n / sec, "cpu_threads": info["cpu_threads"],
                         "cpu_cores": ",".join(map(str, info["cpu_cores"])), "source": "measured"})
    return rows


def references(model_path, texts):
    """An encoder in the load generator and the model's own normalised embeddings of the pool (client side, for the overload check)."""
    from ..model import Encoder, normalize

    enc = Encoder(model_path)
    return enc, dict(zip(texts, normalize(enc.embed(texts))))

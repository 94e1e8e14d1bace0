"""Beyond the paper: open-loop load on the service at its fine-tuned depths, without and with offload.

Poisson arrivals (and bursts on a base rate) at offered rates relative to the accelerator-only
capacity (its max concurrency per SLO); each request is sent at its intended time whatever happened to
earlier ones, latency counted from the intended send time (no coordinated omission), percentiles from
an HDR histogram (:mod:`bench.core.loadgen`). Per run: goodput (answers within the SLO per second), the
shares served by the accelerator, offloaded to the CPU and refused, and the CPU the service process and
the load generator used. The service runs as deployed: deadline admission at the SLO (``admission``
column), the accelerator the one it found (``accelerator``, ``source``).
"""
from __future__ import annotations

import psutil

from bench.core import loadgen

from .. import client
from .common import run_pairs, source_of

REQUEST_TIMEOUT_SLOS = 20   # a request unanswered after this many SLOs counts as lost


async def _one_run(svc, sess, pool, schedule, slo: float, tags: dict, rows: list[dict]) -> None:
    proc = psutil.Process(svc.proc.pid)
    t0, meter = proc.cpu_times(), loadgen.CpuMeter().start()
    outs = await loadgen.run_open_loop(schedule, lambda i: client.post_embed(sess, svc.url, pool[i % len(pool)]),
                                       timeout_s=REQUEST_TIMEOUT_SLOS * slo, ok=lambda r: r["status"] == 200)
    gen, t1 = meter.stop(), proc.cpu_times()
    duration = max(o.done_s for o in outs)
    ok = [o for o in outs if o.ok]
    devs = [o.status["device"] if isinstance(o.status, dict) else "" for o in outs]
    summ = loadgen.latency_summary([o.latency_s for o in ok], duration, slo_s=slo)
    n = len(outs)
    rows.append({"kind": "openloop", **tags, "n": n, "duration_s": duration, **summ,
                 "share_accelerator": devs.count("emulated") / n + devs.count("cuda") / n,
                 "share_cpu": devs.count("cpu") / n,
                 "share_refused": sum(isinstance(o.status, dict) and o.status["status"] == 429 for o in outs) / n,
                 "share_lost": sum(o.error is not None for o in outs) / n,
                 "late_sends_s": max(o.sent_s - o.intended_s for o in outs),
                 "service_cpu_s": (t1.user + t1.system) - (t0.user + t0.system),
                 "service_cores": ((t1.user + t1.system) - (t0.user + t0.system)) / gen["loadgen_wall_s"],
                 "machine_cores": psutil.cpu_count(), **{k: v for k, v in gen.items() if k != "loadgen_pid"}})


async def openloop(svc, sess, p: dict, pool: list[str], final: dict, rows: list[dict], seed: int) -> None:
    """Every offered rate and the bursty schedule, without and with offload, for the first pair and largest SLO."""
    acc = svc.accelerator
    o, pair, slo = p["openloop"], run_pairs(p, acc, "serving_pairs")[0], max(p["slos_s"])
    base = final.get((pair, slo, "accelerator_only"))
    if not base:
        return
    capacity = base[acc] / slo   # accelerator-only queries per second at its max concurrency
    common = {"pair": pair, "slo_s": slo, "accelerator": acc, "source": source_of(acc), "admission": "depth+deadline"}
    for config in ("accelerator_only", "offload"):
        depths = final.get((pair, slo, config))
        if not depths:
            continue
        svc.admin(active=list(depths), offload=config == "offload", depths=depths, slo_s=slo)
        for j, f in enumerate(o["load_factors"]):
            rate = f * capacity
            sched = loadgen.poisson_schedule(rate, max(1, int(rate * o["duration_s"])), seed + j)
            tags = {**common, "config": config, "arrivals": "poisson", "load_factor": f, "offered_rps": rate}
            await _one_run(svc, sess, pool, sched, slo, tags, rows)
        rate = o["burst_load_factor"] * capacity
        sched = loadgen.bursty_schedule(rate, max(1, int(rate * o["duration_s"])), seed + 99,
                                        burst_factor=o["burst_factor"], burst_s=o["burst_s"], period_s=o["period_s"])
        tags = {**common, "config": config, "arrivals": "bursty", "load_factor": o["burst_load_factor"],
                "offered_rps": rate}
        await _one_run(svc, sess, pool, sched, slo, tags, rows)

"""Synthetic WindVE records, built through the study's own emulation and estimator code: every record kind
:func:`bench.windve.claims.build` reads, for the sensitivity test of what the paper fixed
(:func:`bench.core.judging.fidelity.sensitivity`) and for tests. Deterministic and fast (no service, no
event loop: the estimator's searches are driven directly).

A synthetic CPU (its law t = alpha * C + beta, a little different in each of the ``service_processes``
fresh processes) stands for this machine's; each emulated accelerator's law comes from
:func:`..system.emulation.emulated_law` (the paper's ratios, read at call time, so scaling an input moves
what it moves), plus a fixed HTTP cost and a little curvature (so the regression and the stress test can
differ). The profile fits each device's levels, predicts its depths (equation 12) and climbs its stress
test; the serving records fine-tune each pair and SLO alone and with offload (Section V-B), then the
utilisation rounds (the CPU busy for its batch, each round as long as the slower device's), the 3x overload
and the queue manager's decisions. Figure-only kinds (rounds, Figures 5/6, the open loop) are left out.

``accelerator="cuda"`` writes what a GPU machine would instead: a synthetic GPU (its law :data:`GPU_LAW` times
the CPU's, no paper input) measured, standing for the V100 pair only.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .params import Params
from .system import emulation, estimator
from .system.emulation import LinearLaw

CPU_LAW = (0.03, 0.02)        # s per query, s: a MiniLM CPU instance of one core at 75 tokens
HTTP = (0.0004, 0.004)        # the service's own cost per query and per batch (seconds)
CURVE = 2e-6                  # s per query^2: the latency bends up a little at high concurrency
CONTENTION = 0.03             # the accelerator's batches slow by this share with the CPU instance busy beside it
JITTER = (-0.0015, 0.002, 0.0)   # per round: a relative change of the latency (deterministic)
GPU_LAW = (0.05, 0.4)         # a synthetic GPU: alpha and beta as shares of the CPU's (an H200 beside 16 cores)
GPU_NAME = "NVIDIA H100 80GB HBM3"


def _sync(coro):
    """Run a coroutine that never waits on anything real (the estimator over a synthetic device) to its end."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("a synthetic measurement awaited something real")


def _cpu_law(k: int) -> LinearLaw:
    return LinearLaw(CPU_LAW[0] * (1 + 0.02 * (k - 1)), CPU_LAW[1] * (1 + 0.03 * k))


def _served(law: LinearLaw, c: int, r: int = 0, busy: float = 0.0) -> float:
    """The latency of a closed round of ``c`` queries on a device with ``law`` as the service shows it."""
    t = law.latency(c) + HTTP[0] * c + HTTP[1] + CURVE * c * c
    return t * (1 + JITTER[r % len(JITTER)]) * (1 + busy)


def _tags(device: str, pair: str, k: int) -> dict:
    src = "emulated" if device == "emulated" else "measured"
    name = {"cpu": "CPU", "cuda": GPU_NAME}.get(device) or f"emulated ~{emulation.pair(pair).accelerator}"
    return {"experiment": "base", "device": device, "pair": pair, "process": k, "source": src, "query_tokens": 75,
            "cpu_threads": 1, "device_name": name}


def _profile_device(p: Params, law: LinearLaw, device: str, pair: str, k: int) -> list[dict]:
    """One device in one fresh process: its fit on the profile levels, regression and stress depths."""
    tags = _tags(device, pair, k)
    levels = p.profile_levels.cpu if device == "cpu" else p.profile_levels.accelerator
    f = estimator.fit(levels, [np.median([_served(law, c, r) for r in range(p.rounds)]) for c in levels])
    rows = [{"kind": "fit", **tags, "alpha": f.alpha, "beta": f.beta, "r2": f.r2, "runs": len(levels)}]
    for slo in p.slos_s:
        try:
            d = estimator.predict_depth(f, slo)
        except estimator.DeviceCannotMeetSlo:
            d = 0
        s = _sync(estimator.stress_test(lambda c: _async(np.median([_served(law, c, r) for r in range(p.rounds)])),
                                        slo, step=p.stress_step, max_level=p.stress_max))
        rows += [{"kind": "depth", **tags, "method": "regression", "slo_s": slo, "depth": d, "runs": len(levels),
                  "cannot_help": d == 0},
                 {"kind": "depth", **tags, "method": "stress", "slo_s": slo, "depth": s.depth, "runs": s.runs,
                  "cannot_help": s.depth == 0, "bracketed": s.bracketed, "searches": 1}]
    return rows


async def _async(v):
    return v


def _pairs(p: Params, acc: str) -> list[str]:
    return list(p.pairs) if acc == "emulated" else ["v100-xeon"]


def _laws(p: Params, k: int, acc: str = "emulated") -> dict[str, LinearLaw]:
    cpu = _cpu_law(k)
    if acc != "emulated":
        return {"cpu": cpu, "v100-xeon": LinearLaw(GPU_LAW[0] * cpu.alpha, GPU_LAW[1] * cpu.beta)}
    return {"cpu": cpu, **{pair: emulation.emulated_law(cpu.alpha, cpu.beta, pair) for pair in p.pairs}}


def _overhead(k: int, step: str) -> list[dict]:
    rows = []
    for i in range(4):
        bare = 16.0 * (1 + 0.01 * ((i + k) % 3))
        ratio = 0.95 - 0.01 * ((i * 7 + k) % 3)
        for mode, tp in (("bare_model", bare), ("service", bare * ratio)):
            rows.append({"kind": "overhead", "mode": mode, "repeat": i, "batch": 8, "process": k,
                         "phase": "warmup" if i == 0 else "measured", "throughput": tp, "seconds": 8 / tp,
                         "service_process": step, "source": "measured", **({"ratio": ratio} if mode == "service" else {})})
    return rows


def _dispatch(k: int, n: int = 200) -> list[dict]:
    us = 40 + 25 * ((np.arange(n) * 37 + 11 * k) % 100) / 100
    return [{"kind": "dispatch", "request": i, "dispatch_us": float(u), "dispatch_cpu_us": float(u) * 0.9, "process": k,
             "source": "measured"} for i, u in enumerate(us)]


def profile(p: Params, acc: str = "emulated") -> pd.DataFrame:
    rows = []
    for k in range(p.service_processes):
        laws = _laws(p, k, acc)
        rows += _overhead(k, "profile") + _profile_device(p, laws["cpu"], "cpu", "", k)
        for pair in _pairs(p, acc):
            rows += _profile_device(p, laws[pair], acc, pair, k)
        rows += _dispatch(k)
    df = pd.DataFrame(rows)
    return df.assign(machine_busy=False, phase=df.phase.fillna("measured"))


def _start_depths(prof: pd.DataFrame) -> dict:
    d = prof[(prof.kind == "depth") & (prof.method == "regression")]
    return {(dev, pair, float(slo)): int(g.depth.median()) for (dev, pair, slo), g in d.groupby(["device", "pair", "slo_s"])}


class _Tuner:
    """A fine-tuning search against the synthetic devices, keeping its rounds (for the bounds)."""

    def __init__(self, p: Params, laws: dict, pair: str):
        self.p, self.laws, self.pair, self.rounds = p, laws, pair, []   # depths keyed "cpu" or the accelerator

    async def __call__(self, depths: dict) -> dict:
        cpu_on = depths.get("cpu", 0) > 0
        out = {}
        for r in range(self.p.rounds):
            lat = {dev: _served(self.laws["cpu" if dev == "cpu" else self.pair], c, r,
                                CONTENTION if dev != "cpu" and cpu_on else 0.0) for dev, c in depths.items()}
            self.rounds.append((sum(depths.values()), max(lat.values())))
            for dev, v in lat.items():
                out.setdefault(dev, []).append(v)
        return {dev: float(np.median(v)) for dev, v in out.items()}

    def bounds(self, slo: float) -> tuple[int, int]:
        by: dict[int, list[bool]] = {}
        for c, t in self.rounds:
            by.setdefault(c, []).append(t <= slo)
        return (max([c for c, ok in by.items() if all(ok)], default=0),
                max([c for c, ok in by.items() if any(ok)], default=0))


def _maxconc(p: Params, laws: dict, start: dict, pair: str, slo: float, k: int, acc: str) -> tuple[list[dict], dict]:
    """One fine-tuning search of a cell in process ``k``: accelerator alone, then with offload."""
    rows, final = [], {}
    src = "emulated" if acc == "emulated" else "measured"
    for config in ("accelerator_only", "offload"):
        s0 = {acc: final.get(acc) or max(1, start[(acc, pair, slo)])}
        if config == "offload":
            s0["cpu"] = max(1, start[("cpu", "", slo)])
        tuner = _Tuner(p, laws, pair)
        s = _sync(estimator.fine_tune(tuner, s0, slo, step=p.fine_tune_step, max_runs=p.fine_tune_max_runs))
        low, high = tuner.bounds(slo)
        final = dict(s.depths)
        rows.append({"kind": "maxconc", "pair": pair, "slo_s": slo, "config": config, "process": k, "search": k,
                     "total": s.depth, "total_low": low, "total_high": high, "runs": s.runs,
                     "converged": s.converged, "bracketed": s.bracketed, "cannot_help": False,
                     "depth_acc": s.depths.get(acc, 0), "depth_cpu": s.depths.get("cpu", 0),
                     "accelerator": acc, "source": src, "admission": "depth"})
    return rows, final


def _util(p: Params, laws: dict, depths: dict, pair: str, slo: float, k: int, acc: str) -> list[dict]:
    rows = []
    for config, ds in depths.items():
        for r in range(p.rounds):
            t_cpu = _served(laws["cpu"], ds["cpu"], r) if "cpu" in ds else 0.0
            wall = max(_served(laws[pair], ds[acc], r, CONTENTION if "cpu" in ds else 0.0), t_cpu) + 0.01
            busy = laws["cpu"].latency(ds["cpu"]) if "cpu" in ds else 0.0
            rows.append({"kind": "util", "pair": pair, "slo_s": slo, "config": config, "round": r, "process": k,
                         "service_cores": (busy + 0.05 * wall) / wall, "machine_cores": 2, "cpu_instance_cores": "1",
                         "accelerator": acc, "source": "emulated" if acc == "emulated" else "measured",
                         "admission": "depth"})
    return rows


def _overload(p: Params, laws: dict, ds: dict, pair: str, slo: float, k: int, acc: str) -> list[dict]:
    """3x the total depth at once: each device answers up to its depth (the CPU's latencies its own law's),
    the rest 429."""
    n = p.overload_factor * sum(ds.values())
    rows, i = [], 0
    for dev, c in ((acc, ds[acc]), ("cpu", ds.get("cpu", 0))):
        law = laws[pair if dev == acc else "cpu"]
        for j in range(c):
            t = _served(law, j + 1) * (0.6 + 0.4 * (j + 1) / c)
            rows.append({"status": 200, "device": dev, "latency_s": t, "predicted_s": 0.7 * t,
                         "predicted_batch_s": 0.9 * t, "service_s": 0.95 * t,
                         "cosine": 1.0, "source": "emulated" if dev == "emulated" else "measured"})
            i += 1
    rows += [{"status": 429, "device": "", "latency_s": 0.01, "predicted_s": np.nan, "service_s": 0.005,
              "cosine": np.nan, "source": "measured"} for _ in range(n - i)]
    common = {"kind": "overload", "pair": pair, "slo_s": slo, "round": 0, "sent": n, "process": k,
              "admission": "depth+deadline", "accelerator": acc, "dispatch_us": 50.0}
    return [{**common, "request": j, **r} for j, r in enumerate(rows)] + [
        {"kind": "overload_health", "pair": pair, "slo_s": slo, "healthy": True, "process": k, "source": "measured"}]


def serving(p: Params, prof: pd.DataFrame, acc: str = "emulated") -> pd.DataFrame:
    start = _start_depths(prof)
    pairs = list(p.serving_pairs or p.pairs) if acc == "emulated" else ["v100-xeon"]
    rows = []
    for k in range(p.service_processes):
        laws, finals = _laws(p, k, acc), {}
        rows += _overhead(k, "serving")
        for pair in pairs:
            for slo in p.slos_s:
                got, finals[(pair, slo)] = _maxconc(p, laws, start, pair, slo, k, acc)
                rows += got
        pair, slo = pairs[0], max(p.slos_s)
        ds = {"accelerator_only": {acc: start[(acc, pair, slo)]}, "offload": finals[(pair, slo)]}
        start_ds = {acc: start[(acc, pair, slo)], "cpu": start[("cpu", "", slo)]}
        rows += _util(p, laws, ds, pair, slo, k, acc) + _overload(p, laws, start_ds, pair, slo, k, acc)
        rows += _dispatch(k + 10)
    df = pd.DataFrame(rows)
    return df.assign(machine_busy=False, phase=df.phase.fillna("measured"))


def records(params: Params, accelerator: str = "emulated") -> dict[str, pd.DataFrame]:
    """{"profile": ..., "serving": ...} as the steps write them, from the synthetic CPU and the emulation (or,
    with ``accelerator="cuda"``, a synthetic measured GPU)."""
    prof = profile(params, accelerator)
    return {"profile": prof, "serving": serving(params, prof, accelerator)}

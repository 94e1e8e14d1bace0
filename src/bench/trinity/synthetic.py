"""Synthetic records of every kind Trinity's claims read (``records(params)``), built by the study's own model
code where a model stands in for hardware: Figure 2's placements through :func:`.system.placement.evaluate`
(which reads the paper's one search GPU per LLM node through ``fidelity.value``, so the sensitivity test of
:mod:`bench.core.judging.fidelity` sees every row that moves with it) on a roofline drawn from Figure 1's
u(X) (:func:`.system.roofline.u_model`). The serving, scheduler and search records are plausible fixed
shapes, three fresh processes each. Deterministic (fixed seeds) and fast."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .params import Params
from .system import placement, roofline

PROCESSES = 3
_COMMON = {"dataset": "sift-like", "machine_busy": False}


def _uid(kind: str, i: int) -> str:
    return f"{kind}{i:02d}"


def _recall(params: Params) -> pd.DataFrame:
    rows = []
    for i in range(PROCESSES):
        for system, value, qps, rec in (("engine-continuous", 32, 2000.0, 0.97), ("engine-static", 32, 1500.0, 0.97),
                                        ("faiss-hnsw", 32, 3000.0, 0.96), ("exact-cpu", 0, 600.0, 1.0)):
            rows.append({"system": system, "value": value, "phase": "measured", "source": "measured", "process": i,
                         "process_uid": _uid("r", i), "qps": qps * (1 + 0.02 * i), f"recall_at_{params.recall.k}": rec,
                         "threads": 1, **_COMMON})
    return pd.DataFrame(rows)


def _load(params: Params) -> pd.DataFrame:
    lp, rows = params.load, []
    for arrival in lp.arrivals:
        for frac in lp.loads:
            for pol in ("static", "continuous"):
                for rep in range(PROCESSES):
                    slow = (1.0 + 0.03 * rep) if pol == "continuous" else (1.6 + 0.05 * rep)
                    p95 = 0.01 * slow / max(0.05, 1.2 - frac)
                    rows.append({"policy": pol, "arrival": arrival, "load_frac": frac, "offered_rps": 500 * frac,
                                 "repeat": rep, "trace_process": rep, "trace_uid": _uid("t", rep), "engine": "replay",
                                 "source": "emulated", "p50_s": p95 / 2, "p95_s": p95, "p99_s": 1.2 * p95,
                                 "lane_util": (0.95 - 0.01 * rep if pol == "continuous" else 0.85 + 0.005 * rep)
                                 * min(1.0, 0.5 + frac),
                                 "p50_jitter_s": 0.1 * p95 * slow, "p95_jitter_s": 0.2 * p95 * slow, "windows": 4,
                                 "recall": 0.97, "capacity": 64, "lanes": 256, "extends_mean": 40.0,
                                 "process_uid": "load", **_COMMON})
    return pd.DataFrame(rows)


def _sched(params: Params) -> pd.DataFrame:
    sp, rows = params.scheduler, []
    for pol in sp.policies:
        for frac in sp.prefill_loads:
            over = frac + sp.decode_share > 1
            for rep in range(PROCESSES):
                met = 1.0 if pol != "fifo" or not over else 0.4 + 0.02 * rep
                rows.append({"row": "run", "policy": pol, "load_frac": frac, "total_load": frac + sp.decode_share,
                             "repeat": rep, "trace_process": rep, "trace_uid": _uid("t", rep), "n_prefill": 500,
                             "pre_within_deadline": met,
                             "dec_stall_fraction": 0.2 + 0.01 * rep if pol == "fifo" else 0.18 + 0.005 * rep,
                             "tokens_per_s": 1000.0 * (0.95 if pol == "trinity" else 1.0) * (1 + 0.05 * rep),
                             "source": "emulated", "process_uid": "sched", **_COMMON})
    return pd.DataFrame(rows)


def _check(params: Params) -> pd.DataFrame:
    """The trace step's check rows: the live engine and the replay, 3% apart, in three fresh processes."""
    rows = []
    for i in range(PROCESSES):
        for at in params.load.live_check.points:
            for pol in ("static", "continuous"):
                for engine, f in (("live", 1.0), ("replay", 1.0 + 0.01 * (i + 1))):
                    rows.append({"row": "check", "check": "load", "engine": engine, "policy": pol,
                                 "arrival": at.arrival, "load_frac": at.load, "seed": i, "p50_s": 0.01 * f,
                                 "p95_s": 0.02 * f, "throughput_rps": 400 / f, "lane_util": 0.9,
                                 "p50_jitter_s": 0.001 * f, "p95_jitter_s": 0.002 * f, "process": i,
                                 "process_uid": _uid("t", i), **_COMMON})
        for pol in ("fifo", "trinity"):
            for engine, f in (("live", 1.0), ("replay", 1.0 + 0.01 * (i + 1))):
                rows.append({"row": "check", "check": "sched", "engine": engine, "policy": pol, "arrival": np.nan,
                             "load_frac": params.scheduler.judged(), "seed": i, "pre_within_deadline": 0.98,
                             "dec_stall_fraction": 0.2 * f, "tokens_per_s": 1000 / f, "pre_p95_wait_s": 0.005 * f,
                             "process": i, "process_uid": _uid("t", i), **_COMMON})
        rows += [{"row": "request", "phase": "measured", "top_m": m, "extends": e, "process": i,
                  "process_uid": _uid("t", i), **_COMMON} for m, e in ((16, 19.0), (32, 35.0), (64, 66.0))]
    return pd.DataFrame(rows)


STAGES = {"search": (0.3, 64.0, 0.8), "prefill": (0.9, 4.0, 0.9), "decode": (0.25, 16.0, 0.7)}   # u_max, X_sat, alpha


def _roofline() -> pd.DataFrame:
    rows = []
    for i in range(PROCESSES):
        for stage, (u_max, x_sat, alpha) in STAGES.items():
            xs = 2.0 ** np.arange(0, 11 if stage == "search" else 8)
            for x in xs:
                for r in range(3):
                    u = float(roofline.u_model(x, u_max, x_sat, alpha)) * (1 + 0.01 * (r - 1) + 0.005 * i)
                    rows.append({"stage": stage, "x": x, "phase": "measured", "repeat": r, "u": u, "seconds": 1.0,
                                 "flops": u, "work": x, "work_per_s": x * u, "peak_flops": 1.0, "device": "cpu",
                                 "flattened": True, "sweep_stopped": "flattened", "process": i,
                                 "process_uid": _uid("f", i), "source": "measured", **_COMMON})
    return pd.DataFrame(rows)


def _placement(params: Params) -> pd.DataFrame:
    pp = params.placement
    q = 2.0 ** np.arange(0, 11)
    t_ext = 0.0005 + 0.00002 * q
    u_max, x_sat, alpha = STAGES["search"]
    fit = {"u_max": u_max, "x_sat": x_sat, "alpha": alpha, "x_knee": x_sat * u_max ** (1 / alpha)}
    prm = placement.PlacementParams(pp.prefill_nodes, pp.decode_nodes, pp.gpus_per_node, pp.intra_node_us / 1e6,
                                    pp.network_us / 1e6, pp.prefill_share)
    ext, knee = 40.0, float(np.clip(fit["x_knee"], q.min(), q.max()))
    per_dev = knee / (ext * float(np.interp(knee, q, t_ext)))
    out = pd.DataFrame(placement.evaluate(q, t_ext, ext, [f * per_dev for f in pp.loads_x_device], fit, prm))
    return out.assign(load_x_device=out.load_rps / per_dev, phase="measured", **_COMMON)


def records(params: Params) -> dict[str, pd.DataFrame]:
    """Every record kind :func:`.claims.build` reads, synthetic."""
    return {"recall": _recall(params), "trace": _check(params), "load": _load(params), "sched": _sched(params),
            "roofline": _roofline(), "placement": _placement(params)}

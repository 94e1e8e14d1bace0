"""Small synthetic WindVE record sets with the columns the steps write (for figure and claims tests):
``acc="emulated"`` as a machine without a GPU writes them (both paper pairs emulated), ``acc="cuda"`` as a
GPU machine does (the measured GPU standing for the V100 + Xeon pair)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from bench.core.measuring import records

PAIRS = ("v100-xeon", "atlas-kunpeng")
SLOS = (0.25, 0.5)
LAWS = {"cpu": (0.06, 0.02), "v100-xeon": (0.0126, 0.017), "atlas-kunpeng": (0.0072, 0.006)}
GPU_NAME = "NVIDIA H100 80GB HBM3"
NAMES = {"cpu": "AMD EPYC", "cuda": GPU_NAME}


def _pairs(acc):
    return PAIRS if acc == "emulated" else ("v100-xeon",)


def _dev_rows(device, pair, experiment, tokens, threads, alpha, beta):
    src = "emulated" if device == "emulated" else "measured"
    tags = {"experiment": experiment, "device": device, "pair": pair, "query_tokens": tokens, "cpu_threads": threads,
            "source": src, "device_name": NAMES.get(device, f"emulated {pair}")}
    rows = []
    for purpose, levels in (("profile", [1, 4, 8]), ("stress", [8, 16])):
        for c in levels:
            for r in range(2):
                rows.append({"kind": "round", **tags, "purpose": purpose, "concurrency": c, "round": r,
                             "phase": "measured", "n": c, "n_ok": c, "latency_max_s": alpha * c + beta + 0.01 * r})
    rows.append({"kind": "fit", **tags, "alpha": alpha, "beta": beta, "r2": 0.99, "runs": 3})
    for slo in SLOS:
        d = int((slo - beta) / alpha)
        rows.append({"kind": "depth", **tags, "method": "regression", "slo_s": slo, "depth": d, "runs": 3,
                     "cannot_help": False})
        rows.append({"kind": "depth", **tags, "method": "stress", "slo_s": slo, "depth": 8 * (d // 8), "runs": d // 8 + 1,
                     "cannot_help": d < 8})
    return rows


def profile_df(acc: str = "emulated") -> pd.DataFrame:
    rows = _dev_rows("cpu", "", "base", 75, 1, *LAWS["cpu"])
    for p in _pairs(acc):
        rows += _dev_rows(acc, p, "base", 75, 1, *LAWS[p])
    for n, k in ((32, 0.4), (75, 1.0), (150, 2.5)):
        rows += [r for r in _dev_rows("cpu", "", "length", n, 1, LAWS["cpu"][0] * k, LAWS["cpu"][1]) if r["kind"] != "round"]
        rows += [r for r in _dev_rows(acc, "v100-xeon", "length", n, 1, LAWS["v100-xeon"][0] * k, 0.01)
                 if r["kind"] != "round"]
    for t, k in ((1, 1.0), (2, 0.6)):
        rows += [r for r in _dev_rows("cpu", "", "cores", 75, t, LAWS["cpu"][0] * k, 0.02) if r["kind"] != "round"]
    df = pd.DataFrame(rows)
    df.loc[(df.kind == "depth") & (df.experiment == "length") & (df.query_tokens == 150) & (df.device == "cpu")
           & (df.slo_s == 0.25), ["depth", "cannot_help"]] = [0, True]
    df["machine_busy"] = False
    return df


BURSTS = {"burst_factor": 4.0, "burst_s": 0.5, "period_s": 2.0}   # 4x the mean rate, 0.5 s of every 2 s


def bursty_requests(cfg: str, acc: str, rng, rate: float = 68.0, duration_s: float = 4.0) -> list[dict]:
    """``openloop_request`` rows of one bursty run as the serving step writes them: intended send times
    bunched in the bursts; the accelerator answers the first few of each burst, the CPU (with offload)
    some more, the rest refused (429), the last request lost."""
    n = int(rate * duration_s)
    t = np.sort(np.concatenate([k * BURSTS["period_s"] + rng.uniform(0, BURSTS["burst_s"], n // 2)
                                for k in range(2)]))
    rows = []
    for i, at in enumerate(t):
        k = int(np.sum(t[:i] >= np.floor(at / BURSTS["period_s"]) * BURSTS["period_s"]))   # place in its burst
        dev = acc if k < 40 else ("cpu" if cfg == "offload" and k < 55 else "")
        status = 200 if dev else (-1 if i == len(t) - 1 else 429)
        lat = 0.05 + 0.008 * k if dev else (1.0 if status == -1 else 0.01)
        src = "measured" if dev == "cpu" or acc == "cuda" else "emulated"
        rows.append({"kind": "openloop_request", "pair": "v100-xeon", "slo_s": 0.5, "config": cfg,
                     "arrivals": "bursty", "load_factor": 1.0, "offered_rps": rate, "request": i, "intended_s": at,
                     "sent_s": at + 0.001, "done_s": at + lat, "latency_s": lat, "status": status, "device": dev,
                     "answered": status == 200, "error": "timeout" if status == -1 else "",
                     "admission": "depth+deadline", "accelerator": acc, "source": src})
    return rows


def serving_df(acc: str = "emulated") -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    src = "emulated" if acc == "emulated" else "measured"
    tag = {"accelerator": acc, "source": src}
    for p in _pairs(acc):
        for slo in SLOS:
            a = int((slo - LAWS[p][1]) / LAWS[p][0])
            cpu = int((slo - LAWS["cpu"][1]) / LAWS["cpu"][0])
            rows.append({"kind": "maxconc", "pair": p, "slo_s": slo, "config": "accelerator_only", "total": a,
                         "total_low": a - 1, "total_high": a, "depth_acc": a, "runs": 3, "converged": True,
                         "bracketed": True, "admission": "depth", **tag})
            rows.append({"kind": "maxconc", "pair": p, "slo_s": slo, "config": "offload", "total": a + cpu,
                         "total_low": a + cpu - 1, "total_high": a + cpu + 1, "depth_acc": a,
                         "depth_cpu": cpu, "runs": 3, "converged": True, "bracketed": True, "admission": "depth", **tag})
    for cfg, share in (("accelerator_only", 0.07), ("offload", 0.3)):
        for r in range(3):
            rows.append({"kind": "util", "pair": "v100-xeon", "slo_s": 0.5, "config": cfg, "round": r,
                         "service_cores": 2 * share + 0.01 * r, "machine_cores": 2, "admission": "depth", **tag})
    for i in range(4):
        for mode, tp in (("bare_model", 16.0), ("service", 15.2)):
            rows.append({"kind": "overhead", "mode": mode, "repeat": i, "batch": 8, "phase": "warmup" if i == 0 else "measured",
                         "throughput": tp + rng.normal(0, 0.2), "seconds": 8 / tp, "source": "measured"})
    for i in range(120):
        st = 200 if i < 40 else 429
        dev = (acc if i < 33 else "cpu") if st == 200 else ""
        rows.append({"kind": "overload", "pair": "v100-xeon", "slo_s": 0.5, "round": 0, "request": i, "sent": 120,
                     "status": st, "device": dev, "latency_s": 0.3 + 0.004 * i if st == 200 else 0.01,
                     "cosine": 1.0 if st == 200 else np.nan, "dispatch_us": 1.5 + rng.random(),
                     "predicted_s": 0.28 + 0.004 * i if st == 200 else np.nan,
                     "refused_by": "" if st == 200 else ("deadline" if i < 60 else "depth"),
                     "admission": "depth+deadline", "accelerator": acc,
                     "source": "measured" if dev == "cpu" else src})
    rows.append({"kind": "overload_health", "pair": "v100-xeon", "slo_s": 0.5, "healthy": True, "source": "measured"})
    for cfg in ("accelerator_only", "offload"):
        for f in (0.5, 1.0, 2.0):
            rows.append({"kind": "openloop", "pair": "v100-xeon", "slo_s": 0.5, "config": cfg, "arrivals": "poisson",
                         "load_factor": f, "offered_rps": 68 * f, "goodput_rps": 68 * min(f, 1.2 if cfg == "offload" else 1),
                         "p50_s": 0.05 * f, "p99_s": 0.1 * f, "share_accelerator": 0.8, "share_cpu": 0.1 if cfg == "offload" else 0,
                         "share_refused": 0.1 if cfg == "offload" else 0.2, "share_lost": 0.0,
                         "admission": "depth+deadline", **tag})
        rows.append({"kind": "openloop", "pair": "v100-xeon", "slo_s": 0.5, "config": cfg, "arrivals": "bursty",
                     "load_factor": 1.0, "offered_rps": 68, "goodput_rps": 60, "p50_s": 0.2, "p99_s": 0.6,
                     "share_accelerator": 0.7, "share_cpu": 0.1, "share_refused": 0.2, "share_lost": 0.0,
                     "admission": "depth+deadline", **BURSTS, **tag})
        rows += bursty_requests(cfg, acc, rng)
    df = pd.DataFrame(rows)
    df["machine_busy"] = False
    df["phase"] = df.get("phase", pd.Series(["measured"] * len(df))).fillna("measured")
    return df


def write(tmp_path, acc: str = "emulated"):
    out = {}
    for kind, df in (("profile", profile_df(acc)), ("serving", serving_df(acc))):
        out[kind] = [records.write(tmp_path / f"{kind}.parquet", df, {"method": "synthetic"})]
    return out

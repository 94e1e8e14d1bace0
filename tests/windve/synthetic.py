"""Small synthetic WindVE record sets with the columns the steps write (for figure and claims tests): the
record kinds the claims read come from the study's own synthetic records (:mod:`bench.windve.synthetic`,
through the emulation: 3 fresh service processes), and the figure-only kinds (profile rounds, Figures 5/6,
the open loop and its per-request rows) are added here. ``acc="emulated"`` as a machine without a GPU writes
them (both paper pairs emulated), ``acc="cuda"`` as a GPU machine does (the measured GPU standing for the
V100 + Xeon pair)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from bench.core.measuring import records
from bench.windve import STUDY
from bench.windve import synthetic as study_synthetic

PAIRS = ("v100-xeon", "atlas-kunpeng")
SLOS = (0.25, 0.5)
GPU_NAME = study_synthetic.GPU_NAME


def params(**kw):
    """The study's parameters for these records: our SLOs, three fresh service processes."""
    return STUDY.parameters({"slos_s": list(SLOS), **kw})


def _pairs(acc):
    return PAIRS if acc == "emulated" else ("v100-xeon",)


def _figure_rows(acc: str) -> list[dict]:
    """Profile rows only the figures read: each base fit's closed rounds (Figure 4) and the regression's
    depths per query length (Figure 5) and per CPU core count (Figure 6), from the first process."""
    src = "emulated" if acc == "emulated" else "measured"
    rows = []
    for dev, pair, (a, b) in [("cpu", "", (0.06, 0.02))] + [(acc, p, (0.0126 if p == "v100-xeon" else 0.0072, 0.01))
                                                             for p in _pairs(acc)]:
        tags = {"experiment": "base", "device": dev, "pair": pair, "process": 0, "query_tokens": 75, "cpu_threads": 1,
                "source": "measured" if dev == "cpu" else src}
        for purpose, levels in (("profile", [1, 4, 8]), ("stress", [8, 16])):
            rows += [{"kind": "round", **tags, "purpose": purpose, "concurrency": c, "round": r, "phase": "measured",
                      "n": c, "n_ok": c, "latency_max_s": a * c + b + 0.01 * r} for c in levels for r in range(2)]
    for experiment, key, values in (("length", "query_tokens", (32, 75, 150)), ("cores", "cpu_threads", (1, 2))):
        for v in values:
            k = v / 75 if experiment == "length" else 1 / v
            devs = [("cpu", "", 0.06 * k)] + ([(acc, "v100-xeon", 0.0126 * k)] if experiment == "length" else [])
            for dev, pair, a in devs:
                for slo in SLOS:
                    d = int((slo - 0.02) / a)
                    rows.append({"kind": "depth", "experiment": experiment, "device": dev, "pair": pair,
                                 "method": "regression", "slo_s": slo, "depth": max(d, 0), "cannot_help": d < 1,
                                 "runs": 3, "process": 0, "query_tokens": v if experiment == "length" else 75,
                                 "cpu_threads": v if experiment == "cores" else 1,
                                 "source": "measured" if dev == "cpu" else src})
    return rows


def profile_df(acc: str = "emulated") -> pd.DataFrame:
    prof = study_synthetic.profile(params(pairs=list(_pairs(acc))), acc)
    return pd.concat([prof, pd.DataFrame(_figure_rows(acc)).assign(machine_busy=False)], ignore_index=True)


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
                     "admission": "depth+deadline", "accelerator": acc, "source": src, "process": 0})
    return rows


def _openloop(acc: str) -> list[dict]:
    rng = np.random.default_rng(0)
    tag = {"accelerator": acc, "source": "emulated" if acc == "emulated" else "measured", "process": 0}
    rows = []
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
    return rows


def serving_df(acc: str = "emulated") -> pd.DataFrame:
    p = params(pairs=list(_pairs(acc)))
    serv = study_synthetic.serving(p, study_synthetic.profile(p, acc), acc)
    extra = pd.DataFrame(_openloop(acc)).assign(machine_busy=False, phase="measured")
    return pd.concat([serv, extra], ignore_index=True)


def write(tmp_path, acc: str = "emulated"):
    out = {}
    for kind, df in (("profile", profile_df(acc)), ("serving", serving_df(acc))):
        out[kind] = [records.write(tmp_path / f"{kind}.parquet", df, {"method": "synthetic"})]
    return out

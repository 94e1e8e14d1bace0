"""Small synthetic record sets of every kind the loaders figures and claims read (no measurement)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bench.core.measuring import records

PROV = {"profile": "test", "cpu_model": "test CPU", "collection": {"n_docs": 100, "collection_bytes": 10**6},
        "options": {"loader": "ir_datasets", "parallel": "ddp", "replicas": 2}}


ROUNDS = 3


def _run(rng, rid, loader, par, n, option="grid", value="-", status="ok", mem=4e8, tput=10.0, why="",
         rounds=ROUNDS, device="cpu"):
    """A run of one configuration in ``rounds`` rounds of fresh processes (``round`` 0, 1, ...)."""
    rows = []
    for rnd in range(rounds if status == "ok" else 1):
        rows += _one_round(rng, rid, loader, par, n, option, value, status, mem, tput, why, rnd, device)
    return rows


def _one_round(rng, rid, loader, par, n, option, value, status, mem, tput, why, rnd, device):
    base = {"run_id": rid, "loader": loader, "parallel": par, "replicas": n, "option": option,
            "option_value": value, "batch_per_replica": 4, "max_length": 32, "machine_busy": False,
            "source": "measured" if status != "not_run" else "not_run", "round": rnd, "process_uid": "step-1",
            "device": device, "gpus": n if device == "cuda" else 0}
    run = {**base, "kind": "run", "phase": "measured", "status": status, "why": why,
           "pss_peak_bytes": mem * n, "pss_mean_bytes": mem * n, "paper_mem_bytes": mem * 1.3 * n,
           "loader_pss_bytes": mem / 4 * n, "pss_smaps_max_reldiff": 0.01, "n_smaps_checked": 1, "held_vs_measured": 0.01, "load_s": 0.1}
    if status != "ok":
        return [run]
    rows = [run]
    ranks = 1 if par == "dp" else n
    for r in range(ranks):
        for s in range(6):
            step = 4 * (n if par == "dp" else 1) / tput * rng.uniform(0.9, 1.1)
            rows.append({**base, "kind": "step", "rank": r, "step": s, "phase": "warmup" if s == 0 else "measured",
                         "samples": 4 * (n if par == "dp" else 1), "wait_s": 0.2 * step, "copy_s": 0.0,
                         "compute_s": 0.8 * step, "step_s": step})
    for k in range(8):
        rows.append({**base, "kind": "memory", "phase": "measured" if k > 2 else "load", "t_rel_s": 0.1 * k,
                     "pss_bytes": mem * n * rng.uniform(0.98, 1.02), "pss_smaps_bytes": mem * n,
                     "pss_smaps_lo": mem * n * 0.97, "pss_smaps_hi": mem * n * 1.03, "n_procs": ranks,
                     "uss_bytes": mem * 0.8 * n, "rss_bytes": mem * 1.3 * n, "main_rss_bytes": mem * 1.3})
    return rows


def train_records(path: Path, loaders=("in-memory", "indexed", "ir_datasets", "arrow"), oom=True,
                  gpus: int | None = None, rounds: int = ROUNDS, device: str = "cpu", tput=None) -> Path:
    """The grid; ``gpus``: as on a CUDA machine with that many GPUs (larger grid points not run); ``tput``:
    ``{(loader, parallel, replicas): samples/s}`` where a test sets them (else 10 per replica)."""
    rng = np.random.default_rng(0)
    rows = []
    for l in loaders:
        mem = 5e8 if l == "in-memory" else 3e8
        for par in ("dp", "ddp"):
            for n in (1, 2):
                st = "oom" if oom and l == "in-memory" and par == "ddp" and n == 2 else "ok"
                why = f"needs {n} GPUs, {gpus} visible" if gpus is not None and n > gpus else ""
                t = (tput or {}).get((l, par, n), 10 * n)
                rows += _run(rng, f"{l}/{par}/{n}", l, par, n, status="not_run" if why else st, mem=mem,
                             tput=t, why=why, rounds=rounds, device=device)
    return records.write(path, pd.DataFrame(rows), PROV)


def options_records(path: Path, rounds: int = ROUNDS) -> Path:
    rng = np.random.default_rng(1)
    kw = {"rounds": rounds}
    rows = _run(rng, "baseline=-", "ir_datasets", "ddp", 2, "baseline", "-", **kw)
    rows += _run(rng, "pin_memory=yes", "ir_datasets", "ddp", 2, "pin_memory", "yes", status="not_run",
                 why="pin_memory needs CUDA")
    for w in (1, 2):
        rows += _run(rng, f"num_workers={w}", "ir_datasets", "ddp", 2, "num_workers", str(w), tput=11, **kw)
        rows += _run(rng, f"pin_memory+num_workers={w}", "ir_datasets", "ddp", 2, "pin_memory+num_workers",
                     str(w), tput=11, why="pin_memory not applied: no CUDA", **kw)
    rows += _run(rng, "ramdisk=yes", "ir_datasets", "ddp", 2, "ramdisk", "yes", **kw)
    rows += _run(rng, "page_cache=cold", "ir_datasets", "ddp", 2, "page_cache", "cold", tput=9, **kw)
    return records.write(path, pd.DataFrame(rows), PROV)


def loader_only_records(path: Path) -> Path:
    rows = [{"loader": l, "mode": m, "repeat": r, "phase": "warmup" if r == 0 else "measured", "samples": 64,
             "seconds": 0.1, "samples_per_s": (1e4 if m == "lookup" else 500) * (1 + 0.05 * r), "load_s": 0.1}
            for l in ("in-memory", "indexed", "ir_datasets") for m in ("lookup", "lookup+tokenize") for r in range(4)]
    return records.write(path, pd.DataFrame(rows), PROV)


def workers_records(path: Path) -> Path:
    rows = []
    for l in ("in-memory", "ir_datasets"):
        for k in range(10):
            for role, w in (("main", -1), ("worker", 0), ("worker", 1)):
                grow = 1e6 * k if (l == "in-memory" and role == "worker") else 0
                rows.append({"loader": l, "num_workers": 2, "t_rel_s": 0.2 * k, "batches": 10 * k, "role": role,
                             "worker": w, "pss_bytes": 5e7 + grow, "uss_bytes": 3e7 + grow, "phase": "measured"})
    return records.write(path, pd.DataFrame(rows), PROV)


def all_records(tmp: Path) -> dict[str, list[Path]]:
    return {"train": [train_records(tmp / "train.parquet")], "options": [options_records(tmp / "options.parquet")],
            "loader_only": [loader_only_records(tmp / "loader_only.parquet")],
            "workers": [workers_records(tmp / "workers.parquet")]}

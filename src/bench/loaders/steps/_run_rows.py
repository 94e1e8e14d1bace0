"""The records of one launched training run (Moving Stuff Around, Tables 1-3), shared by the ``train`` and
``options`` steps: the run is started by :mod:`bench.loaders.system.launch`, and its results become tidy rows:

- ``kind=step``: one row per rank and step (wait / copy / compute seconds, warm-up apart);
- ``kind=run``: one row per run (status ok/oom, corpus loading time, summed PSS peak and mean over the
  measured steps, USS, RSS, the paper's method = main RSS x replicas, the loader's own footprint,
  RAMDISK bytes, the PSS check against /proc/<pid>/smaps on the memory every rank holds after its last
  measured step, and how far that lies from the measured steps' memory);
- ``kind=memory``: the memory readings of the process tree, each tagged with the phase it fell in.

Every row says where it ran (``device``, and ``gpus``: the GPUs the run used, 0 on CPU).
"""
from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import pandas as pd

from ..system import filecache, footprint, launch, train
from ..system.stores import make_store
from ..system.train import RunSpec


def _window(res: list[dict]) -> tuple[float, float, float]:
    """(loaded, measured from, measured until) of a run: the last rank to load and to begin its measured
    steps, the first to end them; memory inside that window is memory of every rank's measured steps."""
    return (max(r["t_loaded"] for r in res), max(r["t_measured"] for r in res),
            min(r.get("t_measured_end", r["t_end"]) for r in res))


def _phase_of(t: float, window: tuple[float, float, float]) -> str:
    loaded, start, end = window
    if t < loaded:
        return "load"
    return "warmup" if t < start else "measured" if t <= end else "end"


def _memory_rows(out: launch.Outcome, base: dict) -> list[dict]:
    """One row per memory reading, tagged with its phase: ``load``, ``warmup``, ``measured`` (while every
    rank runs its measured steps), ``held`` (the reading with the smaps check, taken while every rank holds
    the memory of its measured steps after the last one), ``end`` (after the first rank finished them)."""
    window = _window(out.results) if out.results else None
    t0 = out.samples[0]["t"] if out.samples else 0.0
    rows = []
    for s in out.samples:
        row = {k: v for k, v in s.items() if k not in ("t", "procs", "check")}
        phase = "held" if s.get("check") else _phase_of(s["t"], window) if window else "load"
        rows.append({**base, "kind": "memory", "t_rel_s": s["t"] - t0, "phase": phase, **row})
    return rows


def _smaps_check(mem: pd.DataFrame, in_phase: pd.DataFrame) -> dict:
    """The smaps check, read while every rank held the memory of its measured steps: how many readings
    (0 or 1), psutil's summed PSS outside their bracket, and how far that held memory lies from the median
    summed PSS during the measured steps (the state the memory rows read)."""
    held = mem[mem["check"].fillna(False).astype(bool)] if "check" in mem else mem.iloc[:0]
    held = held.dropna(subset=["pss_smaps_bytes"]) if "pss_smaps_bytes" in held else held.iloc[:0]
    rel = np.array([footprint.smaps_disagreement(r) for _, r in held.iterrows()])
    med = float(in_phase.pss_bytes.median()) if len(in_phase) else float("nan")
    return {"n_smaps_checked": int(rel.size),
            "pss_smaps_max_reldiff": float(rel.max()) if rel.size else float("nan"),
            "held_vs_measured": float(abs(held.pss_bytes.iloc[0] - med) / med) if rel.size and med > 0 else float("nan")}


def _run_row(out: launch.Outcome, spec: RunSpec, base: dict, extra_bytes: int) -> dict:
    row = {**base, "kind": "run", "phase": "measured", "status": out.status,
           "why": "; ".join(w for w in (base.get("why"), out.error) if w),
           "wall_s": out.wall_s, "ramdisk_bytes": extra_bytes, **out.cap}
    if out.status != "ok":
        return row
    _, t_meas, t_end = _window(out.results)
    mem = pd.DataFrame(out.samples)
    plain = mem[~mem["check"].fillna(False).astype(bool)] if "check" in mem else mem
    in_phase = plain[(plain.t >= t_meas) & (plain.t <= t_end)]
    window = in_phase if len(in_phase) else mem
    main_rss_peak = float(mem.main_rss_bytes.max())
    row.update({
        "load_s": float(np.mean([r["load_s"] for r in out.results])),
        "load_s_max": float(np.max([r["load_s"] for r in out.results])),
        "pss_peak_bytes": float(mem.pss_bytes.max()) + extra_bytes,
        "pss_mean_bytes": float(window.pss_bytes.mean()) + extra_bytes,
        "n_memory_measured": int(len(in_phase)),
        "uss_peak_bytes": float(mem.uss_bytes.max()), "rss_peak_bytes": float(mem.rss_bytes.max()),
        # the paper: the main process's RSS (psutil), times the GPU count for DDP only
        "paper_mem_bytes": main_rss_peak * (spec.replicas if spec.parallel == "ddp" else 1) + extra_bytes,
        "loader_pss_bytes": float(sum(r["loader_pss_bytes"] for r in out.results)),
        **_smaps_check(mem, in_phase),
        "n_memory_samples": int(len(mem)), "torch_threads": out.results[0]["torch_threads"],
        "pin_memory_applied": out.results[0]["pin_memory_applied"],
        # start-up of the ranks (fork from the server to the body's first line): in no rate or step time
        "startup_s": float(max(r.get("startup_s", float("nan")) for r in out.results)),
        "worker_start_method_used": out.results[0].get("worker_start_method_used") or "-",
    })
    return row


def _step_rows(out: launch.Outcome, spec: RunSpec, base: dict) -> list[dict]:
    per_rank = spec.batch_per_replica * (spec.replicas if spec.parallel == "dp" else 1)
    rows = []
    for res in out.results:
        for r in res["rows"]:
            rows.append({**base, "kind": "step", "rank": res["rank"], "samples": per_rank,
                         **{k: v for k, v in r.items() if k != "t_end"}})
    return rows


def not_run_row(base: dict, loader: str, parallel: str, replicas: int, why: str) -> dict:
    """The run row of a configuration this machine cannot run (pin_memory without CUDA, more replicas
    than GPUs), with the reason."""
    return {**base, "kind": "run", "loader": loader, "parallel": parallel, "replicas": replicas,
            "status": "not_run", "source": "not_run", "phase": "measured", "why": why}


def measure_run(spec: RunSpec, base: dict, *, ramdisk: bool = False, cold_cache: bool = False,
                timeout_s: float = 300.0, cap_bytes: int | None = None,
                sample_interval_s: float = 0.05, check_memory: bool = True) -> list[dict]:
    """Run ``spec`` (optionally from a RAMDISK copy, or after evicting its files from the page cache)
    and return its step, run and memory rows; ``check_memory``: the smaps check of the measured phase's
    memory (every rank holds it after its last measured step; no timed step waits for it)."""
    base = {**base, "loader": spec.loader, "parallel": spec.parallel, "replicas": spec.replicas,
            "num_workers": spec.num_workers, "pin_memory": spec.pin_memory,
            "worker_start_method": spec.worker_start_method, "ramdisk": ramdisk, "cold_cache": cold_cache,
            "batch_per_replica": spec.batch_per_replica, "max_length": spec.max_length, "source": "measured",
            "device": spec.device, "gpus": spec.replicas if spec.device == "cuda" else 0,
            "implementation": train.implementation(spec.parallel, spec.device)}
    files = make_store(spec.loader, spec.bundle_dir).files()
    ctx = filecache.RamdiskCopy(spec.bundle_dir, files) if ramdisk else contextlib.nullcontext()
    with ctx as rd:
        run_spec = dataclasses.replace(spec, store_dir=str(rd.dir)) if ramdisk else spec
        if cold_cache:
            filecache.evict(files)
        out = launch.launch(run_spec, timeout_s=timeout_s, cap_bytes=cap_bytes,
                            sample_interval_s=sample_interval_s, check_memory=check_memory)
        extra = rd.bytes if ramdisk else 0
    return [_run_row(out, spec, base, extra), *_step_rows(out, spec, base), *_memory_rows(out, base)]

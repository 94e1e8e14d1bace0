"""Measurement steps of the loaders study (Moving Stuff Around): each ``step(ctx) -> Result``.

- ``train``: Tables 1 and 2 and Figure 1: every loader x {DP, DDP} x replicas, samples/s from per-step
  wall clocks (data wait / copy / compute), memory of the whole process tree;
- ``options``: Table 3: pin_memory, num_workers, RAMDISK and their combinations on the paper's chosen
  configuration, plus worker start method and a cold page cache (beyond the paper);
- ``loader_only``: samples/s each loader delivers with no model (lookups, and lookups + tokenization);
- ``workers``: memory of every DataLoader worker over the batches (copy-on-read of the dict loader).
"""
from __future__ import annotations

import dataclasses
import functools
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..core import devices
from ..core.step import Context, Result, reads
from . import collection as C
from .errors import ConfigError
from .stores import check_loader, make_store

# torch, transformers and the run machinery are imported inside the steps: the CLI imports this module
# for every verb, and the figure and claims jobs need none of them.

CPU_NOTE = ("DP (threads, CPU): torch.nn.DataParallel is a no-op on CPU, so one process runs one "
            "replica per thread; DDP: one process per replica over gloo")
CUDA_NOTE = ("DP: torch.nn.DataParallel over the first `replicas` visible GPUs in one process; DDP: one "
             "process per GPU over nccl; a grid point asking for more replicas than visible GPUs is not run")
START_NOTE = ("Run processes start from a forkserver that has imported torch, transformers and the loaders but "
              "run none of them (never forked from a process that ran torch); each rank's start-up (fork from "
              "the server, unpickling its arguments) is timed apart as startup_s and is in no samples/s or step "
              "time. A rank shares the preloaded modules' pages with the server, which is outside the measured "
              "tree, so the tree's PSS counts its share of them only (as a rank forked from the launcher did). "
              "DataLoader workers use PyTorch's default start method unless a row names one "
              "(worker_start_method_used).")


def _parallel_note(cuda: bool) -> str:
    return CUDA_NOTE if cuda else CPU_NOTE


def _too_many_replicas(replicas: int, cuda: bool) -> str | None:
    """Why a grid point cannot run here (more replicas than visible GPUs), or None."""
    if not cuda:
        return None
    n = devices.gpu_count()
    return f"needs {replicas} GPUs, {n} visible" if replicas > n else None


def _paths(ctx: Context) -> tuple[str, str]:
    bundle = Path(ctx.input("bundle"))
    bundle_dir = bundle.parent if bundle.is_file() else bundle
    model_dir = Path(ctx.input("model")).parent
    C.read_bundle(bundle_dir)
    return str(bundle_dir), str(model_dir)


def _spec(ctx: Context, loader: str, parallel: str, replicas: int, **kw):
    from .train import RunSpec

    p = ctx.params
    bundle_dir, model_dir = _paths(ctx)
    return RunSpec(loader=loader, parallel=parallel, replicas=replicas, bundle_dir=bundle_dir,
                   model_dir=model_dir, batch_per_replica=p["batch_per_replica"], steps=p["steps"],
                   warmup_steps=p["warmup_steps"], max_length=p["max_length"], doc_chars=p["doc_chars"],
                   threads_per_replica=p["threads_per_replica"], seed=ctx.seed, lr=p["lr"],
                   freeze_embeddings=p["freeze_embeddings"],
                   device="cuda" if devices.cuda_available() else "cpu", **kw).check()


def _cap(p: dict) -> int | None:
    return int(p["memory_cap_mb"]) << 20 if p.get("memory_cap_mb") else None


def _run_kw(p: dict) -> dict:
    return {"timeout_s": p["run_timeout_s"], "cap_bytes": _cap(p), "sample_interval_s": p["sample_interval_s"]}


def _provenance(ctx: Context, extra: dict | None = None) -> dict:
    import multiprocessing

    from . import launch, memory

    bundle_dir, _ = _paths(ctx)
    b = C.read_bundle(bundle_dir)
    cuda = devices.cuda_available()
    return {"collection": {k: b[k] for k in ("n_docs", "collection_bytes", "checksum", "source")},
            "memory_cap": memory.cap_available()[1] if ctx.params.get("memory_cap_mb") else "none",
            "parallel_note": _parallel_note(cuda), "device": "cuda" if cuda else "cpu",
            "gpus_visible": devices.gpu_count(), "rank_start_method": launch.START_METHOD,
            "rank_preload": launch.PRELOAD, "start_note": START_NOTE,
            "dataloader_default_start_method": multiprocessing.get_start_method(), **(extra or {})}


METHOD_RUN = (
    "Each run starts its processes from a forkserver (DP: one process, one replica per thread on CPU or "
    "DataParallel on CUDA; DDP: one process per replica, gloo on CPU, nccl on CUDA); each process loads the corpus itself (timed apart as load_s), its "
    "model from a checkpoint, then trains warmup_steps (phase=warmup) + steps (phase=measured) batches. Per "
    "step, wall clocks (perf_counter) time the wait for the DataLoader's batch (reading + tokenization), the "
    "host-to-device copy (CUDA synchronised; nothing to copy on CPU) and forward+backward+optimizer (DDP "
    "all-reduce included). Samples/s per step = samples of all replicas / the slowest rank's step time. "
    "Memory: a thread outside the measured processes reads PSS/USS/RSS of the whole process tree (ranks and "
    "DataLoader workers) every sample_interval_s (psutil; one reading walks a process's page tables, so the interval is coarse), and every 4th reading also sums "
    "/proc/<pid>/smaps_rollup Pss over the same processes; the paper's method (main process RSS, x replicas for DDP) "
    "is kept beside it. RAMDISK runs read a copy in /dev/shm and add its size to memory, as the paper does. ")


@reads("bundle", "model")
def train(ctx: Context) -> Result:
    """Tables 1-2 / Figure 1: the loader x parallelism x replicas grid."""
    from . import runs
    from .model import preload

    p = ctx.params
    server_s = preload(_paths(ctx)[1])
    cuda = devices.cuda_available()
    rows = []
    for loader in p["loaders"]:
        for parallel in ("dp", "ddp"):
            for replicas in p["grid"][parallel]:
                base = {"run_id": f"{loader}/{parallel}/{replicas}", "option": "grid", "option_value": "-"}
                why = _too_many_replicas(replicas, cuda)
                if why:
                    rows.append(runs.not_run_row(base, loader, parallel, replicas, why))
                    continue
                rows += runs.measure_run(_spec(ctx, loader, parallel, replicas), base, **_run_kw(p))
    return Result(records=pd.DataFrame(rows), method=METHOD_RUN + _parallel_note(cuda) + ". " + START_NOTE,
                  provenance=_provenance(ctx, {"rank_server_start_s": server_s}), dataset_id=ctx.dataset)


def _option_runs(o: dict) -> list[tuple[str, str, dict, dict]]:
    """(option, value, RunSpec changes, run flags) of Table 3 and the extras; pin_memory runs only on CUDA."""
    out = [("baseline", "-", {}, {})]
    out += [("pin_memory", "yes", {"pin_memory": True}, {})]
    out += [("num_workers", str(w), {"num_workers": w}, {}) for w in o["num_workers"]]
    out += [("pin_memory+num_workers", str(w), {"num_workers": w, "pin_memory": True}, {}) for w in o["num_workers"]]
    if o["ramdisk"]:
        out += [("ramdisk", "yes", {}, {"ramdisk": True})]
        w = max(o["num_workers"])
        out += [(f"pin_memory+{w} workers+ramdisk", "-", {"num_workers": w, "pin_memory": True}, {"ramdisk": True})]
    out += [("worker_start_method", m, {"num_workers": 1, "worker_start_method": m}, {}) for m in o["start_methods"]]
    if o["cold_cache"]:
        out += [("page_cache", "cold", {}, {"cold_cache": True})]
    return out


@reads("bundle", "model")
def options(ctx: Context) -> Result:
    """Table 3 on the paper's chosen configuration (ir_datasets, DDP), plus worker start method and cold cache."""
    from . import runs
    from .model import preload

    p, o = ctx.params, ctx.params["options"]
    server_s = preload(_paths(ctx)[1])
    cuda = devices.cuda_available()
    rows = []
    for option, value, changes, flags in _option_runs(o):
        base = {"run_id": f"{option}={value}", "option": option, "option_value": value}
        # pin_memory is a no-op without CUDA, recorded so: the same run without it is another row
        why = "pin_memory needs CUDA (a no-op on CPU)" if changes.get("pin_memory") and not cuda else None
        why = why or _too_many_replicas(o["replicas"], cuda)
        if why:
            rows.append(runs.not_run_row(base, o["loader"], o["parallel"], o["replicas"], why))
            continue
        spec = _spec(ctx, o["loader"], o["parallel"], o["replicas"], **changes)
        rows += runs.measure_run(spec, base, **flags, **_run_kw(p))
    return Result(records=pd.DataFrame(rows), provenance=_provenance(ctx, {"options": o, "rank_server_start_s": server_s}), dataset_id=ctx.dataset,
                  method=METHOD_RUN + "Options as Table 3 (ir_datasets, DDP); beyond the paper: DataLoader "
                  "worker start method and a cold page cache (posix_fadvise DONTNEED on the loader's files "
                  "before the run). pin_memory is a no-op without CUDA: its rows are recorded as not_run on CPU. "
                  + START_NOTE)


def _dataset(ctx: Context, loader: str, n: int):
    from .samples import TripletDataset

    bundle_dir, model_dir = _paths(ctx)
    queries, pairs = C.load_pairs(bundle_dir)
    with np.load(Path(bundle_dir) / C.OFFSETS) as z:
        ids = z["ids"]
    t0 = time.perf_counter()
    store = make_store(loader, bundle_dir).open()
    load_s = time.perf_counter() - t0
    return TripletDataset(store, queries, pairs, ids, n, ctx.seed), load_s, model_dir


@reads("bundle", "model")
def loader_only(ctx: Context) -> Result:
    """Samples/s each loader delivers with no model: the three texts of each sample (lookups), and the
    same plus the collate function's tokenization; one warm-up repeat, then ``repeats`` timed ones."""
    from .model import load_tokenizer
    from .samples import Collate

    o, p = ctx.params["loader_only"], ctx.params
    rows = []
    for loader in map(check_loader, o["loaders"]):
        n = o["batch_size"] * o["batches"]
        ds, load_s, model_dir = _dataset(ctx, loader, n * (o["repeats"] + 1))
        collate = Collate(load_tokenizer(model_dir), p["max_length"], p["doc_chars"])
        for mode in ("lookup", "lookup+tokenize"):
            for r in range(o["repeats"] + 1):
                idx = np.arange(r * n, (r + 1) * n)
                t0 = time.perf_counter()
                for b in range(o["batches"]):
                    batch = [ds[int(i)] for i in idx[b * o["batch_size"]:(b + 1) * o["batch_size"]]]
                    if mode != "lookup":
                        collate(batch)
                dt = time.perf_counter() - t0
                rows.append({"loader": loader, "mode": mode, "repeat": r, "phase": "warmup" if r == 0 else "measured",
                             "samples": n, "seconds": dt, "samples_per_s": n / dt, "load_s": load_s})
    return Result(records=pd.DataFrame(rows), dataset_id=ctx.dataset, provenance=_provenance(ctx),
                  method="In the step's own process, one thread, no DataLoader workers and no model: per loader, "
                  "batches of batch_size samples (query, positive, random negative: two document reads each) read "
                  "in order of sample index; 'lookup' times the reads only, 'lookup+tokenize' adds the collate "
                  "function (two pairs per sample, truncation at max_length). Wall clock over all batches of a "
                  "repeat; repeat 0 is a warm-up.")


def iterate_loader(spec, batches: int, _arg=None) -> dict:
    """Run process of the workers step: iterate the DataLoader (no model), reporting batch end times.
    Module level, so that it pickles to a process started by the forkserver."""
    from .model import load_tokenizer
    from .train import _dataset as build_ds, _loader

    ds, load = build_ds(spec, 1)
    t_loaded = time.monotonic()
    it, ends = iter(_loader(spec, ds, 0, 1, load_tokenizer(spec.model_dir))), []
    for _ in range(batches):
        next(it)
        ends.append(time.monotonic())
    del it
    return {"rank": 0, "rows": [], "t_loaded": t_loaded, "t_measured": t_loaded, "t_end": ends[-1],
            "batch_ends": ends, "torch_threads": 1, "pin_memory_applied": False, **load}


@reads("bundle", "model")
def workers(ctx: Context) -> Result:
    """Memory of the main process and of each DataLoader worker over the batches (beyond the paper)."""
    from . import launch
    from .model import preload

    p, o = ctx.params, ctx.params["workers"]
    server_s = preload(_paths(ctx)[1])
    rows = []
    for loader in map(check_loader, o["loaders"]):
        for w in o["num_workers"]:
            if w < 1:
                raise ConfigError(f"workers.num_workers must be >= 1 (a worker to watch), got {w}")
            spec = _spec(ctx, loader, "dp", 1, num_workers=w)
            spec = dataclasses.replace(spec, batch_per_replica=o["batch_size"], steps=o["batches"],
                                       warmup_steps=0)
            out = launch.launch_fn(functools.partial(iterate_loader, spec, o["batches"]), timeout_s=p["run_timeout_s"],
                                   sample_interval_s=o["sample_interval_s"])
            rows += _worker_rows(out, loader, w)
    return Result(records=pd.DataFrame(rows), dataset_id=ctx.dataset, provenance=_provenance(ctx, {"rank_server_start_s": server_s}),
                  method="One process (started by the forkserver) iterates a DataLoader with num_workers workers (PyTorch's default start method), no model, "
                  "batches of batch_size samples; a thread outside it reads PSS and USS of the process and of "
                  "each worker every sample_interval_s (psutil). Each reading is tagged with the number of "
                  "batches delivered so far. USS growth of a worker is its private copy of pages it read.")


def _worker_rows(out, loader: str, w: int) -> list[dict]:
    res = out.results[0]
    ends = np.asarray(res["batch_ends"])
    t0 = out.samples[0]["t"] if out.samples else 0.0
    rows = []
    for s in out.samples:
        batches = int(np.searchsorted(ends, s["t"], side="right"))
        workers = sorted(pid for pid, role, _, _ in s["procs"] if role == "worker")
        for pid, role, pss, uss in s["procs"]:
            rows.append({"loader": loader, "num_workers": w, "t_rel_s": s["t"] - t0, "batches": batches,
                         "role": role, "worker": workers.index(pid) if role == "worker" else -1,
                         "pss_bytes": pss, "uss_bytes": uss,
                         "phase": "measured" if s["t"] >= res["t_loaded"] else "warmup"})
    return rows


STEPS = {"train": train, "options": options, "loader_only": loader_only, "workers": workers}

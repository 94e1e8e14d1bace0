"""What the measurement steps of the loaders study (Moving Stuff Around, sections 2-3) share: where the
bundle and the encoder checkpoint are, one run's :class:`RunSpec` from the typed parameters, the run
settings, the provenance every record set carries and the method notes.

torch, transformers and the run machinery are imported inside the functions: the CLI imports the steps
for every verb, and the figure and claims jobs need none of them.
"""
from __future__ import annotations

import multiprocessing
from pathlib import Path

from ...core.machine import devices
from ...core.measuring.step import Context
from ..params import Params
from ..system import collection

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


def parallel_note(cuda: bool) -> str:
    return CUDA_NOTE if cuda else CPU_NOTE


def too_many_replicas(replicas: int, cuda: bool) -> str | None:
    """Why a grid point cannot run here (more replicas than visible GPUs), or None."""
    if not cuda:
        return None
    n = devices.gpu_count()
    return f"needs {replicas} GPUs, {n} visible" if replicas > n else None


def paths(ctx: Context) -> tuple[str, str]:
    """The bundle's folder (``--input bundle``: its bundle.json, checked) and the encoder checkpoint's
    folder the build saved beside it."""
    bundle = Path(ctx.input("bundle"))
    bundle_dir = bundle.parent if bundle.is_file() else bundle
    collection.read_bundle(bundle_dir)
    return str(bundle_dir), str(bundle_dir / collection.MODEL)


def spec(ctx: Context, loader: str, parallel: str, replicas: int, **kw):
    """The :class:`RunSpec` of one run of the study's parameters (``kw``: an option's changes), checked."""
    from ..system.train import RunSpec

    p: Params = ctx.params
    bundle_dir, model_dir = paths(ctx)
    return RunSpec(loader=loader, parallel=parallel, replicas=replicas, bundle_dir=bundle_dir,
                   model_dir=model_dir, batch_per_replica=p.batch_per_replica, steps=p.steps,
                   warmup_steps=p.warmup_steps, max_length=p.max_length, doc_chars=p.doc_chars,
                   threads_per_replica=p.threads_per_replica, seed=ctx.seed, lr=p.lr,
                   freeze_embeddings=p.freeze_embeddings,
                   device="cuda" if devices.cuda_available() else "cpu", **kw).check()


def run_kw(p: Params) -> dict:
    """Time limit, memory cap and sampling interval of every run."""
    cap = int(p.memory_cap_mb) << 20 if p.memory_cap_mb else None
    return {"timeout_s": p.run_timeout_s, "cap_bytes": cap, "sample_interval_s": p.sample_interval_s}


def preload(ctx: Context) -> float:
    """Start the forkserver the runs are forked from (its start-up seconds; 0 when it was running)."""
    from ..system import launch

    return launch.preload(paths(ctx)[1])


def provenance(ctx: Context, extra: dict | None = None) -> dict:
    from ..system import footprint, launch

    bundle_dir, _ = paths(ctx)
    b = collection.read_bundle(bundle_dir)
    cuda = devices.cuda_available()
    return {"collection": {k: b[k] for k in ("n_docs", "collection_bytes", "checksum", "source")},
            "memory_cap": footprint.cap_available()[1] if ctx.params.memory_cap_mb else "none",
            "parallel_note": parallel_note(cuda), "device": "cuda" if cuda else "cpu",
            "gpus_visible": devices.gpu_count(), "rank_start_method": launch.START_METHOD,
            "rank_preload": launch.PRELOAD, "start_note": START_NOTE,
            "dataloader_default_start_method": multiprocessing.get_start_method(), **(extra or {})}

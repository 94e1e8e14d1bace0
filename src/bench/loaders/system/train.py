"""One training run of Moving Stuff Around (section 2): the cross-encoder trained for ``warmup + steps``
batches from one loader, under data parallelism.

- ``dp``: ``torch.nn.DataParallel`` over the first ``replicas`` visible GPUs on CUDA. On a CPU it does
  nothing, so the CPU stand-in runs one replica per thread in one process (each on a slice of the
  batch, gradients averaged, weights copied back), the way DataParallel drives one GPU per thread:
  "DP (threads, CPU)". :func:`implementation` names which ran; records carry it.
- ``ddp``: one process per replica (:func:`run_rank`), ``torch.distributed`` (gloo on CPU, nccl on
  CUDA with one GPU per rank), ``DistributedSampler``, a fixed batch per replica.

DataLoader workers use PyTorch's default start method unless a run names one (``worker_start_method``),
as a user would run them; the method used is in each result. The iterator, and so the workers, start
before the first backward pass: a worker never forks a process that has run autograd.

Each step is timed in three parts with wall clocks: waiting for the DataLoader's batch (loading and
tokenization, which the authors' timer left out), the host-to-device copy (CUDA synchronised), and
forward + backward + optimizer (gradient all-reduce included). The corpus loading time is timed apart.
"""
from __future__ import annotations

import copy
import dataclasses
import datetime
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from . import collection as coll
from .errors import ConfigError
from .bert_cat import load_checkpoint, load_tokenizer
from .samples import Collate, TripletDataset
from .stores import check_loader, make_store

PARALLEL = ("dp", "ddp")
START_METHODS = ("default", "fork", "spawn", "forkserver")   # "default": PyTorch's own


def implementation(parallel: str, device: str) -> str:
    """What runs a replica: the paper's own DP/DDP on CUDA, or the CPU stand-ins."""
    if device == "cuda":
        return "DataParallel (CUDA)" if parallel == "dp" else "DDP (nccl, one GPU per rank)"
    return "DP (threads, CPU stand-in)" if parallel == "dp" else "DDP (gloo, CPU)"


@dataclasses.dataclass
class RunSpec:
    """Everything one run needs (picklable; sent to every rank)."""

    loader: str
    parallel: str
    replicas: int
    bundle_dir: str
    model_dir: str
    batch_per_replica: int = 16
    steps: int = 10
    warmup_steps: int = 2
    max_length: int = 512
    doc_chars: int | None = None   # cut documents before tokenizing (None: the paper's collate)
    num_workers: int = 0
    pin_memory: bool = False
    worker_start_method: str = "default"
    threads_per_replica: int = 1   # one replica = one compute unit (a GPU in the paper, a core here)
    seed: int = 0
    lr: float = 1e-5
    freeze_embeddings: bool = False
    store_dir: str | None = None   # where the loader's files are read (a RAMDISK copy), else bundle_dir
    port: int = 0
    device: str = "cpu"
    dist_timeout_s: float = 60.0
    kill_rank_at_step: int = -1    # fault injection (tests): rank ``kill_rank`` SIGKILLs itself at this step
    kill_rank: int = 0
    phase_dir: str | None = None   # the launcher's folder for the memory sampler: see :func:`mark_measured`
    hold: bool = False             # hold the measured memory for the smaps check: see :func:`hold_for_check`
    hold_s: float = 30.0           # the longest a rank waits there for the check

    def check(self) -> "RunSpec":
        check_loader(self.loader)
        if self.parallel not in PARALLEL:
            raise ConfigError(f"unknown parallelism {self.parallel!r}; one of {', '.join(PARALLEL)}")
        if self.num_workers < 0:
            raise ConfigError(f"num_workers must be >= 0, got {self.num_workers}")
        if self.worker_start_method not in START_METHODS:
            raise ConfigError(f"worker start method {self.worker_start_method!r}; one of {START_METHODS}")
        for k in ("replicas", "batch_per_replica", "steps", "threads_per_replica"):
            if getattr(self, k) < 1:
                raise ConfigError(f"{k} must be >= 1, got {getattr(self, k)}")
        if self.warmup_steps < 0:
            raise ConfigError(f"warmup_steps must be >= 0, got {self.warmup_steps}")
        return self

    @property
    def total_steps(self) -> int:
        return self.warmup_steps + self.steps


def _loader(spec: RunSpec, dataset, rank: int, world: int, tokenizer):
    from torch.utils.data import DataLoader, DistributedSampler, RandomSampler

    if spec.parallel == "ddp":
        sampler, batch = DistributedSampler(dataset, world, rank, shuffle=True, seed=spec.seed), spec.batch_per_replica
    else:  # DP splits one global batch across its replicas
        sampler = RandomSampler(dataset, generator=torch.Generator().manual_seed(spec.seed))
        batch = spec.batch_per_replica * spec.replicas
    named = spec.num_workers and spec.worker_start_method != "default"
    kw = {"multiprocessing_context": spec.worker_start_method} if named else {}
    return DataLoader(dataset, batch_size=batch, sampler=sampler, num_workers=spec.num_workers,
                      collate_fn=Collate(tokenizer, spec.max_length, spec.doc_chars), drop_last=True,
                      pin_memory=spec.pin_memory and spec.device == "cuda", **kw)


def _dataset(spec: RunSpec, world: int):
    """The samples over the opened loader; the loader's own footprint is this process's PSS after
    opening it minus before (the dict for in-memory, the offsets for indexed, the index for the others)."""
    from .footprint import own_pss

    before = own_pss()
    t0 = time.monotonic()
    store = make_store(spec.loader, spec.store_dir or spec.bundle_dir).open()
    load_s = time.monotonic() - t0
    with np.load(os.path.join(spec.bundle_dir, coll.OFFSETS)) as z:
        ids = z["ids"]  # all document ids in memory (the paper's footnote 9)
    queries, pairs = coll.load_pairs(spec.bundle_dir)
    n = spec.total_steps * spec.batch_per_replica * spec.replicas
    ds = TripletDataset(store, queries, pairs, ids, n, spec.seed)
    return ds, {"load_s": load_s, "loader_pss_bytes": own_pss() - before}


def _to_device(batch: dict, device: str, non_blocking: bool) -> dict:
    out = {k: v.to(device, non_blocking=non_blocking) for k, v in batch.items()}
    if device == "cuda":
        torch.cuda.synchronize()
    return out


class ThreadReplicas:
    """DP's CPU stand-in: replica ``i`` runs in thread ``i`` on slice ``i`` of the batch; gradients are
    averaged into replica 0 (the model), and its weights copied back after the optimizer step."""

    def __init__(self, model: torch.nn.Module, n: int):
        self.reps = [model] + [copy.deepcopy(model) for _ in range(n - 1)]
        self.pool = ThreadPoolExecutor(n, thread_name_prefix="dp-replica") if n > 1 else None

    @staticmethod
    def _fwd_bwd(rep, chunk):
        loss = rep(**chunk)
        loss.backward()
        return float(loss.detach())

    def step(self, batch: dict, opt) -> None:
        n = len(self.reps)
        if n == 1:
            self._fwd_bwd(self.reps[0], batch)
        else:
            chunks = [{k: v.chunk(n)[i] for k, v in batch.items()} for i in range(n)]
            list(self.pool.map(self._fwd_bwd, self.reps, chunks))
            with torch.no_grad():
                for ps in zip(*(r.parameters() for r in self.reps)):
                    if ps[0].grad is not None:
                        ps[0].grad.copy_(torch.stack([p.grad for p in ps]).mean(0))
        opt.step()
        for r in self.reps:
            r.zero_grad(set_to_none=True)
        with torch.no_grad():
            for ps in zip(*(r.parameters() for r in self.reps)):
                for p in ps[1:]:
                    p.copy_(ps[0])

    def close(self):
        if self.pool:
            self.pool.shutdown()


def _model(spec: RunSpec):
    model = load_checkpoint(spec.model_dir)
    if spec.freeze_embeddings:
        model.encoder.embeddings.word_embeddings.weight.requires_grad_(False)
    return model.to(spec.device)


def _optimizer(model, lr):
    return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)


def _steps(spec: RunSpec, loader, train_step, rank: int = 0) -> tuple[list[dict], float]:
    rows, it = [], iter(loader)
    t_measured = float("nan")
    for s in range(spec.total_steps):
        if s == spec.kill_rank_at_step and rank == spec.kill_rank:
            os.kill(os.getpid(), 9)
        if s == spec.warmup_steps:
            t_measured = time.monotonic()
            mark_measured(spec, rank)   # before the step's timer starts
        t0 = time.perf_counter()
        batch = next(it)
        t1 = time.perf_counter()
        batch = _to_device(batch, spec.device, spec.pin_memory and spec.device == "cuda")
        t2 = time.perf_counter()
        train_step(batch)
        if spec.device == "cuda":
            torch.cuda.synchronize()
        t3 = time.perf_counter()
        rows.append({"step": s, "phase": "warmup" if s < spec.warmup_steps else "measured",
                     "wait_s": t1 - t0, "copy_s": t2 - t1, "compute_s": t3 - t2, "step_s": t3 - t0,
                     "t_end": time.monotonic()})
    hold_for_check(spec, rank)   # the iterator (its workers), model and corpus still held: the measured state
    del it
    return rows, t_measured


def mark_measured(spec: RunSpec, rank: int) -> None:
    """Tell the launcher's memory sampler that this rank begins its measured steps (``measured.<rank>`` in
    ``spec.phase_dir``; nothing without one): it reads the tree's memory at once, so a short measured phase
    has a reading too."""
    if spec.phase_dir:
        open(os.path.join(spec.phase_dir, f"measured.{rank}"), "w").close()


def hold_for_check(spec: RunSpec, rank: int) -> None:
    """After its last measured step, before it frees anything (the DataLoader's iterator and workers, the
    model, the corpus), a rank marks ``held.<rank>`` in ``spec.phase_dir`` and waits until the launcher's
    sampler has read the tree's memory with the smaps check (the file ``checked``), at most ``spec.hold_s``:
    the check reads the memory of the measured phase, and no timed step waits for it (nothing without a
    ``phase_dir`` or ``hold``)."""
    if not (spec.phase_dir and spec.hold):
        return
    open(os.path.join(spec.phase_dir, f"held.{rank}"), "w").close()
    done, end = os.path.join(spec.phase_dir, "checked"), time.monotonic() + spec.hold_s
    while not os.path.exists(done) and time.monotonic() < end:
        time.sleep(0.01)


def worker_start_method(spec: RunSpec) -> str | None:
    """The start method the DataLoader's workers use in this process (None without workers)."""
    import multiprocessing

    if not spec.num_workers:
        return None
    return spec.worker_start_method if spec.worker_start_method != "default" else multiprocessing.get_start_method()


def _result(spec, rank, world, rows, t_start, t_loaded, t_measured, load, threads) -> dict:
    import psutil

    return {"rank": rank, "world": world, "pid": os.getpid(), "rows": rows, **load,
            "t_start": t_start, "t_loaded": t_loaded, "t_measured": t_measured,
            "t_measured_end": rows[-1]["t_end"] if rows else float("nan"), "t_end": time.monotonic(),
            "torch_threads": threads, "rss_end": psutil.Process().memory_info().rss,
            "pin_memory_applied": bool(spec.pin_memory and spec.device == "cuda"),
            "worker_start_method_used": worker_start_method(spec), "device": spec.device,
            "implementation": implementation(spec.parallel, spec.device)}


def run_dp(spec: RunSpec) -> dict:
    """The DP run: one process, ``replicas`` replicas (threads on CPU, DataParallel on CUDA)."""
    t_start = time.monotonic()
    spec.check()
    threads = spec.threads_per_replica
    torch.set_num_threads(threads)
    torch.manual_seed(spec.seed)
    dataset, load = _dataset(spec, 1)
    t_loaded = time.monotonic()
    model = _model(spec)
    if spec.device == "cuda":  # pragma: no cover - needs CUDA
        dp = torch.nn.DataParallel(model, device_ids=list(range(spec.replicas)))  # gathers on GPU 0
        opt = _optimizer(model, spec.lr)

        def step(b):
            dp(**b).mean().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        reps = None
    else:
        reps, opt = ThreadReplicas(model, spec.replicas), _optimizer(model, spec.lr)

        def step(b):
            reps.step(b, opt)
    rows, t_measured = _steps(spec, _loader(spec, dataset, 0, 1, load_tokenizer(spec.model_dir)), step)
    if reps:
        reps.close()
    return _result(spec, 0, 1, rows, t_start, t_loaded, t_measured, load, threads)


def _rendezvous(spec: RunSpec, rank: int, world: int, init_method: str) -> None:
    """Join the process group; :class:`RendezvousError` naming where and how long when the ranks do not
    all meet within ``spec.dist_timeout_s`` (torch's own error is a long store trace)."""
    import torch.distributed as dist

    from .errors import RendezvousError

    where = (f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}" if init_method == "env://"
             else init_method)
    try:
        dist.init_process_group("nccl" if spec.device == "cuda" else "gloo", init_method=init_method, rank=rank,
                                world_size=world, timeout=datetime.timedelta(seconds=spec.dist_timeout_s))
    except (RuntimeError, ValueError) as exc:  # DistStoreError, DistNetworkError and timeouts subclass RuntimeError
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise RendezvousError(f"rank {rank} of {world}: the ranks did not meet at {where} within "
                              f"{spec.dist_timeout_s:g} s ({first}); start every node with the same "
                              "--master_addr/--master_port and --nnodes") from None


def run_rank(rank: int, spec: RunSpec, *, init_method: str | None = None, local_rank: int | None = None) -> dict:
    """One DDP rank: its own corpus copy (per the loader), model, optimizer and DataLoader. The
    rendezvous is ``tcp://127.0.0.1:<spec.port>`` (ranks forked by :mod:`launch`) unless ``init_method``
    names another (``env://`` under torchrun, on one node or several)."""
    import torch.distributed as dist

    t_start = time.monotonic()
    spec.check()
    world = spec.replicas
    device_index = rank if local_rank is None else local_rank
    threads = spec.threads_per_replica
    torch.set_num_threads(threads)
    torch.manual_seed(spec.seed)
    dataset, load = _dataset(spec, world)
    t_loaded = time.monotonic()
    _rendezvous(spec, rank, world, init_method or f"tcp://127.0.0.1:{spec.port}")
    try:
        if spec.device == "cuda":  # pragma: no cover - needs CUDA
            torch.cuda.set_device(device_index)
        model = _model(spec)
        ddp = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device_index] if spec.device == "cuda" else None)
        opt = _optimizer(model, spec.lr)

        def step(b):
            ddp(**b).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        loader = _loader(spec, dataset, rank, world, load_tokenizer(spec.model_dir))
        rows, t_measured = _steps(spec, loader, step, rank)
    finally:
        dist.destroy_process_group()
    return _result(spec, rank, world, rows, t_start, t_loaded, t_measured, load, threads)


def iterate_loader(spec: RunSpec, batches: int, _arg=None) -> dict:
    """Run process of the loaders' worker-memory measurement: iterate the DataLoader (no model), reporting
    batch end times. Module level, so that it pickles to a process started by the forkserver."""
    ds, load = _dataset(spec, 1)
    t_loaded = time.monotonic()
    it, ends = iter(_loader(spec, ds, 0, 1, load_tokenizer(spec.model_dir))), []
    for _ in range(batches):
        next(it)
        ends.append(time.monotonic())
    del it
    return {"rank": 0, "rows": [], "t_loaded": t_loaded, "t_measured": t_loaded, "t_end": ends[-1],
            "batch_ends": ends, "torch_threads": 1, "pin_memory_applied": False, **load}

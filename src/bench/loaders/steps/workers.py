"""Measurement step ``workers`` of the loaders study (beyond Moving Stuff Around): the memory of the main
process and of each DataLoader worker over the batches (copy-on-read of the in-memory loader's dict)."""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pandas as pd

from ...core.base.errors import ConfigError
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Params, step_keys
from ..system.stores import check_loader
from . import inputs

METHOD = ("One process (started by the forkserver) iterates a DataLoader with num_workers workers (PyTorch's default start method), no model, "
          "batches of batch_size samples; a thread outside it reads PSS and USS of the process and of "
          "each worker every sample_interval_s (psutil). Each reading is tagged with the number of "
          "batches delivered so far. USS growth of a worker is its private copy of pages it read.")


@step("workers", needs=("bundle",), per="first", keys=step_keys("workers"))
def workers(ctx: Context) -> Result:
    """Memory of the main process and of each DataLoader worker over the batches (beyond the paper)."""
    from ..system import launch, train

    p: Params = ctx.params
    o = p.workers
    server_s = inputs.preload(ctx)
    rows = []
    for loader in map(check_loader, o.loaders):
        for w in o.num_workers:
            if w < 1:
                raise ConfigError(f"workers.num_workers must be >= 1 (a worker to watch), got {w}")
            spec = inputs.spec(ctx, loader, "dp", 1, num_workers=w)
            spec = dataclasses.replace(spec, batch_per_replica=o.batch_size, steps=o.batches, warmup_steps=0)
            out = launch.launch_fn(functools.partial(train.iterate_loader, spec, o.batches),
                                   timeout_s=p.run_timeout_s, sample_interval_s=o.sample_interval_s)
            rows += worker_rows(out, loader, w)
    return Result(records=pd.DataFrame(rows), dataset_id=ctx.dataset,
                  provenance=inputs.provenance(ctx, {"rank_server_start_s": server_s}), method=METHOD)


def worker_rows(out, loader: str, w: int) -> list[dict]:
    """One row per process and memory reading, tagged with the batches delivered by then."""
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

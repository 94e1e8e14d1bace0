"""One DDP rank started by ``torchrun`` (Moving Stuff Around, section 2.1: DistributedDataParallel, one
process per replica), on one node or several: ``torchrun --nnodes N --nproc_per_node P ... -m bench
loaders ddp-rank ...``. The rank reads torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT), meets the others through ``env://``, trains as the harness's own DDP runs do
(:func:`train.run_rank`) and writes ``rank_<RANK>.json``: its step timings (warm-up apart), samples/s and
the PSS of its process tree (the rank and its DataLoader workers) at the end. Each node needs the same
bundle and checkpoint paths; summing ``samples_per_s`` over the ranks gives the run's throughput.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np

from ...core.base.atomic import write_text
from . import footprint, train
from .errors import ConfigError

ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def torchrun_env(environ=os.environ) -> dict[str, str]:
    """torchrun's variables, or a clear error when the process was not started by torchrun or they do
    not make sense (a rank outside the world, a port that is not one)."""
    missing = [k for k in ENV if k not in environ]
    if missing:
        raise ConfigError(f"ddp-rank: {', '.join(missing)} not set; start it with torchrun "
                          "(torchrun --nnodes N --nproc_per_node P ... -m bench loaders ddp-rank ...)")
    env = {k: environ[k] for k in ENV}
    try:
        rank, world, port = int(env["RANK"]), int(env["WORLD_SIZE"]), int(env["MASTER_PORT"])
        int(env["LOCAL_RANK"])
    except ValueError:
        raise ConfigError("ddp-rank: RANK, WORLD_SIZE, LOCAL_RANK and MASTER_PORT must be integers, got "
                          + ", ".join(f"{k}={env[k]!r}" for k in ENV if k != "MASTER_ADDR")) from None
    if world < 1 or not 0 <= rank < world:
        raise ConfigError(f"ddp-rank: RANK={rank} is outside WORLD_SIZE={world}")
    if not 0 < port < 65536:
        raise ConfigError(f"ddp-rank: MASTER_PORT={port} is not a TCP port")
    return env


def summary(res: dict, spec: train.RunSpec) -> dict:
    """samples/s of one rank over its measured steps (the time between the first measured step's start
    and the last step's end, data wait included), and the medians of the step parts."""
    rows = [r for r in res["rows"] if r["phase"] == "measured"]
    span = rows[-1]["t_end"] - res["t_measured"] if rows else float("nan")
    parts = {f"median_{k}": float(np.median([r[k] for r in rows])) if rows else float("nan")
             for k in ("wait_s", "copy_s", "compute_s", "step_s")}
    return {"samples_per_s": len(rows) * spec.batch_per_replica / span if rows else float("nan"),
            "measured_steps": len(rows), "warmup_steps": spec.warmup_steps, **parts}


def run(spec: train.RunSpec, out_dir: str | os.PathLike, environ=os.environ) -> Path:
    env = torchrun_env(environ)
    rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
    spec = dataclasses.replace(spec, parallel="ddp", replicas=world).check()
    res = train.run_rank(rank, spec, init_method="env://", local_rank=int(env["LOCAL_RANK"]))
    mem = footprint.reading([os.getpid()])
    out = {"launcher": "torchrun", "torchrun_env": env, "spec": dataclasses.asdict(spec),
           **summary(res, spec), "memory_at_end": mem, **{k: v for k, v in res.items() if k != "rows"},
           "steps": res["rows"]}
    return write_text(Path(out_dir) / f"rank_{rank}.json", json.dumps(out, indent=1, default=str) + "\n")

"""Measurement step ``train`` of the loaders study: Tables 1 and 2 and Figure 1 of Moving Stuff Around.
Every loader x {DP, DDP} x replicas, samples/s from per-step wall clocks (data wait / copy / compute),
memory of the whole process tree.

Enough repeats to decide: the DDP-over-DP claim (Table 1, 2 GPUs, every loader) runs under the
project's fixed two-stage design (:mod:`bench.core.measuring.sequential`). Stage 1 is the whole grid ``rounds`` times;
for each loader whose stage-1 DDP/DP interval (drawn at the design's level, rounds resampled first)
straddles 1, stage 2 runs that loader's DP and DDP runs at 2 replicas ``rounds`` more times (a size fixed
in advance). Only those runs are repeated, and only on CUDA: the claim's mechanism (the GIL between DP's
threads, one process per GPU in DDP) needs two GPUs, so the CPU stand-in is drawn and never judges it,
and repeating it to decide would buy nothing."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.machine import devices

from ...core.judging import claims
from ...core.measuring import sequential
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from .. import analysis as A
from ..params import Params, step_keys
from . import inputs


def _grid_round(ctx: Context, p: Params, rnd: int, stage: int, cuda: bool, only=None) -> list[dict]:
    """One round: every (loader, parallel, replicas) of the grid, or only the (loader, parallel, replicas)
    in ``only``, each a fresh set of processes."""
    from . import _run_rows

    rows = []
    for loader in p.loaders:
        for parallel, counts in (("dp", p.grid.dp), ("ddp", p.grid.ddp)):
            for replicas in counts:
                if only is not None and (loader, parallel, replicas) not in only:
                    continue
                base = {"run_id": A.run_id(loader, parallel, replicas), "option": "grid", "option_value": "-",
                        "round": rnd, "stage": stage}
                why = inputs.too_many_replicas(replicas, cuda)
                if why:
                    if rnd == 0:
                        rows.append(_run_rows.not_run_row(base, loader, parallel, replicas, why))
                    continue
                rows += _run_rows.measure_run(inputs.spec(ctx, loader, parallel, replicas), base,
                                              check_memory=rnd == 0, **inputs.run_kw(p))
    return rows


def undecided(rows: pd.DataFrame, p: Params) -> list[str]:
    """Stage 1's look: the loaders whose DDP-over-DP interval at 2 replicas, drawn at
    :data:`sequential.LEVEL` over the rounds so far, straddles 1 (neither wholly above nor wholly below), or
    that ran in fewer than :data:`analysis.MIN_ROUNDS` rounds (too few for an interval: the claim would decide
    nothing from them, so stage 2 runs them). None where the runs were not on CUDA: the claim needs two GPUs,
    and a CPU stand-in never judges it."""
    r = A.DDP_DP_REPLICAS
    if r not in p.grid.dp or r not in p.grid.ddp or not A.on_cuda(rows):
        return []
    st = A.steps(A.grid(rows))
    out = []
    for loader in p.loaders:
        _, lo, hi = A.ddp_over_dp(st, loader, level=sequential.LEVEL)
        few = min(len(np.unique(A.rounds(st, loader=loader, parallel=par, replicas=r))) for par in ("dp", "ddp"))
        if few == 0:
            continue   # not in this grid (nothing measured)
        if few < A.MIN_ROUNDS or not (lo == lo and hi == hi) or not claims.clears(1.0)(lo, hi):
            out.append(loader)
    return out


@step("train", needs=("bundle",), per="first", keys=step_keys("train"))
def train(ctx: Context) -> Result:
    """Tables 1-2 / Figure 1: the loader x parallelism x replicas grid, ``rounds`` times (rows carry ``round``:
    intervals resample rounds first, so they hold run-to-run noise), then stage 2 of the DDP/DP design."""
    p: Params = ctx.params
    server_s = inputs.preload(ctx)
    cuda = devices.cuda_available()
    rows = []
    for rnd in range(p.rounds):   # each round runs the whole grid again, every run a fresh set of processes
        rows += _grid_round(ctx, p, rnd, 1, cuda)
    again = undecided(pd.DataFrame(rows), p)
    only = {(l, par, A.DDP_DP_REPLICAS) for l in again for par in ("dp", "ddp")}
    for rnd in range(p.rounds, 2 * p.rounds) if again else ():
        rows += _grid_round(ctx, p, rnd, 2, cuda, only=only)
    design = {"design": sequential.METHOD, "claim": "ddp-faster-than-dp (DP and DDP at "
              f"{A.DDP_DP_REPLICAS} replicas, per loader)", "stage_size_rounds": p.rounds,
              "stage2_loaders": again, "stages": 2 if again else 1,
              "stage2_runs_on": "CUDA only: the claim needs 2 GPUs, a CPU stand-in never judges it"}
    return Result(records=pd.DataFrame(rows),
                  method=inputs.METHOD_RUN + inputs.parallel_note(cuda) + ". " + inputs.START_NOTE,
                  provenance=inputs.provenance(ctx, {"rank_server_start_s": server_s, "sequential": design}),
                  dataset_id=ctx.dataset)

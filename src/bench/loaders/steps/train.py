"""Measurement step ``train`` of the loaders study: Tables 1 and 2 and Figure 1 of Moving Stuff Around.
Every loader x {DP, DDP} x replicas, samples/s from per-step wall clocks (data wait / copy / compute),
memory of the whole process tree."""
from __future__ import annotations

import pandas as pd

from ...core import devices
from ...core.step import Context, Result
from ...core.study import step
from ..params import Params
from . import inputs


@step("train", needs=("bundle",))
def train(ctx: Context) -> Result:
    """Tables 1-2 / Figure 1: the loader x parallelism x replicas grid, ``rounds`` times (rows carry ``round``:
    intervals resample rounds first, so they hold run-to-run noise)."""
    from . import _run_rows

    p: Params = ctx.params
    server_s = inputs.preload(ctx)
    cuda = devices.cuda_available()
    rows = []
    for rnd in range(p.rounds):   # each round runs the whole grid again, every run a fresh set of processes
        for loader in p.loaders:
            for parallel, counts in (("dp", p.grid.dp), ("ddp", p.grid.ddp)):
                for replicas in counts:
                    base = {"run_id": f"{loader}/{parallel}/{replicas}", "option": "grid", "option_value": "-",
                            "round": rnd}
                    why = inputs.too_many_replicas(replicas, cuda)
                    if why:
                        if rnd == 0:
                            rows.append(_run_rows.not_run_row(base, loader, parallel, replicas, why))
                        continue
                    rows += _run_rows.measure_run(inputs.spec(ctx, loader, parallel, replicas), base,
                                                  **inputs.run_kw(p))
    return Result(records=pd.DataFrame(rows),
                  method=inputs.METHOD_RUN + inputs.parallel_note(cuda) + ". " + inputs.START_NOTE,
                  provenance=inputs.provenance(ctx, {"rank_server_start_s": server_s}), dataset_id=ctx.dataset)

"""Measurement step ``options`` of the loaders study: Table 3 of Moving Stuff Around (pin_memory,
num_workers, RAMDISK and their combinations on the paper's chosen configuration), plus, beyond the paper,
the DataLoader worker start method and a cold page cache."""
from __future__ import annotations

import pandas as pd

from ...core.machine import devices
from ...core.declaring.params import as_dict
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Options, Params, step_keys
from . import inputs

METHOD = ("Options as Table 3 (ir_datasets, DDP); beyond the paper: DataLoader "
          "worker start method and a cold page cache (posix_fadvise DONTNEED on the loader's files "
          "before the run). pin_memory is a no-op without CUDA: its rows are recorded as not_run on CPU. ")


def option_runs(o: Options) -> list[tuple[str, str, dict, dict]]:
    """(option, value, RunSpec changes, run flags) of Table 3 and the extras; pin_memory runs only on CUDA."""
    out = [("baseline", "-", {}, {})]
    out += [("pin_memory", "yes", {"pin_memory": True}, {})]
    out += [("num_workers", str(w), {"num_workers": w}, {}) for w in o.num_workers]
    out += [("pin_memory+num_workers", str(w), {"num_workers": w, "pin_memory": True}, {}) for w in o.num_workers]
    if o.ramdisk:
        out += [("ramdisk", "yes", {}, {"ramdisk": True})]
        w = max(o.num_workers)
        out += [(f"pin_memory+{w} workers+ramdisk", "-", {"num_workers": w, "pin_memory": True}, {"ramdisk": True})]
    out += [("worker_start_method", m, {"num_workers": 1, "worker_start_method": m}, {}) for m in o.start_methods]
    if o.cold_cache:
        out += [("page_cache", "cold", {}, {"cold_cache": True})]
    return out


@step("options", needs=("bundle",), per="first", keys=step_keys("options"))
def options(ctx: Context) -> Result:
    """Table 3 on the paper's chosen configuration (ir_datasets, DDP), plus worker start method and cold cache,
    ``rounds`` times: each round runs every option again in fresh processes (rows carry ``round``), so the
    options' intervals resample rounds first and hold run-to-run noise."""
    p: Params = ctx.params
    server_s = inputs.preload(ctx)
    cuda = devices.cuda_available()
    rows = []
    for rnd in range(p.rounds):
        rows += _round(ctx, p, rnd, cuda)
    prov = inputs.provenance(ctx, {"options": as_dict(p.options), "rank_server_start_s": server_s,
                                   "rounds": p.rounds})
    return Result(records=pd.DataFrame(rows), provenance=prov, dataset_id=ctx.dataset,
                  method=inputs.METHOD_RUN + METHOD + inputs.START_NOTE)


def _round(ctx: Context, p: Params, rnd: int, cuda: bool) -> list[dict]:
    """One round of the options, each run a fresh set of processes; a run this machine cannot do is one
    ``not_run`` row (in round 0 only)."""
    from . import _run_rows

    o, rows = p.options, []
    for option, value, changes, flags in option_runs(o):
        base = {"run_id": f"{option}={value}", "option": option, "option_value": value, "round": rnd}
        # pin_memory is a no-op without CUDA, recorded so: the same run without it is another row
        why = "pin_memory needs CUDA (a no-op on CPU)" if changes.get("pin_memory") and not cuda else None
        why = why or inputs.too_many_replicas(o.replicas, cuda)
        if why:
            rows += [_run_rows.not_run_row(base, o.loader, o.parallel, o.replicas, why)] if rnd == 0 else []
            continue
        spec = inputs.spec(ctx, o.loader, o.parallel, o.replicas, **changes)
        rows += _run_rows.measure_run(spec, base, check_memory=rnd == 0, **flags, **inputs.run_kw(p))
    return rows

"""Reference for the O_DIRECT reader (the CPU stand-in for GPUDirect Storage, paper section 4.1): 4 KiB
random-read IOPS of our reader and of fio on the embedding table, in the same job."""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pandas as pd

from ...core.measuring import records
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Params
from ..system import aio, backends, slow_ssd
from . import inputs

METHOD = ("4 KiB random reads, O_DIRECT, on the embedding table: our thread-pool preadv reader (wall clock "
          "over n reads, after a warm-up batch) and fio (psync at QD 1, io_uring at higher QD, time based) "
          "in the same job; our reader with both engines (thread pool of preadv; Linux native AIO) "
          "interleaved. The repeats are split over the step's fresh processes (column process; offsets "
          "seeded per process), so equation 4's intervals resample processes first.")


def _reader_rows(table, qd, params: Params, seed, repeats: int) -> list[dict]:
    n = params.iops_reads if qd > 1 else max(1000, params.iops_reads // 8)
    engines = ["threadpool"] + (["aio"] if qd > 1 and aio.available() else [])
    rows = []
    for rep in range(repeats):
        for eng in engines:  # interleaved, so both see the same machine load
            dt, v = backends.random_read_iops(table, n, qd, seed + rep, engine=eng)
            rows.append({"tool": "espn-reader", "engine": eng, "qd": qd, "repeat": rep, "iops": v,
                         "seconds": dt, "source": "measured", "status": "ok", "reason": ""})
    return rows


def _fio_once(fio, table, engine, qd, runtime, seed) -> tuple[str, subprocess.CompletedProcess]:
    cmd = [fio, "--name=espn", f"--filename={table}", "--rw=randread", "--bs=4k", "--direct=1",
           f"--ioengine={engine}", f"--iodepth={qd}", f"--runtime={runtime}", "--time_based", "--readonly",
           "--output-format=json", f"--randseed={seed}"]
    pr = subprocess.run(cmd, capture_output=True, text=True)
    if pr.returncode != 0 and engine == "io_uring":
        return _fio_once(fio, table, "libaio", qd, runtime, seed)
    return engine, pr


def _fio_rows(table, qd, params: Params, seed, repeats: int) -> list[dict]:
    fio = shutil.which("fio")
    engine = "psync" if qd == 1 else "io_uring"
    blank = {"tool": "fio", "qd": qd, "iops": np.nan, "seconds": np.nan, "source": "not_run"}
    if fio is None:
        return [{**blank, "engine": engine, "repeat": 0, "status": "not_run", "reason": "fio not installed"}]
    rows = []
    for rep in range(repeats):
        engine, pr = _fio_once(fio, table, engine, qd, params.fio_runtime_s, seed + rep)
        try:
            job = json.loads(pr.stdout)["jobs"][0]["read"]
            rows.append({"tool": "fio", "engine": engine, "qd": qd, "repeat": rep, "iops": job["iops"],
                         "seconds": job["runtime"] / 1000, "source": "measured", "status": "ok", "reason": ""})
        except (ValueError, KeyError, IndexError):
            rows.append({**blank, "engine": engine, "repeat": rep, "status": "failed",
                         "reason": pr.stderr.strip()[-200:]})
    return rows


@step("iops", needs=("build",), per="first", processes=True,
      keys=("datasets", "block_mode", "k", "nprobe", "prefetch_steps", "prefetch_step", "prefetch_delta",
            "rerank_counts", "partial_rerank", "repeats", "batch_sizes", "io_depth", "iops_depths", "iops_reads",
            "fio_runtime_s", "device", "maxsim_threads", "io_engine", "prefetch_engine"))
def iops(ctx: Context) -> Result:
    """The ``iops`` step: the build. Its
    provenance names the engine the direct back end resolves to here (``reader_engine``), which the
    claims read instead of asking the machine they run on."""
    b = inputs.load_build(ctx.input("build"))
    backends.evict_page_cache(b.table)
    rows = []
    seed, reps = ctx.seed + 1000 * ctx.process, ctx.share(ctx.params.repeats)   # offsets of this process's own
    for qd in ctx.params.iops_depths:
        rows += _reader_rows(b.table, qd, ctx.params, seed, reps)
        rows += _fio_rows(b.table, qd, ctx.params, seed, reps)
    df = pd.DataFrame(rows)
    ok = df[df.status == "ok"]
    summ = records.summarize_runs(ok, ["tool", "qd"], "iops") if len(ok) else None
    return Result(records=df, summary=summ, method=METHOD, **inputs.result_ids(b),
                  provenance=inputs.provenance(b, reader_engine=_reader_engine(ctx.params),
                                               disk=slow_ssd.disk_info(b.table)))


def _reader_engine(p: Params) -> str | None:
    """The O_DIRECT engine ``io_engine`` resolves to on the measuring machine (None: unavailable here)."""
    try:
        return backends.pick_engine(p.io_engine)
    except backends.BackendUnavailable:
        return None

"""Tables 4/5 and Figure 1 (paper section 5.3): end-to-end query latency per back end and memory budget.
Each configuration runs in its own worker process (``bench espn e2e-worker``, :mod:`bench.espn.worker`),
which loads everything, then
joins its memory cap (and, for the emulated slower SSD, a read-IOPS throttle: cgroup blkio (v1) or
io.max (v2))."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from ...core import records
from ...core.params import as_dict
from ...core.step import Context, Result
from ...core.study import step
from ..params import Params
from ..system import backends, memory_budget as memory, slow_ssd
from ..system.backends import BackendUnavailable
from . import inputs

METHOD = ("End-to-end latency per query (wall clock): live query encoding, ANN (coarse + "
          "search_preassigned), prefetch wait, critical-path embedding reads, re-ranking. Each "
          "configuration runs in its own process; memory budgets enforced by the mechanism in the "
          "`mechanism` column; the table is evicted from the page cache (posix_fadvise DONTNEED, "
          "MADV_DONTNEED for mmap) before each pass; {warmup} warm-up pass(es) of {wq} queries, then {repeats} "
          "measured passes of {nq} queries in all, split over {procs} fresh process(es) of the step (column "
          "process), each with its own workers and warm-up; warm-up rows reported apart (phase). "
          "Rows with ssd = emulated were measured on an emulated slower SSD: the worker joined a cgroup "
          "capping reads from the table's disk (cgroup blkio (v1) blkio.throttle.read_iops_device or "
          "io.max (v2) riops, ssd_read_iops); their source is emulated and they are reported apart from "
          "the native rows.")

def _method(ctx: Context) -> str:
    p, procs = ctx.params, ctx.processes
    return METHOD.format(warmup=p.warmup, wq=p.warmup_queries or p.e2e_queries, repeats=ctx.shared_total(p.repeats),
                         nq=p.e2e_queries, procs=procs)


# glibc in every e2e worker: two arenas, and fixed (not self-adjusting) thresholds high enough that the
# per-query temporaries (decoded records, MaxSim operands: up to ~16 MB) are recycled from the heap. A
# 64 KiB mmap threshold (the first choice, to return freed buffers to the kernel at once) made every such
# array a fresh mapping with a page fault per 4 KiB: it slowed decode + MaxSim 2.5x in every configuration.
# The heap this keeps is charged to the cap; the headroom covers it (cgroup_max_usage_bytes is recorded).
MALLOC_ENV = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
              "MALLOC_TRIM_THRESHOLD_": str(64 << 20)}


def _mechanism(params: Params) -> tuple[str, bool, str]:
    """``cgroup-v1``/``cgroup-v2`` (a measured cap; on v2 the memory controller is enabled for the
    workers here) or ``fadvise-evict`` (the emulation)."""
    want = params.budget_mechanism in ("auto", "cgroup")
    ok, why = memory.cgroup_available(prepare=want)
    mech = memory.cgroup_mechanism() if ok and want else "fadvise-evict"
    if params.budget_mechanism == "cgroup" and not ok:
        raise BackendUnavailable(f"budget_mechanism: cgroup requested but unavailable ({why})")
    return mech, ok, why


def _budgets(b: inputs.Build, params: Params, fracs, mibs=()) -> list[dict]:
    t, a = b.meta["table_bytes"], b.meta["ann_index_bytes"]
    headroom = int(params.cgroup_headroom_mib * 2**20)
    return ([memory.plan(t, a, frac=f, headroom_bytes=headroom) for f in fracs]
            + [memory.plan(t, a, total_bytes=int(m * 2**20), headroom_bytes=headroom) for m in mibs])


def _unavailable() -> dict[str, str]:
    out = {}
    if not backends.swap_available():
        out["vm_swap"] = "no swap space on this machine"
    if not backends.gds_available():
        out["gds"] = "GPUDirect Storage needs kvikio and CUDA"
    return out


def _not_run(kinds, budgets, reason, mech, **tag) -> pd.DataFrame:
    return pd.DataFrame([{"backend": k, "budget": f"{b['budget_frac']:.2f}", **b, **tag, "phase": "measured",
                          "status": "not_run", "reason": reason, "source": "not_run", "mechanism": mech}
                         for b in budgets for k in kinds])


def _emulated_ssd(ctx, b: inputs.Build, unavailable, mech) -> list[pd.DataFrame]:
    """Optional extra configurations measured on an emulated slower SSD: the worker joins a cgroup whose
    read-IOPS limit on the table's disk (cgroup blkio (v1) ``blkio.throttle.read_iops_device`` or io.max
    (v2) ``riops``) caps its reads (as root).
    Rows carry ``ssd = emulated`` and ``source = emulated``; where the throttle is unavailable they are
    recorded as not run."""
    e = ctx.params.emulated_ssd
    if not e.enabled:
        return []
    budgets = _budgets(b, ctx.params, e.budgets)
    kinds = [k for k in e.backends if k not in unavailable]
    ok, why = slow_ssd.blkio_available(b.table, prepare=True)
    tag = {"ssd": "emulated", "ssd_read_iops": e.read_iops}
    if not ok:
        return [_not_run(list(e.backends), budgets, f"emulated SSD: {why}", mech, **tag)]
    return [spawn_worker(ctx, f"{bud['budget_frac']:.2f}", bud, kinds, mech, blkio_iops=e.read_iops).assign(**tag)
            for bud in budgets if kinds]


def spawn_worker(ctx: Context, label, budget, kinds, mech, blkio_iops: int | None = None) -> pd.DataFrame:
    """One configuration in its own process (``bench espn e2e-worker``); failure and OOM kills are rows."""
    with tempfile.TemporaryDirectory(prefix="espn-worker-") as td:
        outp = Path(td) / "rows.parquet"
        section = ctx.section or as_dict(ctx.params)   # the validated section, as the worker rebuilds Params
        section = {**section, "repeats": ctx.share(ctx.params.repeats)}   # this process's share
        cmd = [sys.executable, "-m", "bench", "espn", "e2e-worker", "--build", str(ctx.input("build")),
               "--params", json.dumps(section), "--budget", json.dumps(budget), "--label", label,
               "--kinds", ",".join(kinds), "--mechanism", mech, "--seed", str(ctx.seed),
               "--threads", str(ctx.threads), "--out", str(outp)]
        if blkio_iops:
            cmd += ["--blkio-iops", str(int(blkio_iops))]
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, **MALLOC_ENV}) as worker:
            _, stderr = worker.communicate()
        memory.remove_worker_cgroups(worker.pid)  # an OOM-killed worker cannot remove its own cap
        if worker.returncode == 0 and outp.exists():
            return pd.read_parquet(outp)
    reason = "OOM-killed under the memory cap" if worker.returncode in (137, -9) else \
        f"worker failed (rc {worker.returncode}): {stderr.strip()[-300:]}"
    sys.stderr.write(stderr)
    return pd.DataFrame([{"backend": k, "budget": label, **(budget or {}), "phase": "measured",
                          "status": "failed", "reason": reason, "source": "not_run", "mechanism": mech}
                         for k in kinds])


@step("e2e", needs=("build",), processes=True)
def e2e(ctx: Context) -> Result:
    """The ``e2e`` step: the build (the workers read the query texts from the
    manifest the build names)."""
    b = inputs.start(ctx)
    params = ctx.params
    stale = memory.remove_worker_cgroups()  # bench-* cgroups left by killed runs
    budgets = _budgets(b, params, params.memory_budgets, params.memory_budgets_mib)
    mech, ok, why = _mechanism(params)
    unavailable = _unavailable()
    kinds = [k for k in params.backends if k not in unavailable]
    configs = [("unlimited", None, ["memory"])] + [(f"{x['budget_frac']:.2f}", x, kinds) for x in budgets]
    frames = [spawn_worker(ctx, label, x, ks, mech) for label, x, ks in configs if ks]
    frames += _emulated_ssd(ctx, b, unavailable, mech)
    for k in dict.fromkeys([*params.backends, *params.report_not_run]):
        if k in unavailable:
            frames.append(_not_run([k], budgets, unavailable[k], mech))
    df = pd.concat(frames, ignore_index=True)
    df["ssd"] = df["ssd"].fillna("native") if "ssd" in df else "native"
    m = df[(df.phase == "measured") & (df.status == "ok")]
    summ = records.summarize_runs(m, ["ssd", "backend", "budget"], "total_s") if len(m) else None
    prov = inputs.provenance(b, budget_mechanism=mech, cgroup_unavailable_reason=None if ok else why,
                             worker_env=MALLOC_ENV, stale_cgroups_removed=[str(p) for p in stale])
    return Result(records=df, summary=summ, method=_method(ctx), provenance=prov, **inputs.result_ids(b))

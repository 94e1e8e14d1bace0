"""Tables 4/5 and Figure 1 (paper section 5.3): end-to-end query latency per back end and memory budget.
Each configuration runs in its own worker process (``bench espn e2e-worker``, :mod:`bench.espn.worker`),
which loads everything, then joins its memory cap (the ANN index loaded again inside it) and measures a
steady state under it. The configurations, and the back ends inside each, run in a seeded order of
their own per process of the step. The emulated slower SSD is a FUSE pass-through adding a per-read
latency with the queue depth kept (:mod:`..system.fuse_ssd`; its QD1 and QD32 rates are measured on it),
or a read-IOPS cap accepted only as a rated peak well above the disk's QD1 rate. The disk is named
(model, rotational flag, queue depth, measured QD1 and QD32 rates) in records and provenance.

The paper's premise that the SSD serves many reads at once (section 2.3) is measured on each device as
interleaved QD1/QD32 probe pairs spread over the step (:func:`probe_pairs`): on the disk before every native
configuration, on an emulated device before and after its configuration, in every process of the step. Each
pair is a row with ``phase = probe`` (columns ``probe_qd1_iops``, ``probe_qd32_iops``, ``probe_point``), so
the claims judge the premise from the records with an interval over the pairs, never from one reading."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ...core.measuring import records
from ...core.declaring.params import as_dict
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Params
from ..system import backends, fuse_ssd, memory_budget as memory, slow_ssd
from ..system.backends import BackendUnavailable
from ..system.eq4 import PREFETCHER, PREFETCHERS
from .inputs import threads_of
from . import inputs

METHOD = ("End-to-end latency per query (wall clock): live query encoding, ANN (coarse + "
          "search_preassigned), prefetch wait, critical-path embedding reads, re-ranking. Each "
          "configuration runs in its own process, configurations and back ends in a seeded order of their "
          "own per process (run_order); memory budgets enforced by the mechanism in the `mechanism` column, "
          "the cgroup cap holding the ANN index (loaded again inside it; a balloon of touched memory makes up "
          "what the reload did not charge: ann_charged_bytes, ann_balloon_bytes) + the embedding budget + the "
          "back end's headroom (its own buffers: headroom_bytes). "
          "Each back end starts from a cold table (posix_fadvise DONTNEED, MADV_DONTNEED for mmap), then "
          "runs warm-up passes over the {nq} queries until the table's page-cache share changes by at most "
          "{tol} between passes (a steady state under the cap; at most {maxp} passes; columns warmup_passes, "
          "steady_state), then {repeats} measured passes in all, split over {procs} fresh process(es) of the "
          "step (column process); warm-up rows reported apart (phase). Every pass records the cap's failcnt "
          "and reclaim over the pass and whether the budget bound (budget_bound, budget_bound_reason). "
          "Threads per back end: column threads. The direct_prefetch back end uses the cut-concurrent "
          "prefetcher (column prefetcher). Rows with ssd = emulated were measured on an emulated slower SSD "
          "(ssd_emulation: fuse-latency = a FUSE pass-through stating ssd_latency_us added per read with "
          "ssd_threads reads in flight, calibrated when mounted in each process so that its median QD1 4 KiB "
          "read takes that much more than the disk's (interleaved reads; ssd_added_us measured, ssd_read_us, "
          "ssd_disk_read_us, ssd_wait_us the wait it settled on, ssd_calibrated whether it reached the stated "
          "latency within max(10%, 10 us)), its measured ssd_qd1_iops and ssd_qd32_iops recorded; iops-cap = a "
          "cgroup read "
          "throttle at ssd_read_iops); their source is emulated and they are reported apart from the "
          "native rows. The disk: columns disk_* (model, rotational flag, queue depth, measured QD1 and "
          "QD32 4 KiB O_DIRECT rates: medians of the step's first probe pairs). Rows with phase = probe are "
          "QD1/QD32 probe pairs (probe_qd1_iops, probe_qd32_iops, probe_wall_s; the order within a pair alternating): "
          "{dpairs} on the disk at the start and before each native configuration ({dreads} reads at QD1 / QD32), "
          "{spairs} on an emulated device before and after its configuration (after one pair left out as its "
          "warm-up), in every process of the step: the parallel-SSD premise (paper section 2.3) is judged "
          "from them with an interval, never from one reading.")

def _method(ctx: Context) -> str:
    p, procs = ctx.params, ctx.processes
    return METHOD.format(tol=p.steady_tol, maxp=max(p.steady_max_passes, p.warmup),
                         repeats=ctx.shared_total(p.repeats), nq=p.e2e_queries, procs=procs,
                         dpairs=DISK_PROBE_PAIRS, dreads="/".join(map(str, DISK_PROBE_READS)),
                         spairs=SSD_PROBE_PAIRS)


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


def _emulated_ssd(ctx, b: inputs.Build, unavailable, mech, disk: dict) -> list[pd.DataFrame]:
    """Optional extra configurations measured on an emulated slower SSD (``kind``): ``latency``, the
    table read through a FUSE pass-through that adds a per-read latency with ``threads`` reads in flight
    (one device per latency, its QD1 and QD32 rates measured on it first); ``iops``, a cgroup read-IOPS
    cap on the table's disk (checked against the disk's QD1 rate before anything runs).
    Rows carry ``ssd = emulated`` and ``source = emulated``; where the means is unavailable they are
    recorded as not run with what to install."""
    e = ctx.params.emulated_ssd
    if not e.enabled:
        return []
    budgets = _budgets(b, ctx.params, e.budgets)
    kinds = [k for k in e.backends if k not in unavailable]
    if not kinds:
        return []
    if e.kind == "latency":
        return _latency_ssd(ctx, b, budgets, kinds, mech)
    ok, why = slow_ssd.blkio_available(b.table, prepare=True)
    tag = {"ssd": "emulated", "ssd_emulation": "iops-cap", "ssd_read_iops": e.read_iops}
    if not ok:
        return [_not_run(list(e.backends), budgets, f"emulated SSD: needs a tool we lack: {why}", mech, **tag)]
    return [spawn_worker(ctx, f"{bud['budget_frac']:.2f}", bud, kinds, mech, blkio_iops=e.read_iops).assign(**tag)
            for bud in budgets]


def _latency_ssd(ctx, b: inputs.Build, budgets, kinds, mech) -> list[pd.DataFrame]:
    e = ctx.params.emulated_ssd
    ok, why = fuse_ssd.available()
    frames = []
    for lat in e.latencies_us:
        tag = {"ssd": "emulated", "ssd_emulation": "fuse-latency", "ssd_latency_us": float(lat),
               "ssd_threads": e.threads, "ssd_max_readahead": e.max_readahead}
        if not ok:
            frames.append(_not_run(kinds, budgets, f"emulated SSD: needs a tool we lack: {why}", mech, **tag))
            continue
        with fuse_ssd.LatencyDevice(b.dir, lat * 1e-6, threads=e.threads, max_readahead=e.max_readahead) as dev:
            table = dev.path(b.table.name)
            tag.update(dev.calibrate(b.table.name, seed=_pair_seed(ctx, f"ssd{lat}-calibrate", 0)))
            measure = (lambda qd, seed: fuse_ssd.measure_qd(
                table, qd, max(16, e.qd_reads // 4) if qd == 1 else e.qd_reads, seed=seed)["iops"])
            probe = {**tag, "ssd": "emulated", "source": "emulated"}
            probe_pairs(measure, ctx, f"ssd{lat}-warm", 1, **probe)   # the device's first reads: left out
            before = probe_pairs(measure, ctx, f"ssd{lat}-before", SSD_PROBE_PAIRS, **probe)
            tag["ssd_qd1_iops"], tag["ssd_qd32_iops"] = _medians(before)
            for bud in _ordered(budgets, ctx, f"ssd{lat}"):
                frames.append(spawn_worker(ctx, f"{bud['budget_frac']:.2f}", bud, kinds, mech,
                                           table_path=table, ssd=tag).assign(**tag))
            after = probe_pairs(measure, ctx, f"ssd{lat}-after", SSD_PROBE_PAIRS, **probe)
            frames.append(pd.DataFrame(before + after).assign(**tag))
    return frames


def _ordered(items: list, ctx: Context, what: str) -> list:
    """``items`` in a seeded order of this process's own (configurations interleaved across processes)."""
    import zlib

    import numpy as np

    rng = np.random.default_rng([int(ctx.seed), int(ctx.process), zlib.crc32(what.encode())])
    return [items[i] for i in rng.permutation(len(items))]


# QD1/QD32 probe pairs (the premise of section 2.3): 4 KiB random O_DIRECT reads per pair on the disk (our
# reader) and on an emulated device (fuse_ssd.measure_qd: the emulated QD32 check reads qd_reads, QD1 a quarter)
DISK_PROBE_READS = (500, 2000)   # QD1, QD32: ~0.1 s a pair on this VM's disk (QD1 ~15k, QD32 ~50k IOPS)
# pairs at the start and before each native configuration, in each process of the step: 4 (48 in a 3-process
# tiny step with its two budgets and the cached run; 6 in each of 2 processes gave 60); ~0.1 s a pair
DISK_PROBE_PAIRS = 4
# pairs before and again after an emulated device's configuration, in each process of the step: 8 (48 in a
# 3-process step; 24 in each of 2 processes gave 96); ~0.15 s a pair on the calibrated 200 us device
SSD_PROBE_PAIRS = 8


def _pair_seed(ctx: Context, what: str, j: int) -> int:
    import zlib

    return int(zlib.crc32(f"{ctx.seed}/{ctx.process}/{what}/{j}".encode()))


def probe_pairs(measure, ctx: Context, what: str, n: int, **tag) -> list[dict]:
    """``n`` QD1/QD32 probe pairs, the order within a pair alternating (QD1 first, then QD32 first), so a
    drift of the device during the step falls on both: one ``phase = probe`` row per pair. ``measure(qd,
    seed)`` returns the IOPS; a pair that fails is left out (the claim says how many pairs there are)."""
    rows = []
    for j in range(n):
        seed = _pair_seed(ctx, what, j)
        t0 = time.perf_counter()
        try:
            got = {qd: measure(qd, seed + qd) for qd in ((1, 32) if j % 2 == 0 else (32, 1))}
        except (OSError, BackendUnavailable):
            continue
        rows.append({"backend": "probe", "phase": "probe", "status": "ok", "reason": "", "probe_point": what,
                     "probe_pair": j, "probe_qd1_iops": float(got[1]), "probe_qd32_iops": float(got[32]),
                     "probe_wall_s": time.perf_counter() - t0, **tag})
    return rows


def _disk_probe(table):
    n1, n32 = DISK_PROBE_READS
    return lambda qd, seed: backends.random_read_iops(table, n1 if qd == 1 else n32, qd, seed)[1]


def _medians(rows: list[dict]) -> tuple[float | None, float | None]:
    if not rows:
        return None, None
    return (float(np.median([r["probe_qd1_iops"] for r in rows])),
            float(np.median([r["probe_qd32_iops"] for r in rows])))


def disk(b: inputs.Build, ctx: Context, probes: list[dict]) -> dict:
    """The table's disk: what the OS reports and its QD1 and QD32 4 KiB O_DIRECT rates (the medians of the
    probe pairs taken before anything else; ``probes`` gets them, tagged native and measured)."""
    info = slow_ssd.disk_info(b.table)
    first = probe_pairs(_disk_probe(b.table), ctx, "start", DISK_PROBE_PAIRS, ssd="native", source="measured")
    probes += first
    info["disk_qd1_iops"], info["disk_qd32_iops"] = _medians(first)
    return info


def _check_cap(params: Params, d: dict) -> None:
    """An IOPS-capped slower SSD only at a rated peak well above the disk's QD1 rate (refused before
    anything is measured)."""
    e = params.emulated_ssd
    if e.enabled and e.kind == "iops":
        slow_ssd.check_rated_peak(e.read_iops, d.get("disk_qd1_iops") or float("nan"))


def spawn_worker(ctx: Context, label, budget, kinds, mech, blkio_iops: int | None = None,
                 table_path=None, ssd: dict | None = None) -> pd.DataFrame:
    """One configuration in its own process (``bench espn e2e-worker``); failure and OOM kills are rows."""
    with tempfile.TemporaryDirectory(prefix="espn-worker-") as td:
        outp = Path(td) / "rows.parquet"
        section = ctx.section or as_dict(ctx.params)   # the validated section, as the worker rebuilds Params
        section = {**section, "repeats": ctx.share(ctx.params.repeats)}   # this process's share
        cmd = [sys.executable, "-m", "bench", "espn", "e2e-worker", "--build", str(ctx.input("build")),
               "--params", json.dumps(section), "--budget", json.dumps(budget), "--label", label,
               "--kinds", ",".join(kinds), "--mechanism", mech, "--seed", str(ctx.seed),
               "--threads", str(ctx.threads), "--out", str(outp), "--process", str(ctx.process)]
        if blkio_iops:
            cmd += ["--blkio-iops", str(int(blkio_iops))]
        if table_path:
            cmd += ["--table-path", str(table_path), "--ssd", json.dumps(ssd or {})]
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


def decided(rows: pd.DataFrame, params: Params) -> bool:
    """Stage 1 of the two-stage design (:mod:`bench.core.measuring.sequential`), where the profile asks for one
    (``e2e_second_stage``): are the rows judged over fresh worker processes (the prefetch target on each
    device; :func:`bench.espn.claims.worker_rows`) already decided by their intervals at
    the design's level (the rows carry ``stage``)? When not, a second stage of as many fresh processes runs."""
    if not params.e2e_second_stage:
        return True
    from .. import claims
    from ..analysis import E2E

    m = rows[(rows.phase == "measured") & (rows.status == "ok")] if "budget_frac" in rows else rows.iloc[:0]
    capped = m.dropna(subset=["budget_frac", "budget_embedding_bytes", "ann_index_bytes"]) if len(m) else m
    if capped.empty:
        return True
    df = rows.copy()
    df.attrs["provenance"] = {"build": {
        "ann_index_bytes": float(capped.ann_index_bytes.max()),
        "table_bytes": float((capped.budget_embedding_bytes / capped.budget_frac).median())}}
    from ...core.judging.claims import INCONCLUSIVE

    return not any(c.verdict == INCONCLUSIVE for c in claims.worker_rows(E2E(df)))


@step("e2e", needs=("build",), per="first", processes=True, decide=decided,
      keys=("enabled", "datasets", "block_mode", "index", "k", "nprobe", "prefetch_steps", "prefetch_step",
            "prefetch_delta", "rerank_counts", "partial_rerank", "bow_weight", "memory_budgets", "memory_budgets_mib",
            "budget_mechanism", "cgroup_headroom_mib", "cgroup_headroom_io_mib", "backends", "report_not_run",
            "e2e_queries", "repeats", "warmup", "batch_sizes", "io_depth", "device", "maxsim_threads", "io_engine",
            "emulated_ssd", "prefetch_engine", "prefetch_chunk", "steady_tol", "steady_max_passes",
            "e2e_second_stage"))
def e2e(ctx: Context) -> Result:
    """The ``e2e`` step: the build (the workers read the query texts from the
    manifest the build names)."""
    b = inputs.start(ctx)
    params = ctx.params
    probes: list[dict] = []
    d = disk(b, ctx, probes)
    _check_cap(params, d)
    stale = memory.remove_worker_cgroups()  # bench-* cgroups left by killed runs
    budgets = _budgets(b, params, params.memory_budgets, params.memory_budgets_mib)
    mech, ok, why = _mechanism(params)
    unavailable = _unavailable()
    kinds = [k for k in params.backends if k not in unavailable]
    configs = [("unlimited", None, ["memory"])] + [(f"{x['budget_frac']:.2f}", x, kinds) for x in budgets]
    frames = []
    for label, x, ks in _ordered(configs, ctx, "native"):
        if ks:
            probes += probe_pairs(_disk_probe(b.table), ctx, f"before-{label}", DISK_PROBE_PAIRS, ssd="native",
                                  source="measured")
            frames.append(spawn_worker(ctx, label, x, ks, mech))
    frames.append(pd.DataFrame(probes))
    frames += _emulated_ssd(ctx, b, unavailable, mech, d)
    for k in dict.fromkeys([*params.backends, *params.report_not_run]):
        if k in unavailable:
            frames.append(_not_run([k], budgets, unavailable[k], mech))
    df = pd.concat(frames, ignore_index=True)
    df["ssd"] = df["ssd"].fillna("native") if "ssd" in df else "native"
    df = df.assign(**{k: v for k, v in d.items() if k.startswith("disk_")})
    m = df[(df.phase == "measured") & (df.status == "ok")]
    summ = records.summarize_runs(m, ["ssd", "backend", "budget"], "total_s") if len(m) else None
    prov = inputs.provenance(b, budget_mechanism=mech, cgroup_unavailable_reason=None if ok else why,
                             worker_env=MALLOC_ENV, stale_cgroups_removed=[str(p) for p in stale], disk=d,
                             prefetcher={"name": PREFETCHER, "what": PREFETCHERS[PREFETCHER]},
                             threads={k: threads_of(k, params, inputs.prefetch_engine(params))
                                      for k in ["memory", *params.backends] if k not in unavailable})
    return Result(records=df, summary=summ, method=_method(ctx), provenance=prov, **inputs.result_ids(b))

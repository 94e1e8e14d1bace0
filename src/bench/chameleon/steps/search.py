"""Chameleon section 6.2, Figure 9: the ``search`` step. Latency per batch size x configuration (the
search back ends of ``system.backends``), recall@K over all queries, throughput (all queries in one
batch). fpga-* rows are modelled: measured index scan + the authors' per-batch host cost + the ChamVS
node model driven by the real probed-list lengths.

The step runs in the profile's fresh processes (``processes=True``), each timing its share of the batches
and throughput runs, so every interval drawn from it resamples processes. Each timed batch is watched for
preemption (``inputs.watched``): on a 2-core machine shared with others, a batch of a few queries that
forks an OpenMP team (faiss parallelises over queries from 2 queries up) waits a whole scheduler slice
(~10-30 ms against 0.03 ms) whenever another process holds the other core; such a batch is run again, and
one still preempted is kept and flagged."""
from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd

from ...ann.metrics import recall_at_k
from ...core.measuring import records
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from .. import paper_values
from ..params import Params
from ..system import backends, pqscan
from ..system.energy import EnergyMeter
from .inputs import BATCH_RERUNS, PROTOCOL, fpga_node, host_path, llc_bytes, load, watched


def batches(xq: np.ndarray, bs: int, n: int, start: int = 0):
    nq = len(xq)
    for b in range(n):
        yield xq[(np.arange(bs) + start + b * bs) % nq]


def _batch_row(common: dict, bs: int, i: int, warm: bool, w, name: str) -> dict:
    o = w.out
    return {**common, "kind": "latency", "phase": "warmup" if warm else "measured", "batch_size": bs, "run": i,
            "latency_ms": o.seconds * 1e3, "coarse_ms": o.parts.get("coarse_s", np.nan) * 1e3,
            "fpga_ms": o.parts.get("fpga_s", np.nan) * 1e3, "host_fixed_ms": o.parts.get("host_fixed_s", np.nan) * 1e3,
            "backend": o.parts.get("backend", name), "batch_reruns": w.reruns, "preempted": w.preempted > 0}


def _timed_batches(cfg, xq, bs: int, nw: int, n: int, k: int, common: dict) -> list[dict]:
    """``nw`` warm-up and ``n`` timed batches of ``bs`` queries, each watched for preemption; energy per
    query where a power counter is readable (over the timed batches, reruns included)."""
    xbs = list(batches(xq, bs, nw + n, start=bs + common.get("process", 0) * n * bs))
    outs = [watched(lambda xb=xb: cfg.search(xb, k)) for xb in xbs[:nw]]
    meter = EnergyMeter() if cfg.source == "measured" else None
    with meter if meter is not None else contextlib.nullcontext():
        timed = [watched(lambda xb=xb: cfg.search(xb, k)) for xb in xbs[nw:]]
    runs = sum(1 + w.reruns for w in timed)
    e_q = meter.joules / (runs * bs) * 1e3 if meter is not None and meter.joules is not None else np.nan
    rows = [_batch_row(common, bs, i, i < nw, w, cfg.name) for i, w in enumerate(outs + timed)]
    for r in rows[nw:]:
        r["energy_per_query_mj"] = e_q
    return rows


def _throughput(cfg, xq, k: int, runs: int, common: dict) -> list[dict]:
    o = cfg.search(xq, k)   # warm-up
    rows = [{**common, "kind": "throughput", "phase": "warmup", "batch_size": len(xq), "run": 0,
             "latency_ms": o.seconds * 1e3, "qps": len(xq) / o.seconds, "backend": o.parts.get("backend", cfg.name)}]
    for r in range(runs):
        o = cfg.search(xq, k)
        rows.append({**common, "kind": "throughput", "phase": "measured", "batch_size": len(xq), "run": r,
                     "latency_ms": o.seconds * 1e3, "qps": len(xq) / o.seconds,
                     "backend": o.parts.get("backend", cfg.name)})
    return rows


def _not_run(base: dict, name: str, why: str) -> dict:
    return {**base, "config": name, "source": "not_run", "kind": "not_run", "phase": "measured",
            "batch_size": 0, "run": 0, "latency_ms": np.nan, "recall": np.nan, "note": why, "why": why}


def _config_rows(cfg, ds, xq, ctx: Context, base: dict) -> list[dict]:
    """One configuration in this process: recall over all queries (a warm-up of everything), its share of
    the timed batches at every batch size, its share of the throughput runs."""
    p: Params = ctx.params
    cfg.check(xq, p.k)
    full = cfg.search(xq, p.k)
    common = {**base, "config": cfg.name, "source": cfg.source, "recall": recall_at_k(full.I, ds.gt_ids, p.k),
              "note": "", "process": ctx.process, "device": "cuda" if cfg.needs_cuda else "cpu"}
    rows = []
    for bs in p.batch_sizes:
        rows += _timed_batches(cfg, xq, bs, p.warmup_batches, ctx.share(p.n_batches), p.k, common)
    return rows + _throughput(cfg, xq, p.k, ctx.share(p.throughput_runs), common)


def _method(host, ctx: Context) -> str:
    p: Params = ctx.params
    return (f"IVF-PQ search latency per batch: {PROTOCOL.format(reruns=BATCH_RERUNS)}; "
            f"{ctx.shared_total(p.n_batches)} timed batches per batch size and configuration over "
            f"{ctx.processes} fresh process(es) of the step, each with its own warm-up. Throughput: all queries "
            f"in one batch, {ctx.shared_total(p.throughput_runs)} runs over the processes, each after one "
            f"warm-up. fpga-* rows are MODELLED: measured index scan plus the authors' per-batch host fixed cost "
            f"({host.fixed_s * 1e3:.3f} ms, calibrated on their RALM-S batch-1 latencies) plus the performance "
            f"model of a ChamVS memory node driven by the real probed-list lengths. Configurations needing CUDA "
            f"are recorded as not_run without it.")


@step("search", needs=("manifest", "index"), processes=True, keys=(
    "pq_m", "nlist", "nprobe", "k", "configs", "batch_sizes", "warmup_batches", "n_batches", "throughput_runs", "fpga",
    "energy"))
def search(ctx: Context) -> Result:
    """Figure 9: latency per batch size and configuration; recall@K; throughput (all queries in one batch)."""
    p: Params = ctx.params
    ds, idx = load(ctx)
    dataset = ctx.dataset or ds.name
    xq = np.ascontiguousarray(ds.queries, dtype=np.float32)
    ivf = pqscan.ivfpq_of(idx)
    node, host = fpga_node(p.fpga, ivf.pq.M), host_path(p.fpga)
    base = {"dataset": dataset, "paper_dataset": paper_values.paper_dataset(dataset), "n_base": int(idx.ntotal),
            "dim": int(ivf.d), "nlist": ivf.nlist, "m": ivf.pq.M, "nprobe": p.nprobe, "k": p.k, "threads": ctx.threads}
    layout = pqscan.IVFPQLayout.from_faiss(idx, "cpu") if "torch-cpu" in p.configs else None
    rows = []
    for name in p.configs:
        cfg = backends.make(name, idx, p.nprobe, ctx.threads, node=node,
                            layout=layout if name == "torch-cpu" else None, host_fixed_s=host.fixed_s,
                            base=ds.base if name.startswith("exact-") else None)
        ok, why = cfg.available()
        rows += _config_rows(cfg, ds, xq, ctx, base) if ok else [_not_run(base, name, why)]
    df = pd.DataFrame(rows)
    summary = records.summarize_runs(df[(df.phase == "measured") & (df.kind != "not_run")],
                                     ["dataset", "config", "source", "kind", "batch_size"], "latency_ms")
    return Result(
        records=df, summary=summary, dataset_id=f"{dataset} ({ds.id})", dataset_checksum=ds.checksum,
        method=_method(host, ctx),
        provenance={"fpga_node": node.__dict__, "fpga_host": host.__dict__, "llc_bytes": llc_bytes(),
                    "index": {"path": ctx.input("index"), "nlist": ivf.nlist, "m": ivf.pq.M, "nprobe": p.nprobe,
                              "k": p.k}})

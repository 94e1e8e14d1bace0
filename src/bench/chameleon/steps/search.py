"""Chameleon section 6.2, Figure 9: the ``search`` step. Latency per batch size x configuration (the
search back ends of ``system.backends``), recall@K over all queries, throughput (all queries in one
batch). fpga-* rows are modelled: measured index scan + the authors' per-batch host cost + the ChamVS
node model driven by the real probed-list lengths."""
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
from .inputs import PROTOCOL, fpga_node, host_path, load


def batches(xq: np.ndarray, bs: int, n: int, start: int = 0):
    nq = len(xq)
    for b in range(n):
        yield xq[(np.arange(bs) + start + b * bs) % nq]


def _timed_batches(cfg, xq, bs: int, p: Params, common: dict) -> list[dict]:
    nw = p.warmup_batches
    xbs = list(batches(xq, bs, nw + p.n_batches, start=bs))
    outs = [cfg.search(xb, p.k) for xb in xbs[:nw]]
    meter = EnergyMeter() if cfg.source == "measured" else None
    with meter if meter is not None else contextlib.nullcontext():
        outs += [cfg.search(xb, p.k) for xb in xbs[nw:]]
    e_q = (meter.joules / (p.n_batches * bs) * 1e3
           if meter is not None and meter.joules is not None else np.nan)
    rows = []
    for i, o in enumerate(outs):
        warm = i < nw
        rows.append({**common, "kind": "latency", "phase": "warmup" if warm else "measured", "batch_size": bs,
                     "run": i, "latency_ms": o.seconds * 1e3,
                     "coarse_ms": o.parts.get("coarse_s", np.nan) * 1e3,
                     "fpga_ms": o.parts.get("fpga_s", np.nan) * 1e3,
                     "host_fixed_ms": o.parts.get("host_fixed_s", np.nan) * 1e3,
                     "backend": o.parts.get("backend", cfg.name),
                     "energy_per_query_mj": np.nan if warm else e_q})
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


def _config_rows(cfg, ds, xq, p: Params, base: dict) -> list[dict]:
    """One configuration: recall over all queries (a warm-up of everything), every batch size, throughput."""
    cfg.check(xq, p.k)
    full = cfg.search(xq, p.k)
    common = {**base, "config": cfg.name, "source": cfg.source, "recall": recall_at_k(full.I, ds.gt_ids, p.k),
              "note": ""}
    rows = []
    for bs in p.batch_sizes:
        rows += _timed_batches(cfg, xq, bs, p, common)
    return rows + _throughput(cfg, xq, p.k, p.throughput_runs, common)


def _method(host) -> str:
    return (f"IVF-PQ search latency per batch: {PROTOCOL}. Throughput: all queries in one batch, "
            f"throughput_runs runs after one warm-up. fpga-* rows are MODELLED: measured index scan "
            f"plus the authors' per-batch host fixed cost ({host.fixed_s * 1e3:.3f} ms, calibrated on "
            f"their RALM-S batch-1 latencies) plus the performance model of a ChamVS memory node driven "
            f"by the real probed-list lengths. Configurations needing CUDA are recorded as not_run "
            f"without it.")


@step("search", needs=("manifest", "index"), keys=(
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
        rows += _config_rows(cfg, ds, xq, p, base) if ok else [_not_run(base, name, why)]
    df = pd.DataFrame(rows)
    summary = records.summarize_runs(df[(df.phase == "measured") & (df.kind != "not_run")],
                                     ["dataset", "config", "source", "kind", "batch_size"], "latency_ms")
    return Result(
        records=df, summary=summary, dataset_id=f"{dataset} ({ds.id})", dataset_checksum=ds.checksum,
        method=_method(host),
        provenance={"fpga_node": node.__dict__, "fpga_host": host.__dict__,
                    "index": {"path": ctx.input("index"), "nlist": ivf.nlist, "m": ivf.pq.M, "nprobe": p.nprobe,
                              "k": p.k}})

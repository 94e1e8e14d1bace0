"""Synthetic ESPN records (every kind :func:`bench.espn.claims.build` reads: e2e, batch, iops, hitrate,
quality, sizes), deterministic and fast, for the sensitivity test of what the paper fixed
(:func:`bench.core.judging.fidelity.sensitivity`).

The sizes and the build's metadata are built through the study's own model of its table: the paper's vector
widths (:data:`bench.espn.system.layout.PAPER_INPUTS`, section 3.1 and Table 3) give each record's bytes and
its 4/8 KiB block (:func:`bench.espn.system.layout.io_sizes_for`), and the synthetic filler's tokens per
passage (:data:`bench.espn.system.encoders.PAPER_INPUTS`, Table 3) its BOW vectors
(:func:`bench.espn.system.encoders.token_counts`); so scaling one of them moves the table, the ANN index,
the memory saved and equation 4's data per query as it would in a build. The timings are fixed draws that
no paper input enters (the study times them; it models none of them): three fresh processes of each timed
step, as the tiny profile runs them.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.measuring.records import Provenance
from .params import Params
from .paper_values import size_rows
from .system import encoders, layout
from .system.eq4 import ESPN_BATCH

N_REAL, N_FILLER, NLIST, PROCESSES, QUERIES = 4000, 24000, 256, 3, 12


def _table(seed: int = 0) -> dict:
    """The synthetic build's sizes: the collection's passages (20-60 BOW vectors each, from our encoder,
    not the paper) and the filler (the paper's tokens per passage), each record sized by the paper's widths."""
    rng = np.random.default_rng(seed)
    real = rng.integers(20, 61, N_REAL)
    tok = np.concatenate([real, encoders.token_counts(N_FILLER, rng)])
    io = layout.io_sizes_for(tok)
    tok = np.minimum(tok, np.where(io == 4096, layout.capacity(4096), layout.capacity(8192)))   # truncated
    d = layout.cls_dim()
    ann = len(tok) * (d * 4 + 8) + NLIST * d * 4   # IVF-Flat: fp32 CLS vectors and ids, the centroids
    return {"tok": tok, "io": io, "ann": float(ann), "table": float(io.sum()), "mean_io": float(io.mean())}


def _build(t: dict) -> dict:
    return {"encoder": "hash", "text_source": "synthetic/msmarco-like", "dataset": "synthetic", "n_real": N_REAL,
            "n_filler": N_FILLER, "n_docs": N_REAL + N_FILLER, "table_bytes": t["table"],
            "ann_index_bytes": t["ann"], "mean_io_size": t["mean_io"], "nlist": NLIST}


def _sizes(t: dict) -> pd.DataFrame:
    rows = []
    for scope, n in (("collection passages", N_REAL), ("all records", N_REAL + N_FILLER)):
        tok, rec = int(t["tok"][:n].sum()), float(t["io"][:n].sum())
        cls, bow = n * layout.cls_bytes(), tok * layout.tok_bytes()
        parts = {"cls": cls, "bow": bow, "padding": rec - cls - bow, "table_file": rec}
        if scope == "all records":
            parts.update(ann_index=t["ann"], offsets=n * 16.0)
        rows += [{"scope": scope, "collection": "msmarco-like", "part": k, "bytes": float(v), "n_passages": n,
                  "n_tokens": tok, "n_queries": QUERIES, "bytes_per_passage": float(v) / n, "source": "measured",
                  "where_in_paper": "", "index": "faiss IVF-Flat, nlist 256" if k == "ann_index" else ""}
                 for k, v in parts.items()]
    return pd.DataFrame(rows + size_rows())


def _tag(rows: list[dict], step: str) -> pd.DataFrame:
    """Rows as the step skeleton writes them: each with the fresh process it came from."""
    df = pd.DataFrame(rows)
    return df.assign(process_uid=[f"{step}-{p}" for p in df.process], machine_busy=False)


def _ms(kind: str, budget: str) -> float:
    """A back end's typical latency (ms) at a budget: mmap slows as the budget shrinks below the table."""
    if kind == "mmap":
        return 14.0 if float(budget) >= 1.0 else 48.0 / float(budget) ** 0.5
    return {"memory": 12.0, "direct": 50.0, "direct_prefetch": 40.0}[kind]


def _e2e_native(rng, params: Params) -> list[dict]:
    buds = [f"{b:.2f}" for b in params.memory_budgets]
    rows = []
    for p in range(PROCESSES):
        for b, k in [("unlimited", "memory")] + [(b, k) for b in buds for k in ("mmap", "direct", "direct_prefetch")]:
            ms = _ms(k, b)
            bound = k == "mmap" and b != "unlimited" and float(b) < 1.0
            for q in range(QUERIES):
                t = ms / 1e3 * rng.lognormal(0, 0.08)
                rows.append({"backend": k, "budget": b, "phase": "measured", "repeat": 0, "process": p,
                             "query_id": str(q), "total_s": t, "encode_s": 1e-3, "ann_s": 1e-3, "prefetch_wait_s": 0.0,
                             "crit_read_s": t / 2, "rerank_s": t / 2 - 2e-3, "status": "ok", "reason": "",
                             "source": "measured", "ssd": "native", "budget_bound": bound,
                             "failcnt_pass": 20000.0 if bound else 0.0, "reclaim_pass": 0.0, "device": "cpu",
                             "disk_name": "nvme0n1", "disk_model": "synthetic NVMe SSD", "disk_driver": "nvme",
                             "disk_rotational": False, "disk_queue_depth": 256, "disk_qd1_iops": 15000.0,
                             "disk_qd32_iops": 50000.0, "threads": f"threads of {k}"})
    return rows


def _e2e_emulated(rng, params: Params) -> list[dict]:
    lat = float(params.emulated_ssd.latencies_us[0])
    tag = {"ssd": "emulated", "ssd_emulation": "fuse-latency", "ssd_latency_us": lat, "ssd_threads": 32,
           "ssd_qd1_iops": 6000.0, "ssd_qd32_iops": 15000.0, "ssd_added_us": lat * 1.02, "ssd_read_us": lat + 65.0,
           "ssd_disk_read_us": 65.0, "ssd_wait_us": lat * 0.4, "ssd_calibrated": True, "source": "emulated",
           "device": "cpu"}
    rows = []
    for p in range(PROCESSES):
        for k, ms in (("mmap", 300.0), ("direct", 120.0), ("direct_prefetch", 100.0)):
            for q in range(QUERIES):
                t = ms / 1e3 * rng.lognormal(0, 0.08)
                rows.append({**tag, "backend": k, "budget": "0.50", "phase": "measured", "repeat": 0, "process": p,
                             "query_id": str(q), "total_s": t, "encode_s": 1e-3, "ann_s": 1e-3,
                             "prefetch_wait_s": 0.0, "crit_read_s": t / 2, "rerank_s": t / 2 - 2e-3, "status": "ok",
                             "reason": "", "budget_bound": k == "mmap", "failcnt_pass": 20000.0 if k == "mmap" else 0.0,
                             "reclaim_pass": 0.0})
    return rows


def _probes(rng, ssd: str, qd1: float, qd32: float, source: str, extra: dict) -> list[dict]:
    return [{"backend": "probe", "phase": "probe", "status": "ok", "reason": "", "ssd": ssd, "source": source,
             "probe_point": f"p{j}", "probe_pair": j, "process": j % PROCESSES, **extra,
             "probe_qd1_iops": qd1 * rng.lognormal(0, 0.04), "probe_qd32_iops": qd32 * rng.lognormal(0, 0.04)}
            for j in range(6 * PROCESSES)]


def _e2e(params: Params) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    emu = {"ssd_emulation": "fuse-latency", "ssd_latency_us": float(params.emulated_ssd.latencies_us[0]),
           "ssd_threads": 32}
    rows = _e2e_native(rng, params) + _e2e_emulated(rng, params)
    rows += _probes(rng, "native", 15000.0, 50000.0, "measured", {}) + _probes(rng, "emulated", 6000.0, 15000.0,
                                                                                "emulated", emu)
    return _tag(rows, "e2e")


def _batch(params: Params) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    rows = []
    for p in range(PROCESSES):
        budget = 6e-4 * rng.lognormal(0, 0.05)
        for mode, n in (("exact", params.k), ("partial", params.partial_rerank)):
            for B in params.batch_sizes:
                for rep in range(3):
                    for meth, v in (("memory", 1e-4 * B), ("direct (GDS stand-in)", 8e-4 * B),
                                    (ESPN_BATCH, 1.6e-4 * B * (1 + (B > 4) * 3))):
                        acc = v * n / 1000 * rng.lognormal(0, 0.08)
                        rows.append({"rerank": mode, "rerank_n": n, "batch": B, "repeat": rep, "process": p,
                                     "phase": "warmup" if rep == 0 else "measured", "method": meth,
                                     "access_s": acc, "prefetch_spill_s": 0.0, "maxsim_s": 1e-3 * B,
                                     "encode_s": 1e-4 * B, "ann_eta_s": 9e-4, "prefetch_budget_s": budget,
                                     "latency_model_s": 2e-3 + acc + 1.1e-3 * B,
                                     "throughput_model_qps": B / (2e-3 + acc + 1.1e-3 * B),
                                     "source": "emulated" if meth == ESPN_BATCH else "measured"})
    return _tag(rows, "batch")


def _iops(params: Params) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = [{"tool": "espn-reader", "engine": "threadpool", "qd": qd, "repeat": 0, "process": p,
             "iops": 15000.0 * (1 + (qd > 1) * 2.5) * rng.lognormal(0, 0.04), "status": "ok", "source": "measured",
             "reason": ""} for p in range(PROCESSES) for qd in params.iops_depths]
    rows.append({"tool": "fio", "engine": "psync", "qd": 1, "repeat": 0, "process": 0, "iops": np.nan,
                 "status": "not_run", "source": "not_run", "reason": "fio not installed"})
    return _tag(rows, "iops")


def _hitrate(params: Params) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    rows = []
    for corpus, docs, nl in (("full index", N_REAL + N_FILLER, NLIST), ("real passages only", N_REAL, 37)):
        for eta in params.hitrate_nprobe:
            used = max(1, round(eta * nl / NLIST))
            for step in params.prefetch_steps:
                for n in sorted({params.k, params.partial_rerank}):
                    for q in range(QUERIES):
                        rows.append({"corpus": corpus, "n_docs": docs, "nlist": nl, "nprobe": eta, "nprobe_used": used,
                                     "lists_frac": used / nl, "n_scanned": int(docs * used / nl), "step": step,
                                     "delta": max(1, round(used * step)), "rerank_n": n, "query_id": str(q),
                                     "hit_rate": min(1.0, 0.6 + step + rng.normal(0, 0.02)), "source": "measured"})
    return pd.DataFrame(rows).assign(machine_busy=False, process=0, process_uid="hitrate")


def _quality(params: Params) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    rows = [{"figure": "fig5", "nprobe": p, "rerank_n": 0, "repeat": r, "ann_time_s": 2e-6 * p, "warmup_s": 2e-6 * p,
             "recall@1000": min(1.0, 0.5 + 0.08 * np.log2(p)), "mrr@10": 0.6, "ndcg@10": 0.6}
            for p in params.nprobe_sweep for r in range(2)]
    for n in sorted({*params.rerank_counts, params.k}):
        per = np.clip(rng.uniform(0.3, 1.0, QUERIES) * (0.98 if n < 64 else 1.0), 0, 1)
        rows.append({"figure": "fig6", "nprobe": params.nprobe, "rerank_n": n, "repeat": 0, "mrr@10": float(per.mean()),
                     "ndcg@10": float(per.mean())})
        rows += [{"figure": "fig6-query", "nprobe": params.nprobe, "rerank_n": n, "repeat": 0, "query_id": str(q),
                  "mrr@10": float(v)} for q, v in enumerate(per)]
    df = pd.DataFrame(rows).assign(source="measured", machine_busy=False, process=0, process_uid="quality")
    ref = df[(df.figure == "fig6") & (df.rerank_n == params.k)]
    for col in ("mrr@10", "ndcg@10"):
        df[f"norm_{col}"] = np.where(df.figure == "fig6", df[col] / float(ref[col].iloc[0]), np.nan)
    return df


def records(params: Params) -> dict[str, pd.DataFrame]:
    """``{kind: rows}`` for every record kind the claims read, with the provenance the steps write (the
    build's metadata from the model of the table above)."""
    t = _table()
    prov = {"profile": "synthetic", "build": _build(t), "method": "synthetic records (bench.espn.synthetic)"}
    out = {"e2e": _e2e(params), "batch": _batch(params), "iops": _iops(params), "hitrate": _hitrate(params),
           "quality": _quality(params), "sizes": _sizes(t)}
    for df in out.values():
        df.attrs["provenance"] = Provenance(prov)
    return out

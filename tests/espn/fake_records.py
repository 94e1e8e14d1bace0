"""Small synthetic ESPN record sets (every kind the figures and claims read), written with provenance
as the steps write them. ``emulated``: "ok" (rows measured on the emulated SSD) or "not_run"."""
from __future__ import annotations

import numpy as np
import pandas as pd

from bench.core.measuring import records
from bench.espn.system.eq4 import ESPN_BATCH

BUILD = {"encoder": "hash", "text_source": "synthetic/msmarco-like", "dataset": "mm", "n_real": 4000,
         "n_filler": 24000, "n_docs": 28000, "table_bytes": 160_000_000, "ann_index_bytes": 14_000_000,
         "mean_io_size": 5000.0, "nlist": 256}
PROV = {"profile": "t", "build": BUILD, "method": "synthetic test records"}


def _e2e(rng, emulated: str) -> pd.DataFrame:
    med = {("memory", "unlimited"): 0.02, ("mmap", "0.25"): 0.12, ("mmap", "0.50"): 0.075,
           ("direct", "0.25"): 0.04, ("direct", "0.50"): 0.04, ("direct_prefetch", "0.25"): 0.03,
           ("direct_prefetch", "0.50"): 0.03}
    rows = []
    for (k, b), v in med.items():
        for rep in range(2):   # one measured pass in each of two fresh processes of the step
            for q in range(20):
                t = v * rng.lognormal(0, 0.05)
                bound = b != "unlimited" and k == "mmap"   # the O_DIRECT back ends' caps do not bind
                rows.append({"backend": k, "budget": b, "phase": "measured", "repeat": 0, "process": rep,
                             "query_id": str(q), "total_s": t, "encode_s": 0.001, "ann_s": 0.004,
                             "prefetch_wait_s": 0.0, "crit_read_s": t / 2, "rerank_s": t / 2 - 0.005, "status": "ok",
                             "reason": "", "source": "measured", "ssd": "native", "ssd_read_iops": np.nan,
                             "cgroup_max_usage_bytes": (190e6 if b == "unlimited" else 20e6) + 0.1e6 * rep,
                             "machine_busy": False, "budget_bound": bound, "failcnt_pass": 5 if bound else 0,
                             "disk_name": "vda", "disk_model": "no model reported (virtio_blk)",
                             "disk_rotational": True, "disk_queue_depth": 256, "disk_qd1_iops": 27000.0,
                             "disk_qd32_iops": 120000.0, "threads": f"threads of {k}"})
    for k in ("mmap", "direct", "direct_prefetch"):
        base = {"backend": k, "budget": "0.50", "phase": "measured", "ssd": "emulated", "ssd_read_iops": np.nan,
                "ssd_emulation": "fuse-latency", "ssd_latency_us": 100.0, "ssd_threads": 32,
                "ssd_qd1_iops": 4000.0, "ssd_qd32_iops": 60000.0, "machine_busy": False, "budget_bound": True,
                "failcnt_pass": 7}
        if emulated != "ok":
            rows.append({**base, "status": "not_run", "reason": "emulated SSD: needs a tool we lack: not root",
                         "source": "not_run"})
            continue
        for q in range(40):  # direct and direct+prefetch overlap widely: a ratio within noise
            t = {"mmap": 0.4, "direct": 0.05, "direct_prefetch": 0.05}[k] * rng.uniform(0.5, 1.5)
            rows.append({**base, "repeat": 0, "process": q // 20, "query_id": str(q % 20), "total_s": t,
                         "encode_s": 0.001, "ann_s": 0.004, "prefetch_wait_s": 0.0, "crit_read_s": t / 2,
                         "rerank_s": t / 2 - 0.005, "status": "ok", "reason": "", "source": "emulated",
                         "budget_bound": k == "mmap"})
    rows += probe_rows(rng, "native", 27000.0, 135000.0, "measured")
    if emulated == "ok":
        rows += [{**r, "ssd_emulation": "fuse-latency", "ssd_latency_us": 100.0, "ssd_threads": 32}
                 for r in probe_rows(rng, "emulated", 4000.0, 60000.0, "emulated")]
    rows.append({"backend": "vm_swap", "budget": "0.50", "phase": "measured", "status": "not_run",
                 "reason": "no swap space on this machine", "source": "not_run", "ssd": "native", "machine_busy": False})
    return pd.DataFrame(rows)


def probe_rows(rng, ssd: str, qd1: float, qd32: float, source: str, pairs: int = 10, processes: int = 2,
               busy: bool = False) -> list[dict]:
    """QD1/QD32 probe pairs (phase probe) as the e2e step writes them, spread over ``processes``."""
    return [{"backend": "probe", "phase": "probe", "status": "ok", "reason": "", "ssd": ssd, "source": source,
             "probe_point": f"p{j}", "probe_pair": j, "process": j % processes, "machine_busy": busy,
             "probe_qd1_iops": qd1 * rng.lognormal(0, 0.05), "probe_qd32_iops": qd32 * rng.lognormal(0, 0.05)}
            for j in range(pairs)]


def _batch(rng) -> pd.DataFrame:
    rows = []
    for mode, n in (("exact", 100), ("partial", 16)):
        for B in (1, 2, 4, 8, 16):
            for rep in range(4):
                for meth, v in (("memory", 1e-4 * B), ("direct (GDS stand-in)", 8e-4 * B),
                                (ESPN_BATCH, 1.5e-4 * B * (1 + (B > 4) * 3))):
                    acc = v * rng.lognormal(0, 0.1)
                    rows.append({"rerank": mode, "rerank_n": n, "batch": B, "repeat": rep,
                                 "phase": "warmup" if rep == 0 else "measured", "method": meth, "access_s": acc,
                                 "prefetch_spill_s": 0.0, "maxsim_s": 1e-3 * B, "encode_s": 1e-4 * B,
                                 "ann_eta_s": 2e-3, "prefetch_budget_s": 1.2e-3, "delta": 3, "eta": 8,
                                 "latency_model_s": 2e-3 + acc + 1.1e-3 * B,
                                 "throughput_model_qps": B / (2e-3 + acc + 1.1e-3 * B),
                                 "source": "emulated" if meth.startswith("ESPN") else "measured",
                                 "machine_busy": False})
    return pd.DataFrame(rows)


def _iops() -> pd.DataFrame:
    rows = []
    for qd in (1, 32):
        for rep in range(2):
            rows.append({"tool": "espn-reader", "engine": "threadpool", "qd": qd, "repeat": rep,
                         "iops": 15000.0 * (1 + (qd > 1) * 3) + rep * 100, "status": "ok", "source": "measured"})
            if qd > 1:
                rows.append({"tool": "espn-reader", "engine": "aio", "qd": qd, "repeat": rep, "iops": 50000.0,
                             "status": "ok", "source": "measured"})
            rows.append({"tool": "fio", "engine": "psync" if qd == 1 else "io_uring", "qd": qd, "repeat": rep,
                         "iops": 18000.0 * (1 + (qd > 1) * 3.5) - rep * 100, "status": "ok", "source": "measured"})
    return pd.DataFrame(rows).assign(machine_busy=False)


def _hitrate(rng) -> pd.DataFrame:
    rows = []
    for corpus, docs in (("full index", 28000), ("real passages only", 4000)):
        for eta in (32, 96):
            for step in (0.05, 0.1, 0.3, 0.5):
                for n in (16, 100):
                    for q in range(10):
                        hr = min(1.0, 0.65 + step + rng.normal(0, 0.02))
                        rows.append({"corpus": corpus, "n_docs": docs, "nlist": 256 if docs > 5000 else 37,
                                     "nprobe": eta, "nprobe_used": eta, "step": step, "delta": 3, "rerank_n": n,
                                     "query_id": str(q), "hit_rate": hr, "source": "measured"})
    return pd.DataFrame(rows).assign(machine_busy=False)


def _quality(rng) -> pd.DataFrame:
    rows = [{"figure": "fig5", "nprobe": p, "rerank_n": 0, "repeat": r, "ann_time_s": 1e-4 * p,
             "warmup_s": 1e-4 * p, "recall@1000": min(1, 0.5 + 0.1 * np.log2(p)), "mrr@10": 0.3, "ndcg@10": 0.35}
            for p in (2, 4, 8, 16) for r in range(2)]
    for n in (16, 64, 100):
        per = np.clip(rng.uniform(0.1, 1.0, 30) * (0.97 if n == 16 else 1.0), 0, 1)
        rows.append({"figure": "fig6", "nprobe": 8, "rerank_n": n, "repeat": 0, "mrr@10": float(per.mean()),
                     "ndcg@10": float(per.mean()) * 1.1})
        rows += [{"figure": "fig6-query", "nprobe": 8, "rerank_n": n, "repeat": 0, "query_id": str(q),
                  "mrr@10": float(v)} for q, v in enumerate(per)]
    df = pd.DataFrame(rows).assign(source="measured", machine_busy=False)
    ref = df[(df.figure == "fig6") & (df.rerank_n == 100)]
    for col in ("mrr@10", "ndcg@10"):
        df[f"norm_{col}"] = np.where(df.figure == "fig6", df[col] / float(ref[col].iloc[0]), np.nan)
    return df


def _sizes() -> pd.DataFrame:
    """Sizes as the step writes them: 4000 collection passages of 40 BOW vectors, 28000 records in all."""
    from bench.espn.steps.sizes import paper_rows

    rows = []
    for scope, n, tok in (("collection passages", 4000, 160_000), ("all records", 28000, 1_760_000)):
        rec = n * 5000
        parts = {"cls": n * 256, "bow": tok * 64, "table_file": rec, "padding": rec - n * 256 - tok * 64}
        if scope == "all records":
            parts.update(ann_index=14_700_000, offsets=450_000)
        rows += [{"scope": scope, "collection": "mm", "part": k, "bytes": float(v), "n_passages": n, "n_tokens": tok,
                  "n_queries": 50, "bytes_per_passage": v / n, "source": "measured", "where_in_paper": "",
                  "index": "faiss IVF-Flat, nlist 256" if k == "ann_index" else ""}
                 for k, v in parts.items()]
    return pd.DataFrame(rows + paper_rows()).assign(machine_busy=False)


def write_all(folder, emulated: str = "ok") -> dict[str, list]:
    """``{kind: [path]}`` for every record kind, in ``folder``."""
    rng = np.random.default_rng(0)
    frames = {"e2e": _e2e(rng, emulated), "batch": _batch(rng), "iops": _iops(), "hitrate": _hitrate(rng),
              "quality": _quality(rng), "sizes": _sizes()}
    out = {}
    for kind, df in frames.items():
        path = folder / f"{kind}.parquet"
        records.write(path, df, PROV)
        out[kind] = [path]
    return out


PARAMS_OVERRIDES = {"k": 100, "nprobe": 96, "partial_rerank": 64, "rerank_counts": [16, 64, 100],
                    "iops_depths": [1, 32], "emulated_ssd": {"enabled": True, "latencies_us": [100]}}

"""ESPN measurements: each function is one pipeline step and writes one record set.

build (encode, table, ANN index) -> quality (Figures 5, 6) | hitrate (Figure 7) | e2e (Tables 4/5,
Figure 1; one worker process per memory budget) | batch (Figures 8, 9, 10, equation 4) | iops (reader
vs fio) -> summary (targets). Wall-clock timers from bench.core.measure; warm-up reported apart;
cold page cache before each measured run.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..core import measure, provenance, records
from ..core.atomic import write_text
from ..core.errors import ConfigError
from . import aio, ann, backends, encoders, layout, memory
from . import paper_values as PV
from .errors import BackendUnavailable, EncoderUnavailable, PrefetchConfigError
from .maxsim import resolve_device
from .pipeline import Retriever

# ----------------------------------------------------------------------------- build artefacts


def set_threads(threads: int, params: dict) -> None:
    """faiss/BLAS threads as given; torch intra-op threads for MaxSim from ``maxsim_threads`` (1 by
    default: on 2 cores the prefetch thread, the I/O threads and the main thread already share them)."""
    measure.set_threads(threads)
    import torch

    torch.set_num_threads(int(params.get("maxsim_threads", 1)))


def paths(build_dir: str | os.PathLike) -> dict[str, Path]:
    b = Path(build_dir)
    return {"table": b / "table.espn", "ann": b / "ann.faiss", "queries": b / "queries.npz",
            "encoder": b / "encoder.state", "meta": b / "meta.json"}


def check_params(p: dict) -> None:
    """Bad input, before anything is measured."""
    eta = int(p["nprobe"])
    for step in [p["prefetch_step"], *p["prefetch_steps"]]:
        ann.check_delta(ann.delta_for(eta, step), eta)
        if not 0 < step <= 1:
            raise PrefetchConfigError(f"prefetch step {step} outside (0, 1]")
    if "prefetch_delta" in p and p["prefetch_delta"] is not None:
        ann.check_delta(int(p["prefetch_delta"]), eta)
    for b in p["batch_sizes"]:
        if int(b) < 1:
            raise ConfigError(f"batch size must be >= 1, got {b}")
    if max(p["rerank_counts"]) > p["k"] or p["partial_rerank"] > p["k"]:
        raise ConfigError(f"re-rank counts must be <= K ({p['k']})")


def build(manifest: str, params: dict, out_dir: str, seed: int, threads: int) -> dict:
    from ..data import prepared

    check_params(params)
    set_threads(threads, params)
    import torch

    torch.set_num_threads(threads)  # building is not measured: the encoder gets every thread
    ds = prepared.load_text(manifest)
    empty = encoders.check_passages(ds.doc_ids, ds.docs, params["empty_passages"] == "encode")
    name = params["encoder"]
    fallback_reason = None
    try:
        enc = encoders.make_encoder(name, seed=seed)
    except EncoderUnavailable as exc:
        if not params.get("encoder_fallback"):
            raise
        fallback_reason = str(exc)
        name = params["encoder_fallback"]
        enc = encoders.make_encoder(name, seed=seed)
    t0 = time.perf_counter()
    enc.fit(ds.docs)
    cls, bows = enc.encode_docs(ds.docs)
    t_docs = time.perf_counter() - t0
    t0 = time.perf_counter()
    qc, qt = enc.encode_queries(ds.queries)
    t_q = time.perf_counter() - t0
    n_fill = int(params["filler_passages"])
    p = paths(out_dir)
    p["table"].parent.mkdir(parents=True, exist_ok=True)
    w = layout.TableWriter(p["table"], params["block_mode"])
    w.add(cls, bows)
    all_cls = [cls]
    for s, e in layout.iter_chunks(n_fill, 20000):
        fc, fb = encoders.synthetic_filler(e - s, seed + 7 + s, cls, spread=params["filler_spread"])
        w.add(fc, fb)
        all_cls.append(fc)
    off = w.close()
    x = np.concatenate(all_cls).astype(np.float32)
    ix = params["index"]
    index = ann.build(x, ix["kind"], ix["nlist"], ix.get("m", 16), ix.get("nbits", 8), seed=seed,
                      train_size=ix.get("train_size"))
    ann.save(index, p["ann"])
    enc.save(p["encoder"])
    lens = np.array([len(t) for t in qt], np.int64)
    with open(p["queries"], "wb") as fh:
        np.savez(fh, cls=qc.astype(np.float32), tok=np.concatenate(qt).astype(np.float32), lens=lens,
                 query_ids=np.array(ds.query_ids))
    meta = {"dataset": ds.id, "dataset_checksum": ds.checksum, "encoder": name,
            "encoder_requested": params["encoder"], "encoder_fallback_reason": fallback_reason,
            "encoder_source": getattr(enc, "source", "measured"),
            "n_real": len(ds.doc_ids), "n_filler": n_fill, "n_docs": len(off), "n_empty": len(empty),
            "n_truncated": off.n_truncated, "table_bytes": off.file_size, "mean_io_size": off.mean_io_size,
            "ann_index_bytes": ann.index_bytes(index), "nlist": int(index.nlist),
            "encode_docs_s": t_docs, "encode_docs_per_s": len(ds.docs) / max(t_docs, 1e-9),
            "encode_queries_s": t_q, "manifest": str(manifest), "doc_ids": list(ds.doc_ids), "seed": seed}
    write_text(p["meta"], json.dumps(meta))
    return meta


def load_build(build_dir):
    p = paths(build_dir)
    meta = json.loads(p["meta"].read_text())
    off = layout.load_offsets(p["table"])  # validates offsets against the table
    if len(off) != meta["n_docs"]:
        raise layout.LayoutError(f"{p['table']}: {len(off)} records but the build says {meta['n_docs']}")
    index = ann.load(p["ann"])
    if index.ntotal != len(off):
        raise layout.LayoutError(f"ANN index holds {index.ntotal} vectors but the table {len(off)} records")
    with np.load(p["queries"]) as z:
        qc, tok, lens, qids = z["cls"], z["tok"], z["lens"], [str(q) for q in z["query_ids"]]
    qt = np.split(tok, np.cumsum(lens)[:-1])
    return meta, off, index, qc, qt, qids


def _prov(profile, params, seed, meta, method, extra=None):
    return provenance.collect(profile=profile, config=params, seed=seed, dataset_id=meta["dataset"],
                              dataset_checksum=meta.get("dataset_checksum"), method=method,
                              extra={"build": {k: v for k, v in meta.items() if k != "doc_ids"}, **(extra or {})})


def _qrels(manifest):
    from ..data import prepared

    return prepared.load_text(manifest).qrels


def _run_df(rankings, qids, doc_ids, n_real):
    rows = []
    for qid, r in zip(qids, rankings):
        r = r[r >= 0]
        for rank, d in enumerate(r):
            did = doc_ids[d] if d < n_real else f"synthetic-{d}"
            rows.append((qid, did, float(len(r) - rank)))
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def _evaluate(run: pd.DataFrame, qrels: pd.DataFrame) -> dict[str, float]:
    import ir_measures
    from ir_measures import MRR, R, nDCG

    q = qrels.astype({"query_id": str, "doc_id": str}).copy()
    q["relevance"] = q["relevance"].astype(int)
    agg = ir_measures.calc_aggregate([MRR @ 10, nDCG @ 10, R(rel=1) @ 1000], q, run)
    return {"mrr@10": float(agg[MRR @ 10]), "ndcg@10": float(agg[nDCG @ 10]),
            "recall@1000": float(agg[R(rel=1) @ 1000])}


# ----------------------------------------------------------------------------- quality: Figures 5, 6


def quality(build_dir, manifest, params, out, profile, seed, threads):
    check_params(params)
    set_threads(threads, params)
    meta, off, index, qc, qt, qids = load_build(build_dir)
    prov = _prov(profile, params, seed, meta, "Figure 5: recall@1000 of the CLS candidate list (ir_measures "
                 "over the qrels) and per-query ANN time (wall clock, median of repeats after warm-up) vs "
                 "nprobe. Figure 6: MRR@10/nDCG@10 after MaxSim re-ranking of the top n candidates (rest by "
                 "CLS score), normalised by n = K. Embeddings read from memory.")
    qrels = _qrels(manifest)
    doc_ids, n_real, K = meta["doc_ids"], meta["n_real"], params["k"]
    rows = []
    for nprobe in params["nprobe_sweep"]:
        if nprobe > index.nlist:
            continue
        D, I = ann.search(index, qc, nprobe, K)
        run = _run_df([i for i in I], qids, doc_ids, n_real)
        m = _evaluate(run, qrels)
        tm = measure.repeat(lambda: [ann.search(index, qc[i:i + 1], nprobe, K) for i in range(len(qc))],
                            repeats=params["repeats"], warmup=1)
        per_q = [t / len(qc) for t in tm.runs]
        for r, v in enumerate(per_q):
            rows.append({"figure": "fig5", "nprobe": nprobe, "rerank_n": 0, "repeat": r,
                         "ann_time_s": v, "warmup_s": tm.warmup[0] / len(qc), **m, "source": "measured"})
    store = backends.MemoryStore(paths(build_dir)["table"], off)
    eta = min(params["nprobe"], index.nlist)
    device = resolve_device(params["device"])
    for n in params["rerank_counts"]:
        r = Retriever(index, store, K, eta, n, None, device, params["bow_weight"], params["prefetch_chunk"])
        ranks = [r.run(qc[i:i + 1], [qt[i]]).rankings[0] for i in range(len(qc))]
        m = _evaluate(_run_df(ranks, qids, doc_ids, n_real), qrels)
        rows.append({"figure": "fig6", "nprobe": eta, "rerank_n": n, "repeat": 0, "ann_time_s": np.nan,
                     "warmup_s": np.nan, **m, "source": "measured"})
    store.close()
    df = pd.DataFrame(rows)
    f6 = df[df.figure == "fig6"]
    base = f6.loc[f6.rerank_n == f6.rerank_n.max()]
    for col in ("mrr@10", "ndcg@10"):
        ref = float(base[col].iloc[0]) if len(base) else np.nan
        df[f"norm_{col}"] = np.where(df.figure == "fig6", df[col] / ref if ref else np.nan, np.nan)
    summ = records.summarize_runs(df[df.figure == "fig5"], ["nprobe"], "ann_time_s")
    records.write(out, df, prov, summ)


# ----------------------------------------------------------------------------- hit rate: Figure 7


def hitrate(build_dir, params, out, profile, seed, threads):
    check_params(params)
    set_threads(threads, params)
    meta, off, index, qc, qt, qids = load_build(build_dir)
    prov = _prov(profile, params, seed, meta, "Figure 7: prefetcher hit rate = fraction of the final top-n "
                 "candidates (after eta lists) already in the approximate top-n after delta = step x eta "
                 "lists (search_preassigned); per query. Prefetch budget (equation 2) = ANN time(eta) - "
                 "ANN time(delta), wall clock, medians over queries. corpus = 'full index' (every record) or, "
                 "when the table has synthetic filler, 'real passages only' (an index of the collection's "
                 "passages alone: nlist scaled by n_real / n_docs, nprobe by the same factor).")
    rows = []
    K = params["k"]
    indexes = [("full index", index, 1.0)]
    n_real, n_docs = int(meta["n_real"]), int(meta["n_docs"])
    if meta.get("n_filler", 0) and n_real >= 2 * 39:
        # Synthetic filler records sit close to the real passages, so a full-index hit rate says more
        # about the generator than about the collection: measure it on the real passages alone too, with
        # the same list size (nlist scaled by n_real / n_docs) and the same fraction of lists probed.
        real_cls = _real_cls(build_dir, off, n_real)
        ix = params["index"]
        nl = max(1, round(index.nlist * n_real / n_docs))
        ridx = ann.build(real_cls, ix["kind"], nl, ix.get("m", 16), ix.get("nbits", 8), seed=seed)
        indexes.append(("real passages only", ridx, ridx.nlist / index.nlist))
    for corpus, idx, scale in indexes:
        seen = set()
        for eta_full in params["hitrate_nprobe"]:
            eta = round(eta_full * scale)
            if corpus != "full index":  # probe enough lists to hold 2K candidates at least
                eta = max(eta, int(np.ceil(2 * K * idx.nlist / max(idx.ntotal, 1))))
            eta = max(1, min(eta, idx.nlist))
            if eta in seen:  # two nprobe values that scale to the same lists: measured once
                continue
            seen.add(eta)
            for step in params["prefetch_steps"]:
                delta = ann.delta_for(eta, step)
                (Da, Ia), (D, I) = ann.staged(idx, qc, eta, delta, K)
                for n in sorted({K, params["partial_rerank"]}):
                    hr = ann.hit_rate(Ia[:, :n], I[:, :n])
                    for q, h in zip(qids, hr):
                        rows.append({"corpus": corpus, "n_docs": idx.ntotal, "nlist": idx.nlist,
                                     "nprobe": eta_full, "nprobe_used": eta, "step": step, "delta": delta,
                                     "rerank_n": n, "query_id": q, "hit_rate": float(h), "source": "measured"})
    df = pd.DataFrame(rows)
    records.write(out, df, prov, records.summarize_runs(df, ["corpus", "nprobe", "step", "rerank_n"], "hit_rate"))


def _real_cls(build_dir, off, n_real: int) -> np.ndarray:
    """The CLS vectors (fp16 in the table) of the first ``n_real`` records, the collection's passages."""
    with backends.MmapStore(paths(build_dir)["table"], off) as st:
        parts = [st.read(np.arange(s, e))[0].astype(np.float32) for s, e in layout.iter_chunks(n_real, 20000)]
    return np.concatenate(parts)


# ----------------------------------------------------------------------------- e2e: Tables 4/5, Figure 1

E2E_METHOD = ("End-to-end latency per query (wall clock): live query encoding, ANN (coarse + "
              "search_preassigned), prefetch wait, critical-path embedding reads, re-ranking. Each "
              "configuration runs in its own process; memory budgets enforced by the mechanism in the "
              "`mechanism` column; the table is evicted from the page cache (posix_fadvise DONTNEED, "
              "MADV_DONTNEED for mmap) before each measured run; warm-up queries reported apart (phase). "
              "Rows with ssd = emulated ran on an emulated slower SSD: the worker joined a cgroup v1 blkio "
              "cgroup capping reads from the table's disk (blkio.throttle.read_iops_device, ssd_read_iops); "
              "their source is emulated and they are reported apart from the native rows.")


def e2e(build_dir, params, out, profile, seed, threads):
    check_params(params)
    set_threads(threads, params)
    meta, off, index, qc, qt, qids = load_build(build_dir)
    table_bytes, ann_bytes = meta["table_bytes"], meta["ann_index_bytes"]
    headroom = int(params["cgroup_headroom_mib"] * 2**20)
    budgets = [memory.plan(table_bytes, ann_bytes, frac=f, headroom_bytes=headroom) for f in params["memory_budgets"]]
    budgets += [memory.plan(table_bytes, ann_bytes, total_bytes=int(m * 2**20), headroom_bytes=headroom)
                for m in params["memory_budgets_mib"]]
    ok, why = memory.cgroup_v1_available()
    mech = "cgroup-v1" if ok and params["budget_mechanism"] in ("auto", "cgroup") else "fadvise-evict"
    if params["budget_mechanism"] == "cgroup" and not ok:
        raise BackendUnavailable(f"budget_mechanism: cgroup requested but unavailable ({why})")
    prov = _prov(profile, params, seed, meta, E2E_METHOD,
                 {"budget_mechanism": mech, "cgroup_unavailable_reason": None if ok else why,
                  "worker_env": MALLOC_ENV})
    frames = []
    unavailable = {}
    if not backends.swap_available():
        unavailable["vm_swap"] = "no swap space on this machine"
    if not backends.gds_available():
        unavailable["gds"] = "GPUDirect Storage needs kvikio and CUDA"
    kinds = [k for k in params["backends"] if k not in unavailable]
    configs = [("unlimited", None, ["memory"])] + [(f"{b['budget_frac']:.2f}", b, kinds) for b in budgets]
    for label, b, ks in configs:
        if ks:
            frames.append(_spawn_worker(build_dir, params, label, b, ks, mech, seed, threads))
    frames += _emulated_ssd(build_dir, params, table_bytes, ann_bytes, headroom, unavailable, mech, seed,
                            threads)
    for k in dict.fromkeys([*params["backends"], *params["report_not_run"]]):
        if k in unavailable:
            frames.append(pd.DataFrame([{"backend": k, "budget": f"{b['budget_frac']:.2f}", **b,
                                         "phase": "measured", "status": "not_run", "reason": unavailable[k],
                                         "source": "not_run", "mechanism": mech} for b in budgets]))
    df = pd.concat(frames, ignore_index=True)
    if "ssd" not in df:
        df["ssd"] = "native"
    df["ssd"] = df["ssd"].fillna("native")
    m = df[(df.phase == "measured") & (df.status == "ok")]
    summ = records.summarize_runs(m, ["ssd", "backend", "budget"], "total_s") if len(m) else None
    records.write(out, df, prov, summ)


def emulated_ssd_params(params) -> dict:
    """The ``emulated_ssd`` section with its defaults (off unless enabled)."""
    e = dict(params.get("emulated_ssd") or {})
    return {"enabled": bool(e.get("enabled", False)), "read_iops": int(e.get("read_iops", 20000)),
            "budgets": list(e.get("budgets", [0.5])),
            "backends": list(e.get("backends", ["mmap", "direct", "direct_prefetch"]))}


def _emulated_ssd(build_dir, params, table_bytes, ann_bytes, headroom, unavailable, mech, seed, threads):
    """Optional extra configurations on an emulated slower SSD: the worker joins a cgroup v1 blkio
    cgroup whose ``blkio.throttle.read_iops_device`` caps reads from the table's disk (as root). Rows
    carry ``ssd = emulated`` and ``source = emulated``; where the throttle is unavailable they are
    recorded as not run."""
    e = emulated_ssd_params(params)
    if not e["enabled"]:
        return []
    budgets = [memory.plan(table_bytes, ann_bytes, frac=f, headroom_bytes=headroom) for f in e["budgets"]]
    kinds = [k for k in e["backends"] if k not in unavailable]
    ok, why = memory.blkio_available(paths(build_dir)["table"])
    tag = {"ssd": "emulated", "ssd_read_iops": e["read_iops"]}
    if not ok:
        return [pd.DataFrame([{"backend": k, "budget": f"{b['budget_frac']:.2f}", **b, **tag, "phase": "measured",
                               "status": "not_run", "reason": f"emulated SSD: {why}", "source": "not_run",
                               "mechanism": mech} for b in budgets for k in e["backends"]])]
    frames = []
    for b in budgets:
        if kinds:
            f = _spawn_worker(build_dir, params, f"{b['budget_frac']:.2f}", b, kinds, mech, seed, threads,
                              blkio_iops=e["read_iops"])
            frames.append(f.assign(**tag))
    return frames


# glibc in every e2e worker: two arenas, and fixed (not self-adjusting) thresholds high enough that the
# per-query temporaries (decoded records, MaxSim operands: up to ~16 MB) are recycled from the heap. A
# 64 KiB mmap threshold (the first choice, to return freed buffers to the kernel at once) made every such
# array a fresh mapping with a page fault per 4 KiB: it slowed decode + MaxSim 2.5x in every configuration.
# The heap this keeps is charged to the cap; the headroom covers it (cgroup_max_usage_bytes is recorded).
MALLOC_ENV = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
              "MALLOC_TRIM_THRESHOLD_": str(64 << 20)}


def _spawn_worker(build_dir, params, label, budget, kinds, mech, seed, threads,
                  blkio_iops: int | None = None) -> pd.DataFrame:
    with tempfile.TemporaryDirectory(prefix="espn-worker-") as td:
        outp = Path(td) / "rows.parquet"
        cmd = [sys.executable, "-m", "bench", "espn", "e2e-worker", "--build", str(build_dir),
               "--params", json.dumps(params), "--budget", json.dumps(budget), "--label", label,
               "--kinds", ",".join(kinds), "--mechanism", mech, "--seed", str(seed),
               "--threads", str(threads), "--out", str(outp)]
        if blkio_iops:
            cmd += ["--blkio-iops", str(int(blkio_iops))]
        # glibc: few arenas and a fixed mmap threshold, so freed per-query buffers go back to the
        # kernel instead of accumulating as anonymous memory charged to the cap (recorded).
        env = {**os.environ, **MALLOC_ENV}
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as worker:
            stdout, stderr = worker.communicate()
        memory.remove_worker_cgroups(worker.pid)  # an OOM-killed worker cannot remove its own cap
        proc = subprocess.CompletedProcess(cmd, worker.returncode, stdout, stderr)
        if proc.returncode == 0 and outp.exists():
            return pd.read_parquet(outp)
        reason = "OOM-killed under the memory cap" if proc.returncode in (137, -9) else \
            f"worker failed (rc {proc.returncode}): {proc.stderr.strip()[-300:]}"
        sys.stderr.write(proc.stderr)
        return pd.DataFrame([{"backend": k, "budget": label, **(budget or {}), "phase": "measured",
                              "status": "failed", "reason": reason, "source": "not_run", "mechanism": mech}
                             for k in kinds])


def e2e_worker(build_dir, params, budget, label, kinds, mech, seed, threads, out, blkio_iops=None):
    """One memory configuration, in its own process: loads everything, then joins the cap (and, for
    an emulated slower SSD, the blkio throttle)."""
    set_threads(threads, params)
    meta, off, index, qc, qt, qids = load_build(build_dir)
    p = paths(build_dir)
    enc = encoders.load_encoder(meta["encoder"], p["encoder"])
    ds_queries = _query_texts(build_dir, meta)
    device = resolve_device(params["device"])
    nq = min(params["e2e_queries"], len(qids))
    K, eta, n = params["k"], min(params["nprobe"], index.nlist), params["k"]
    rows = []
    cap = None
    if budget is not None and mech == "cgroup-v1":
        cap = memory.CgroupCap(budget["budget_embedding_bytes"] + budget["headroom_bytes"],
                               name=f"bench-espn-{os.getpid()}")
    emb_budget = budget["budget_embedding_bytes"] if budget else None
    bg_engine = prefetch_engine(params)
    throttle = memory.BlkioThrottle(p["table"], blkio_iops, name=f"bench-espn-blkio-{os.getpid()}") \
        if blkio_iops else None
    ssd = {"ssd": "emulated" if throttle else "native",
           "ssd_read_iops": float(blkio_iops) if throttle else np.nan}

    def one_backend(kind):
        step = params["prefetch_step"] if kind == "direct_prefetch" else None
        store = backends.open_store("direct" if kind == "direct_prefetch" else kind, p["table"], off,
                                    depth=params["io_depth"], engine=params["io_engine"],
                                    background_engine=bg_engine if kind == "direct_prefetch" else None)
        r = Retriever(index, store, K, eta, n, step, device, params["bow_weight"], params["prefetch_chunk"])

        def query(i):
            t0 = time.perf_counter()
            c, t = enc.encode_queries([ds_queries[i]])
            enc_s = time.perf_counter() - t0
            res = r.run(c, t)
            return enc_s, res

        evictions = 0
        for phase, reps in (("warmup", params["warmup"]), ("measured", params["repeats"])):
            for rep in range(reps):
                store.cold()
                if cap is not None:
                    cap.reset_peak()
                for i in range(nq):
                    enc_s, res = query(i)
                    if emb_budget is not None and mech == "fadvise-evict" and kind != "memory":
                        if backends.resident_bytes(p["table"]) > emb_budget:
                            store.cold()
                            evictions += 1
                    tm = res.timings
                    rows.append({"backend": kind, "budget": label, **(budget or {}), "phase": phase,
                                 "repeat": rep, "query_id": qids[i], "encode_s": enc_s,
                                 **{f"{k}_s": v for k, v in tm.items() if k != "total"},
                                 "total_s": enc_s + tm["total"], "hits": res.hits, "needed": res.needed,
                                 "hit_rate": res.hits / res.needed if step else np.nan,
                                 "n_crit_reads": res.extra["n_crit_reads"],
                                 "n_prefetch_reads": res.extra["n_prefetch_reads"], "status": "ok",
                                 "reason": "", "source": "emulated" if throttle is not None else
                                 "measured" if mech == "cgroup-v1" or budget is None else "emulated",
                                 "mechanism": mech if budget else "none", **ssd,
                                 "prefetch_engine": (bg_engine or backends._pick_engine(params["io_engine"]))
                                 if step else "",
                                 "device": device, "encoder": meta["encoder"]})
                extra = {"resident_table_bytes": backends.resident_bytes(p["table"]),
                         "fadvise_evictions": evictions, **(cap.stats() if cap is not None else {})}
                for row in rows[-nq:]:
                    row.update(extra)
        store.close()

    if cap is not None:
        # initialise lazily allocated state (torch, thread pools, malloc arenas) outside the cap
        for k in kinds:
            st = backends.open_store("direct" if k == "direct_prefetch" else k, p["table"], off,
                                     depth=params["io_depth"], engine=params["io_engine"],
                                     background_engine=bg_engine if k == "direct_prefetch" else None)
            r = Retriever(index, st, K, eta, n, params["prefetch_step"] if k == "direct_prefetch" else None,
                          device, params["bow_weight"], params["prefetch_chunk"])
            for i in range(min(2, nq)):
                r.run(*enc.encode_queries([ds_queries[i]]))
            st.cold()
            st.close()
    with contextlib.ExitStack() as stack:
        if cap is not None:
            stack.enter_context(cap)
        if throttle is not None:
            stack.enter_context(throttle)
        for k in kinds:
            one_backend(k)
    pd.DataFrame(rows).to_parquet(out)


def prefetch_engine(params) -> str | None:
    """The prefetcher's background read engine: None = the same as ``io_engine``; ``aio`` falls back
    to that where native AIO is unavailable."""
    e = params.get("prefetch_engine", "same")
    if e in (None, "same") or (e == "aio" and not aio.available()):
        return None
    return e


def _query_texts(build_dir, meta):
    from ..data import prepared

    m = json.loads(paths(build_dir)["meta"].read_text()).get("manifest")
    ds = prepared.load_text(m)
    return ds.queries


# ----------------------------------------------------------------------------- batch: Figures 8, 9, 10, eq. 4

BATCH_METHOD = ("Figures 8/9: critical-path embedding access latency vs query batch size, as the paper "
                "simulates it: each query of a batch accesses its top n embeddings (n = K exact, or the "
                "partial re-rank count); the prefetcher's read of each query's approximate top n (delta = "
                "step x eta) starts, a constant prefetch budget (equation 2, measured ANN time(eta) - "
                "time(delta) for one query) elapses (sleep: emulated), then the critical path waits for "
                "the prefetch and reads the misses. memory/direct are measured reads (+ decode). Figure 10 "
                "models batch latency = ANN(eta) + encode + critical access + MaxSim (measured parts).")


def batch(build_dir, params, out, profile, seed, threads, iops_records=None):
    check_params(params)
    set_threads(threads, params)
    meta, off, index, qc, qt, qids = load_build(build_dir)
    p = paths(build_dir)
    K, eta = params["k"], min(params["nprobe"], index.nlist)
    step = params["batch_prefetch_step"]
    delta = ann.delta_for(eta, step)
    device = resolve_device(params["device"])
    prov = _prov(profile, params, seed, meta, BATCH_METHOD)
    # prefetch budget (equation 2) from single-query ANN times
    t_eta = measure.repeat(lambda: [ann.search(index, qc[i:i + 1], eta, K) for i in range(len(qc))],
                           repeats=params["repeats"], warmup=1)
    t_delta = measure.repeat(lambda: [ann.search(index, qc[i:i + 1], delta, K) for i in range(len(qc))],
                             repeats=params["repeats"], warmup=1)
    ann_eta = float(np.median(t_eta.runs)) / len(qc)
    budget_s = max(0.0, ann_eta - float(np.median(t_delta.runs)) / len(qc))
    (Da, Ia), (D, I) = ann.staged(index, qc, eta, delta, K)
    mem = backends.MemoryStore(p["table"], off)
    direct = backends.DirectStore(p["table"], off, depth=params["io_depth"], engine=params["io_engine"])
    rng = np.random.default_rng(seed)
    rows = []
    for n_label, n in (("exact", K), ("partial", params["partial_rerank"])):
        for B in params["batch_sizes"]:
            qsel = rng.choice(len(qc), size=B, replace=B > len(qc))
            finals = [I[q][I[q] >= 0][:n] for q in qsel]
            approx = [Ia[q][Ia[q] >= 0][:n] for q in qsel]
            need = np.concatenate(finals)  # duplicates across queries are read again (separate queries)
            pre = np.concatenate(approx)
            miss = np.concatenate([f[~np.isin(f, a)] for f, a in zip(finals, approx)])
            for rep in range(params["batch_repeats"] + 1):
                phase = "warmup" if rep == 0 else "measured"
                with measure.Timer() as tm:
                    mem.read(need)
                with measure.Timer() as td:
                    direct.read(need)
                fut = direct.submit(pre)
                t0 = time.perf_counter()
                time.sleep(budget_s)
                t_budget_end = time.perf_counter()
                fut.result()
                t_pref_done = time.perf_counter()
                if len(miss):
                    direct.read(miss)
                crit = time.perf_counter() - t_budget_end
                spill = max(0.0, t_pref_done - t_budget_end)
                q0 = qt[qsel[0]]
                dec = mem.read(need[: min(len(need), n)])
                with measure.Timer(cuda=device == "cuda") as tr:
                    for _ in range(B):
                        from .maxsim import maxsim

                        maxsim(q0, dec[1], dec[2], device)
                base = {"rerank": n_label, "rerank_n": n, "batch": B, "repeat": rep, "phase": phase,
                        "prefetch_budget_s": budget_s, "ann_eta_s": ann_eta, "delta": delta, "eta": eta,
                        "n_access": len(need), "n_prefetch": len(pre), "n_miss": len(miss),
                        "maxsim_s": tr.seconds, "encode_s": meta["encode_queries_s"] / max(1, len(qc)) * B}
                rows.append({**base, "method": "memory", "access_s": tm.seconds, "prefetch_spill_s": 0.0,
                             "source": "measured"})
                rows.append({**base, "method": "direct (GDS stand-in)", "access_s": td.seconds,
                             "prefetch_spill_s": 0.0, "source": "measured"})
                rows.append({**base, "method": "ESPN (direct + prefetch)", "access_s": crit,
                             "prefetch_spill_s": spill, "source": "emulated"})
    mem.close()
    direct.close()
    df = pd.DataFrame(rows)
    df["latency_model_s"] = df["ann_eta_s"] + df["encode_s"] + df["access_s"] + df["maxsim_s"]
    df["throughput_model_qps"] = df["batch"] / df["latency_model_s"]
    m = df[df.phase == "measured"]
    records.write(out, df, prov, records.summarize_runs(m, ["rerank", "method", "batch"], "access_s"))


# ----------------------------------------------------------------------------- iops: reader vs fio


def iops(build_dir, params, out, profile, seed, threads):
    meta, off, *_ = load_build(build_dir)
    table = paths(build_dir)["table"]
    prov = _prov(profile, params, seed, meta, "4 KiB random reads, O_DIRECT, on the embedding table: our "
                 "thread-pool preadv reader (wall clock over n reads, after a warm-up batch) and fio "
                 "(psync at QD 1, io_uring at higher QD, time based) in the same job; our reader with "
                 "both engines (thread pool of preadv; Linux native AIO) interleaved.")
    rows = []
    backends.evict_page_cache(table)
    for qd in params["iops_depths"]:
        n = params["iops_reads"] if qd > 1 else max(1000, params["iops_reads"] // 8)
        engines = ["threadpool"] + (["aio"] if qd > 1 and aio.available() else [])
        for rep in range(params["repeats"]):
            for eng in engines:  # interleaved, so both see the same machine load
                dt, v = backends.random_read_iops(table, n, qd, seed + rep, engine=eng)
                rows.append({"tool": "espn-reader", "engine": eng, "qd": qd, "repeat": rep,
                             "iops": v, "seconds": dt, "source": "measured", "status": "ok", "reason": ""})
        fio = shutil.which("fio")
        engine = "psync" if qd == 1 else "io_uring"
        if fio is None:
            rows.append({"tool": "fio", "engine": engine, "qd": qd, "repeat": 0, "iops": np.nan,
                         "seconds": np.nan, "source": "not_run", "status": "not_run",
                         "reason": "fio not installed"})
            continue
        for rep in range(params["repeats"]):
            cmd = [fio, "--name=espn", f"--filename={table}", "--rw=randread", "--bs=4k", "--direct=1",
                   f"--ioengine={engine}", f"--iodepth={qd}", f"--runtime={params['fio_runtime_s']}",
                   "--time_based", "--readonly", "--output-format=json", f"--randseed={seed + rep}"]
            pr = subprocess.run(cmd, capture_output=True, text=True)
            if pr.returncode != 0 and engine == "io_uring":
                cmd[cmd.index("--ioengine=io_uring")] = "--ioengine=libaio"
                engine = "libaio"
                pr = subprocess.run(cmd, capture_output=True, text=True)
            try:
                job = json.loads(pr.stdout)["jobs"][0]["read"]
                rows.append({"tool": "fio", "engine": engine, "qd": qd, "repeat": rep, "iops": job["iops"],
                             "seconds": job["runtime"] / 1000, "source": "measured", "status": "ok",
                             "reason": ""})
            except (ValueError, KeyError, IndexError):
                rows.append({"tool": "fio", "engine": engine, "qd": qd, "repeat": rep, "iops": np.nan,
                             "seconds": np.nan, "source": "not_run", "status": "failed",
                             "reason": pr.stderr.strip()[-200:]})
    df = pd.DataFrame(rows)
    ok = df[df.status == "ok"]
    records.write(out, df, prov, records.summarize_runs(ok, ["tool", "qd"], "iops") if len(ok) else None)


# ----------------------------------------------------------------------------- summary: targets


def summary(e2e_path, hit_path, iops_path, batch_path, params, out, profile):
    e = records.read(e2e_path)
    h = records.read(hit_path)
    io = records.read(iops_path)
    b = records.read(batch_path)
    rows = []
    ok = io[io.status == "ok"]
    qd = max(params["iops_depths"])
    eng = backends._pick_engine(params["io_engine"]) if qd > 1 else "threadpool"
    r = ok[(ok.tool == "espn-reader") & (ok.qd == qd) & (ok.engine == eng)].iops.median()
    f = ok[(ok.tool == "fio") & (ok.qd == qd)].iops.median()
    rows.append({"target": f"direct-I/O reader ({eng}) >= 80% of fio 4 KiB random-read IOPS at QD {qd}",
                 "measured": f"{r:,.0f} vs {f:,.0f} IOPS ({r / f:.0%})" if f == f else f"{r:,.0f} IOPS (fio not run)",
                 "value": r / f if f == f else np.nan, "threshold": 0.8,
                 "pass": bool(r / f >= 0.8) if f == f else None})
    if "ssd" not in e:
        e = e.assign(ssd="native")
    e = e.assign(ssd=e["ssd"].fillna("native"))
    m = e[(e.phase == "measured") & (e.status == "ok")]
    per = m.groupby(["ssd", "backend", "budget", "repeat"]).total_s.mean().groupby(["ssd", "backend", "budget"]).median()
    labels = [b for (d, k, b) in per.index if d == "native" and k == "mmap" and b != "unlimited"]
    frac = min(labels, key=lambda b: abs(float(b) - 0.5)) if labels else "0.50"  # table at 2x its memory
    cached = per.get(("native", "memory", "unlimited"), np.nan)

    def ms(v):
        return f"{v * 1e3:.1f} ms" if v == v else "not run"

    def ratio_rows(ssd, frac, note):
        mm = per.get((ssd, "mmap", frac), np.nan)
        pf = per.get((ssd, "direct_prefetch", frac), np.nan)
        dr = per.get((ssd, "direct", frac), np.nan)
        tag = "" if ssd == "native" else f" [{note}]"
        out = [{"target": f"table at 2x its memory (budget {frac}): direct+prefetch >= 3x faster than mmap{tag}",
                "measured": f"mmap {ms(mm)}, direct+prefetch {ms(pf)} ({mm / pf:.2f}x)",
                "value": mm / pf, "threshold": 3.0, "pass": bool(mm / pf >= 3.0) if pf == pf and mm == mm else None},
               {"target": f"table at 2x its memory (budget {frac}): direct+prefetch within 1.2x of fully cached{tag}",
                "measured": f"cached {ms(cached)} (native), direct+prefetch {ms(pf)} ({pf / cached:.2f}x)",
                "value": pf / cached, "threshold": 1.2, "pass": bool(pf / cached <= 1.2) if pf == pf else None},
               {"target": f"table at 2x its memory (budget {frac}): direct+prefetch no slower than direct I/O "
                          f"without prefetching (<= 1.0x){tag}",
                "measured": f"direct {ms(dr)}, direct+prefetch {ms(pf)} ({pf / dr:.2f}x)",
                "value": pf / dr, "threshold": 1.0, "pass": bool(pf / dr <= 1.0) if pf == pf and dr == dr else None}]
        for r in out:
            r["ssd"] = ssd
        return out

    rows += ratio_rows("native", frac, "")
    # The premise of the "within 1.2x of cached" target (paper equation 4): the reads of one query's top K
    # fit in the prefetch budget, the ANN time of the eta - delta lists still to scan. Here: the device
    # time of those reads at fio's IOPS (4 KiB units) against that budget, from the same records.
    build = records.read_provenance(e2e_path).get("build", {})
    ann_cached = m[(m.ssd == "native") & (m.backend == "memory")].ann_s.median()
    budget_s = ann_cached * (1 - params["prefetch_step"])
    io_units = params["k"] * float(build.get("mean_io_size", 4096)) / 4096
    dev_s = io_units / (f if f == f else r)
    rows.append({"target": "premise of the 1.2x target: prefetch budget >= device time of one query's "
                           f"top-{params['k']} reads (equation 4 threshold >= 1 query)",
                 "measured": f"budget {ms(budget_s)} (ANN {ms(ann_cached)} x {1 - params['prefetch_step']:.0%} "
                             f"of the lists) vs {ms(dev_s)} of reads at {'fio' if f == f else 'reader'} "
                             f"QD {qd} IOPS: threshold {budget_s / dev_s:.2f} queries",
                 "value": budget_s / dev_s, "threshold": 1.0, "pass": bool(budget_s >= dev_s), "ssd": "native"})
    emu_params = emulated_ssd_params(params)
    emu = e[e.ssd == "emulated"]
    if emu_params["enabled"] or len(emu):
        iops_v = emu.ssd_read_iops.dropna() if "ssd_read_iops" in emu else pd.Series(dtype=float)
        iops_n = int(iops_v.iloc[0]) if len(iops_v) else emu_params["read_iops"]
        note = f"emulated SSD: blkio {iops_n:,} read IOPS"
        eok = emu[(emu.phase == "measured") & (emu.status == "ok")]
        if len(eok):
            eb = sorted(eok.budget.unique(), key=lambda b: abs(float(b) - 0.5))[0]
            rows += ratio_rows("emulated", eb, note)
        else:
            why = emu.reason.dropna().iloc[0] if len(emu) and "reason" in emu else "no emulated rows recorded"
            rows.append({"target": f"direct+prefetch vs mmap at 2x memory [{note}]", "measured": f"not run ({why})",
                         "value": np.nan, "threshold": 3.0, "pass": None, "ssd": "emulated"})
    K = params["k"]
    if "corpus" not in h:
        h = h.assign(corpus="full index")
    hprov = records.read_provenance(hit_path).get("build", {})
    n_fill, n_all = hprov.get("n_filler", 0), hprov.get("n_docs", 0)
    for (corpus, eta), g in h.groupby(["corpus", "nprobe"]):
        at30 = g[np.isclose(g.step, 0.3)]
        hr = at30[at30.rerank_n == K].hit_rate.mean()
        docs = int(g.n_docs.iloc[0]) if "n_docs" in g else n_all
        if corpus == "full index":
            what = (f"; {n_fill / n_all:.0%} of this index is synthetic filler, so this rate describes the "
                    "generator, not the collection" if n_fill and n_all else "")
        else:
            n_small = params["partial_rerank"]
            hs = at30[at30.rerank_n == n_small].hit_rate.mean()
            what = (f" (nprobe {int(g.nprobe_used.iloc[0])} of {int(g.nlist.iloc[0])} lists; K is "
                    f"{K / max(docs, 1):.1%} of these records, against {K / PV.V1_PASSAGES:.3%} of the paper's "
                    f"MS MARCO v1; top {n_small}: {hs:.1%})")
        rows.append({"target": f"prefetch hit rate at a 30% step >= 90% (nprobe {eta}, top {K}, {corpus})",
                     "measured": f"{hr:.1%} over {docs:,} records{what}", "value": hr, "threshold": 0.9,
                     "pass": bool(hr >= 0.9)})
    df = pd.DataFrame(rows)
    df["ssd"] = df["ssd"].fillna("native") if "ssd" in df else "native"
    df["profile"] = profile
    df["pass"] = df["pass"].astype(object)
    prov = provenance.collect(profile=profile, config=params, seed=None, method="targets from records")
    records.write(out, df.astype({"pass": str}), prov)
    md = ["| target | measured | SSD | pass |", "|---|---|---|---|"]
    md += [f"| {r.target} | {r.measured} | {r.ssd} | {r['pass'] if r['pass'] is not None else 'not run'} |"
           for _, r in df.iterrows()]
    write_text(Path(out).with_suffix(".md"), "\n".join(md) + "\n")

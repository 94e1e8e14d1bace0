"""Trinity steps ``recall`` and ``trace``: the extend engine measured offline (all queries waiting at t=0).

- ``recall``: recall@k against queries/s for the engine at batch 1, static and continuous batching while
  sweeping top-M, beside faiss ``IndexHNSWFlat`` sweeping efSearch (same data, same threads), in the
  ann-benchmarks style (a parameter grid, recall against throughput);
- ``trace``: every (query, top-M) of the workload's request classes searched once by the live engine at the
  serving capacity, recording each request's distance tasks per extend and its result ids, and the measured
  wall time of every extend with its number of launches of the fixed-shape distance op. The serving steps
  replay these traces (:mod:`.serve`).
"""
from __future__ import annotations

import dataclasses

import time

import faiss
import numpy as np
import pandas as pd

from ..ann.metrics import recall_at_k
from ..core import measure
from ..core.step import Context, Result, reads
from . import batching, serve, setup
from .workload import Request, Source

RECALL_METHOD = (
    "Engine: all queries waiting at t=0; wall clock (time.perf_counter, CUDA synchronised) around the whole "
    "serving loop (admission, extends, result copies) of {nb} queries (batch 1: {n1}); queries/s = queries / "
    "wall time; {warmup} warm-up run(s) on the first queries recorded as phase=warmup; {repeats} measured runs "
    "per (mode, top-M), checked to return the same ids. faiss IndexHNSWFlat(M={hm}, efConstruction={hc}) on "
    "the same vectors (float32): one batched search call of the same {nb} queries with {threads} OpenMP "
    "threads per run, same warm-up and repeats. hnswlib is not installed (no wheel on this machine: sdist "
    "only), so it is not run. recall@{k} = |found top-{k} ∩ exact top-{k}| / {k} (bench.ann.metrics).")

TRACE_METHOD = (
    "Live engine (capacity {cap}, p={p}, distance op of {chunk} lanes, {dev}), continuous batching, all {n} "
    "searches ((query, top-M) pairs, k = top-M) waiting at t=0; each extend timed with time.perf_counter "
    "(CUDA synchronised) and recorded with its distance tasks and launches (row=extend); each request's tasks "
    "per extend and its ids recorded (row=request). A first pass over {nw} searches is warm-up (phase=warmup). "
    "Calibration rows: {cal} extends each with 1, 2, 4, ... busy slots (low fills). "
    "torch threads: {threads}.")


def _offline(eng, xq, qidx, k, top_m, policy, cuda):
    src = Source([], len(xq), 0)
    for i, q in enumerate(qidx):
        r = Request(i, int(q), k, top_m, 0.0)
        src.heap.append((0.0, i, r))
    ad = serve.LiveAdapter(eng, xq)
    with measure.Timer(cuda=cuda) as t:
        done, log = serve.serve(ad, policy, src)
    done.sort(key=lambda r: r.rid)
    return t.seconds, np.stack([r.ids for r in done]), done, log


def _engine_rows(ctx, base, xq, g, gt, mode, top_m, nq, cuda, suffix: str = "") -> list[dict]:
    p, rp = ctx.params, ctx.params["recall"]
    cap = 1 if mode == "batch1" else p["engine"]["capacity"]
    eng = setup.engine(p, base, g, cap, top_m, ctx.seed)
    policy = lambda: batching.make("continuous" if mode != "static" else "static", cap, 0.0)  # noqa: E731
    k = min(rp["k"], top_m)
    rows, first = [], None
    n_warm = min(nq, max(cap, 8))
    for i in range(rp["warmup"] + rp["repeats"]):
        phase = "warmup" if i < rp["warmup"] else "measured"
        qidx = np.arange(n_warm if phase == "warmup" else nq)
        wall, ids, done, log = _offline(eng, xq, qidx, k, top_m, policy(), cuda)
        if phase == "measured":
            if first is not None and not np.array_equal(first, ids):
                raise RuntimeError(f"{mode} top-M={top_m}: repeated runs returned different ids")
            first = ids
        rows.append({"system": f"engine-{mode}{suffix}", "mode": mode, "param": "top_m", "value": top_m,
                     "p": p["engine"]["p"], "phase": phase,
                     "repeat": i, "n_queries": len(qidx), "capacity": cap, "wall_s": wall, "qps": len(qidx) / wall,
                     f"recall_at_{rp['k']}": recall_at_k(ids, gt[qidx], k) if k == rp["k"] else np.nan,
                     "extends_mean": float(np.mean([r.extends for r in done])),
                     "lane_util": float(np.sum(log.fill) / (np.sum(log.launches) * eng.lanes)),
                     "threads": p["engine"]["threads"], "source": "measured"})
    return rows


def _hnsw_rows(ctx, base, xq, gt, nq) -> tuple[list[dict], dict]:
    rp, h = ctx.params["recall"], ctx.params["recall"]["hnsw"]
    x = np.ascontiguousarray(base, dtype=np.float32)
    index = faiss.IndexHNSWFlat(x.shape[1], h["M"])
    index.hnsw.efConstruction = h["ef_construction"]
    t0 = time.perf_counter()
    index.add(x)
    build_s = time.perf_counter() - t0
    q = xq[:nq]
    rows = []
    for ef in h["ef_search"]:
        index.hnsw.efSearch = ef
        t = measure.repeat(lambda: index.search(q, rp["k"])[1], repeats=rp["repeats"], warmup=rp["warmup"],
                           keep_results=True)
        rec = recall_at_k(t.results[0], gt[:nq], rp["k"])
        for phase, times in (("warmup", t.warmup), ("measured", t.runs)):
            for i, s in enumerate(times):
                rows.append({"system": "faiss-hnsw", "mode": "batched", "param": "ef_search", "value": ef,
                             "phase": phase, "repeat": i, "n_queries": nq, "capacity": nq, "wall_s": s,
                             "qps": nq / s, f"recall_at_{rp['k']}": rec, "threads": ctx.params["engine"]["threads"],
                             "source": "measured"})
    return rows, {"hnsw_build_s": build_s, "hnsw_M": h["M"], "hnsw_ef_construction": h["ef_construction"]}


def _exact_rows(ctx, base, xq, gt, nq: int, dev: str) -> list[dict]:
    """Exact brute force on the engine's device (one matmul + topk per chunk of queries): the anchor a
    graph engine must beat (recall 1 by construction); CUDA synchronised before each timer stops."""
    import torch

    rp, k = ctx.params["recall"], ctx.params["recall"]["k"]
    xb = torch.as_tensor(np.ascontiguousarray(base, dtype=np.float32), device=dev)
    nb2 = (xb * xb).sum(1)
    q = torch.as_tensor(np.ascontiguousarray(xq[:nq], dtype=np.float32), device=dev)

    def search():
        out = []
        for c in range(0, nq, 1024):
            qc = q[c:c + 1024]
            d = nb2[None, :] - 2 * qc @ xb.T      # + |q|^2, which does not change the order
            out.append(torch.topk(d, k, dim=1, largest=False).indices)
        return torch.cat(out).cpu().numpy()
    t = measure.repeat(search, repeats=rp["repeats"], warmup=rp["warmup"], keep_results=True,
                       cuda=dev.startswith("cuda"))
    rec = recall_at_k(t.results[0], gt[:nq], k)
    return [{"system": f"exact-{'cuda' if dev.startswith('cuda') else 'cpu'}", "mode": "batched", "param": "exact",
             "value": 0, "phase": phase, "repeat": i, "n_queries": nq, "capacity": nq, "wall_s": s,
             "qps": nq / s, f"recall_at_{k}": rec, "threads": ctx.params["engine"]["threads"], "source": "measured"}
            for phase, times in (("warmup", t.warmup), ("measured", t.runs)) for i, s in enumerate(times)]


def _cuvs_why() -> str:
    from ..core import devices

    if not devices.cuda_available():
        return "cuVS CAGRA reference needs CUDA (none on this machine)"
    try:
        import cuvs  # noqa: F401
    except ImportError:
        return "cuVS CAGRA reference: cuvs not installed"
    return "cuVS CAGRA reference not wired in this version"


@reads("manifest", "graph")
def recall(ctx: Context) -> Result:
    p, rp = ctx.params, ctx.params["recall"]
    threads = setup.set_threads(p)
    ds, base, xq, g, side = setup.load(ctx.input("manifest"), ctx.input("graph"))
    setup.check(p, ds, base, xq, g)
    cuda = setup.device(p).startswith("cuda")
    nb, n1 = min(rp["batch_queries"], len(xq)), min(rp["batch1_queries"], len(xq))
    rows = []
    for mode in rp["modes"]:
        for m in rp["top_m"]:
            rows += _engine_rows(ctx, base, xq, g, ds.gt_ids, mode, m, n1 if mode == "batch1" else nb, cuda)
    for pv in [v for v in rp["p_values"] if v != p["engine"]["p"]]:   # parents per extend, swept
        cp = dataclasses.replace(ctx, params={**p, "engine": {**p["engine"], "p": pv}})
        for m in rp["top_m"]:
            rows += _engine_rows(cp, base, xq, g, ds.gt_ids, "continuous", m, nb, cuda, suffix=f"-p{pv}")
    hrows, hprov = _hnsw_rows(ctx, base, xq, ds.gt_ids, nb)
    rows += hrows + _exact_rows(ctx, base, xq, ds.gt_ids, nb, setup.device(p))
    rows.append({"system": "hnswlib", "mode": "batched", "param": "ef", "phase": "measured", "source": "not_run",
                 "why": "hnswlib not installed: no wheel on this machine (sdist only)"})
    rows.append({"system": "cuvs-cagra", "mode": "batched", "param": "itopk", "phase": "measured",
                 "source": "not_run", "why": _cuvs_why()})
    df = pd.DataFrame(rows)
    df.insert(0, "dataset", ds.name)
    summ = (df[(df.phase == "measured") & (df.source == "measured")]
            .groupby(["dataset", "system", "value"]).agg(qps_median=("qps", "median"), qps_min=("qps", "min"),
                                                         qps_max=("qps", "max"),
                                                         recall=(f"recall_at_{rp['k']}", "first")).reset_index())
    return Result(records=df, summary=summ, dataset_id=f"{ds.name} ({ds.id})", dataset_checksum=ds.checksum,
                  method=RECALL_METHOD.format(nb=nb, n1=n1, warmup=rp["warmup"], repeats=rp["repeats"],
                                              hm=rp["hnsw"]["M"], hc=rp["hnsw"]["ef_construction"],
                                              threads=threads, k=rp["k"]),
                  provenance={"graph": side, "engine": p["engine"], "device": setup.device(p), **hprov})


def _calibrate(eng, xq, top_m: int, extends: int) -> list[dict]:
    """Extend times at low occupancy (1, 2, 4, ... busy slots), which a full offline run rarely visits."""
    rows, n = [], 1
    while n < eng.S and extends:
        ad = serve.LiveAdapter(eng, xq)
        ad.admit([Request(i, i % len(xq), 1, top_m, 0.0) for i in range(n)])
        for _ in range(extends):
            if not eng.n_active():
                break
            ad.extend()
        rows += [{"row": "extend", "phase": "measured", "tasks": t, "launches": lch, "dur_s": d, "active": n,
                  "calibration": True} for t, lch, d in ad.samples]
        while eng.n_active():
            eng.extend()
        n *= 2
    return rows


@reads("manifest", "graph")
def trace(ctx: Context) -> Result:
    p = ctx.params
    setup.set_threads(p)
    ds, base, xq, g, side = setup.load(ctx.input("manifest"), ctx.input("graph"))
    setup.check(p, ds, base, xq, g)
    cls = setup.all_classes(p)
    tms = sorted({c.top_m for group in cls.values() for c in group})
    cap = p["engine"]["capacity"]
    eng = setup.engine(p, base, g, cap, max(tms), ctx.seed, trace=True)
    nq = min(p["trace_queries"], len(xq))
    nw = min(2 * cap, nq)
    rows = []
    for phase, n in (("warmup", nw), ("measured", nq)):
        src = Source([], len(xq), 0)
        for m in tms:
            for q in range(n):
                r = Request(len(src.heap), q, m, m, 0.0)
                src.heap.append((0.0, r.rid, r))
        ad = serve.LiveAdapter(eng, xq)
        done, log = serve.serve(ad, batching.make("continuous", cap, 0.0), src)
        rows += [{"row": "extend", "phase": phase, "tasks": t, "launches": lch, "dur_s": d, "active": a}
                 for t, lch, d, a in zip(log.fill, log.launches, log.dur, log.active)]
        if phase == "measured":
            k = p["recall"]["k"]
            rows += [{"row": "request", "phase": phase, "qidx": r.qidx, "top_m": r.top_m, "extends": r.extends,
                      "steps": list(map(int, r.steps)), "ids": list(map(int, r.ids)),
                      f"recall_at_{k}": recall_at_k(r.ids[None, :k], ds.gt_ids[[r.qidx]], k)
                      if r.top_m >= k else np.nan} for r in done]
    rows += _calibrate(eng, xq, max(tms), p["trace_calibration"])
    df = pd.DataFrame(rows)
    df.insert(0, "dataset", ds.name)
    df["capacity"], df["chunk"], df["source"] = cap, eng.lanes, "measured"
    return Result(records=df, dataset_id=f"{ds.name} ({ds.id})", dataset_checksum=ds.checksum,
                  method=TRACE_METHOD.format(cap=cap, p=p["engine"]["p"], chunk=eng.lanes, dev=setup.device(p),
                                             n=nq * len(tms), nw=nw * len(tms), threads=p["engine"]["threads"],
                                             cal=p["trace_calibration"]),
                  provenance={"graph": side, "engine": p["engine"], "device": setup.device(p), "top_ms": tms})

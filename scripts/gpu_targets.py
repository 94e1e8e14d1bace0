"""The GPU targets of ``make gpu-check`` (part "targets"; README "Checking the GPU paths on a lent CUDA host
in one call"): each GPU path of the five studies measured beside its anchor, both in the same run on the
same machine, by calling the studies' own code. The fair exact anchor everywhere is ``bench.ann.brute``
(chunked matmul with a streamed top-K; fp32 with TF32 pinned off, and fp16 on tensor cores beside it, its
recall against fp32 stated); every approximate target states its recall against the fp32 anchor.

- Trinity (section 3.2), in this order: the graph build at 1M (``bench.ann.graph``: its kNN stage an inverted
  file on the GPU) against faiss's HNSW build on all host cores, saved for the next target; the graph
  search at 1M, batch 4,096, recall@10 >= 0.95: the one-launch kernel (``bench.ann.graph_search``) against
  the exact anchors (goal >= 2x) and faiss HNSW on all cores (goal >= 3x), the kernel engine
  (``bench.trinity.system.kernel_engine``: continuous batching, 4 extends per launch) and the torch extend
  engine (before) beside it; cuVS CAGRA where installed;
- Chameleon (section 6.2), 1M, IVF1000,PQ16, nprobe 32, K 100: the fused scan (``bench.ann.ivfpq_fused``
  through ``backends.Fused``) at batch 1,024 against the exact anchors (goal >= 3x), the torch kernel
  (before) and faiss GPU where installed beside it; at batch 4,096 its probed-code bytes/s against the
  GPU's copy bandwidth (goal >= 10%); ``cpu-gpu`` against ``cpu`` (the paper: 0.91-1.42x);
- WindVE (section IV-B): the regression depths (equation 12, ``bench.windve.system.estimator``) of the
  real GPU and CPU encoders: max concurrency without and with CPU offload;
- Moving Stuff Around (section 2): one-replica DataParallel and DDP (nccl) on the GPU
  (``bench.loaders.system.launch``), against one replica on the CPU; two replicas need two GPUs;
- ESPN (equation 1): MaxSim against a candidate table resident on the GPU
  (``bench.espn.system.maxsim_resident``) against the CPU with its table resident (goal >= 30x) and the
  CPU packing it per call.

GPU work is timed with CUDA synchronised around wall clocks (the studies' ``measure.Timer``) or CUDA
events, warm-up runs excluded, the median of the repeats reported. Without CUDA every GPU row is
"not run: no CUDA" and the cheap anchors (Trinity, Chameleon, ESPN) run at small sizes, so the code stays
exercised between GPU runs; ``GPU_CHECK_STANDIN=cpu`` runs the GPU branches on the CPU (tests), labelled
"stand-in", never a GPU measurement.
``plan`` sizes each target to the GPU's memory (shrunk or skipped, with the reason).

Run one target per process: ``python scripts/gpu_targets.py <target> --out rows.json [--plan plan.json]``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

TARGETS = ("trinity-build", "trinity-engine", "chameleon", "espn", "windve", "loaders")   # run in this order
LABELS = {"trinity-engine": "Trinity graph search", "trinity-build": "Trinity graph build", "chameleon": "Chameleon",
          "espn": "ESPN", "windve": "WindVE", "loaders": "Loaders"}
NO_ANCHOR_WITHOUT_CUDA = ("windve", "loaders")   # their rows need no process where there is no CUDA
NO_CUDA = "not run: no CUDA"
GIB = 1 << 30
D = 128          # SIFT-like vectors
SEED = 20240601

# sizes on a CUDA host (the issue's) and on a machine without one (anchors only, seconds on 2 cores)
CUDA_SIZES = {"trinity-engine": 1_000_000, "trinity-build": 1_000_000, "chameleon": 1_000_000}
# the GPU kernels' targets (path, size, goal), each answered by the rows carrying its key as ``issue``
KERNEL_TARGETS = {
    "IVF-PQ scan": ("IVF-PQ scan", "1M, nprobe 32, K 100, batch 1,024", ">= 3x the fair exact anchor, recall stated"),
    "IVF-PQ bandwidth": ("IVF-PQ scan", "batch >= 4,096", ">= 10% of HBM bandwidth in probed-code bytes/s"),
    "graph search": ("graph search", "1M, recall@10 >= 0.95, batch >= 4,096",
                     ">= 2x the fair exact anchor; >= 3x faiss HNSW on all host cores"),
    "graph build": ("GPU graph build", "1M", "faster than faiss HNSW's build on all host cores"),
    "MaxSim": ("MaxSim", "1 query x 1,000 candidates", ">= 30x the CPU (16 threads)"),
}
CPU_SIZES = {"trinity-engine": 4_000, "trinity-build": 4_000, "chameleon": 10_000}
FLOORS = {"trinity-engine": 20_000, "trinity-build": 50_000, "chameleon": 100_000}
MEM_SHARE = 0.8  # of the GPU's memory a target may plan to use


def gpu_bytes(target: str, n: int) -> int:
    """Rough peak GPU memory of a target at ``n`` vectors (vectors, the kNN build's tiles and lists, the
    exact anchor's distance block, the torch scan's layout and chunks), generous on purpose."""
    vec = n * D * 4
    if target in ("trinity-engine", "trinity-build"):
        lists = n * (81 + 3 * 64 + 6 * 32) * 8
        return vec + lists + 5 * GIB
    if target == "chameleon":
        return 2 * vec + n * 16 * 12 + 4 * GIB
    return GIB


def plan(cuda: bool, gpu_mem: int | None = None) -> dict:
    """Per target: ``n`` (vectors) and ``note`` (why it was shrunk), or ``skip`` (why it cannot run). On a
    GPU the issue's size is halved until its estimated memory fits ``MEM_SHARE`` of ``gpu_mem``; below the
    target's floor the GPU rows are skipped with the reason. Without CUDA: the small CPU sizes."""
    out = {}
    for t in TARGETS:
        if not cuda:
            out[t] = {"n": CPU_SIZES.get(t), "note": "no CUDA: anchors only, at a small size"}
            continue
        n = CUDA_SIZES.get(t)
        if n is None or gpu_mem is None:
            out[t] = {"n": n, "note": ""}
            continue
        want, cap = n, MEM_SHARE * gpu_mem
        while n >= FLOORS[t] and gpu_bytes(t, n) > cap:
            n //= 2
        if n < FLOORS[t]:
            out[t] = {"n": None, "skip": f"GPU too small: {gpu_mem / GIB:.1f} GiB holds not even "
                                          f"{FLOORS[t]:,} vectors for {t} (needs ~{gpu_bytes(t, FLOORS[t]) / GIB:.1f} GiB)"}
        else:
            out[t] = {"n": n, "note": "" if n == want else
                      f"shrunk from {want:,} to {n:,} vectors: ~{gpu_bytes(t, want) / GIB:.1f} GiB needed, "
                      f"{gpu_mem / GIB:.1f} GiB on the GPU"}
    return out


# ----------------------------------------------------------------------------- helpers

def row(target: str, metric: str, value=None, anchor: str = "", anchor_value=None, *, unit: str = "",
        goal: str = "", status: str = "measured", why: str = "", size: str = "", note: str = "",
        issue: str = "") -> dict:
    """One summary row: the measured value beside its anchor (``ratio`` = value / anchor_value); ``issue``
    names the kernels' target it answers (:data:`KERNEL_TARGETS`), if any."""
    ratio = (value / anchor_value if isinstance(value, (int, float)) and isinstance(anchor_value, (int, float))
             and anchor_value and not math.isnan(anchor_value) else None)
    return {"target": target, "metric": metric, "value": value, "anchor": anchor, "anchor_value": anchor_value,
            "ratio": ratio, "unit": unit, "goal": goal, "status": status, "why": why, "size": size, "note": note,
            "issue": issue}


def not_run(target: str, metric: str, why: str, anchor: str = "", anchor_value=None, **kw) -> dict:
    return row(target, metric, None, anchor, anchor_value, status="not run", why=why, **kw)


def median_time(fn, repeats: int, warmup: int, cuda: bool) -> tuple[float, object]:
    """Median wall seconds of ``repeats`` calls after ``warmup`` untimed ones (CUDA synchronised: the
    studies' ``measure.repeat``), and the last result."""
    from bench.core.measuring import measure

    t = measure.repeat(fn, repeats=repeats, warmup=warmup, cuda=cuda, keep_results=True)
    return statistics.median(t.runs), t.results[-1]


def sift(n: int, nq: int, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """SIFT-like base and queries as float32 (``bench.data.synthetic``), cached under gpu-check/cache/."""
    from bench.data import synthetic

    cache = Path(os.environ.get("GPU_CHECK_CACHE", "gpu-check/cache"))
    f = cache / f"sift-{n}-{nq}-{seed}.npz"
    if f.exists():
        with np.load(f) as z:
            return z["base"], z["queries"]
    base, q = synthetic.sift_like(n, seed, n_queries=nq)
    base, q = base.astype(np.float32), q.astype(np.float32)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = f.with_suffix(".tmp.npz")
    np.savez(tmp, base=base, queries=q)
    os.replace(tmp, f)
    return base, q


def exact_topk(base_t, q_np: np.ndarray, k: int, device: str):
    """Exact brute force (Chameleon's ``exact.search``: one matmul + top-K per chunk), ids on the host."""
    from bench.chameleon.system import exact

    return exact.search(base_t, q_np, k)[1].cpu().numpy()


def recall_at(found: np.ndarray, gt: np.ndarray, k: int) -> float:
    from bench.ann.metrics import recall_at_k

    return float(recall_at_k(found, gt, k))


def set_threads(n: int) -> None:
    from bench.core.measuring import measure

    measure.set_threads(n)


# ----------------------------------------------------------------------------- anchors

def anchors(x: np.ndarray, q: np.ndarray, k: int, device: str, cuda: bool, repeats: int = 3) -> dict:
    """The fair exact anchors on ``device`` (``bench.ann.brute``: streamed top-K; fp32 with TF32 pinned off,
    and fp16 tensor cores): their q/s (median of ``repeats`` after a warm-up), the fp32 ids (recall's truth)
    and the fp16 anchor's recall against them."""
    from bench.ann import brute

    out = {}
    for prec in brute.PRECISIONS if cuda else ("fp32",):        # without CUDA: the fp32 anchor only (seconds)
        base = brute.Base.build(x, device, prec)
        s, (_, ids) = median_time(lambda: brute.search(base, q, k), repeats, 1, cuda)
        out[prec] = {"qps": len(q) / s, "ids": ids.cpu().numpy(), "how": brute.describe(prec)}
        del base
    if "fp16" in out:
        out["fp16"]["recall"] = recall_at(out["fp16"]["ids"], out["fp32"]["ids"], k)
    return out


def anchor_rows(T: str, metric: str, value, an: dict, goal: str, **kw) -> list[dict]:
    """``value`` beside the fp32 anchor (the target's goal) and beside the fp16 anchor."""
    f16 = an["fp16"]
    return [row(T, f"{metric} vs exact fp32 (same GPU)", value, f"exact: {an['fp32']['how']}", an["fp32"]["qps"],
                goal=goal, **kw),
            row(T, f"{metric} vs exact fp16 (same GPU)", value, f"exact: {f16['how']}; its recall {f16['recall']:.3f}",
                f16["qps"], **kw)]


# ----------------------------------------------------------------------------- Trinity

TOP_M = (16, 32, 48, 64, 96, 128, 192, 256)
EF = (16, 24, 32, 48, 64, 96, 128, 192, 256)
RECALL = 0.95
NQ_GRAPH = 4096


def _engine_run(eng, queries: np.ndarray, k: int, top_m: int, cuda: bool) -> tuple[float, np.ndarray]:
    """All queries waiting at t=0 through the engine's continuous batching (the study's serving loop);
    wall seconds (CUDA synchronised) and ids in query order."""
    from bench.core.measuring import measure
    from bench.trinity.system import batching, event_loop
    from bench.trinity.system.workload import Request, Source

    src = Source([], len(queries), 0)
    for i in range(len(queries)):
        src.heap.append((0.0, i, Request(i, i, k, top_m, 0.0)))
    policy = batching.make("continuous", eng.S, 0.0)
    with measure.Timer(cuda=cuda) as t:
        done, _ = event_loop.run(event_loop.LiveAdapter(eng, queries), policy, src)
    done.sort(key=lambda r: r.rid)
    return t.seconds, np.stack([r.ids for r in done])


def engine_curve(x, graph, q, gt, device: str, capacity: int, chunk: int, repeats: int = 3,
                 kernel: bool = False, extends: int = 4) -> list[dict]:
    """(top-M, q/s median, recall@10, mode) ascending in top-M until recall@10 >= 0.95: the torch extend
    engine, or (``kernel``) the engine on the graph search kernel, ``extends`` extends per launch."""
    from bench.trinity.system.engine import ExtendEngine
    from bench.trinity.system.kernel_engine import KernelEngine

    cuda, out = device.startswith("cuda"), []
    for m in [m for m in TOP_M if m < len(x)]:
        eng = (KernelEngine(x, graph, capacity=capacity, top_m_max=m, device=device, seed=SEED,
                            extends_per_launch=extends) if kernel else
               ExtendEngine(x, graph, capacity=capacity, p=1, top_m_max=m, device=device, seed=SEED,
                            chunk=min(chunk, capacity * graph.shape[1])))
        _engine_run(eng, q[:min(len(q), capacity)], 10, m, cuda)          # warm-up (not timed)
        times = []
        for _ in range(repeats):
            s, ids = _engine_run(eng, q, 10, m, cuda)
            times.append(s)
        out.append({"top_m": m, "qps": len(q) / statistics.median(times), "recall": recall_at(ids, gt, 10),
                    "mode": eng.mode, "why_eager": getattr(getattr(eng, "_run", None), "reason", "") or ""})
        del eng
        if out[-1]["recall"] >= RECALL:
            break
    return out


def kernel_curve(x, graph, q, gt, device: str, repeats: int = 3) -> list[dict]:
    """(top-M, q/s median, recall@10) of the one-launch graph search (``bench.ann.graph_search``: one program
    per query runs its whole search), ascending in top-M until recall@10 >= 0.95."""
    from bench.ann import graph_search

    cuda, out = device.startswith("cuda"), []
    g = graph_search.Graph.build(x, graph, seed=SEED, device=device)
    for m in [m for m in TOP_M if m < len(x)]:
        s, (ids, _, _) = median_time(lambda: graph_search.search(g, q, 10, m), repeats, 1, cuda)
        out.append({"top_m": m, "qps": len(q) / s, "recall": recall_at(ids.cpu().numpy(), gt, 10)})
        if out[-1]["recall"] >= RECALL:
            break
    return out


def hnsw(x, q, gt, cores: int, repeats: int = 3, index=None) -> tuple[float, list[dict], object]:
    """faiss IndexHNSWFlat (the study's M=16, efConstruction=40) on all host cores: build seconds (0 when
    ``index`` is given, built earlier), the (efSearch, q/s median, recall@10) curve up to recall@10 >= 0.95,
    and the index."""
    import faiss

    faiss.omp_set_num_threads(cores)
    build_s = 0.0
    if index is None:
        index = faiss.IndexHNSWFlat(x.shape[1], 16)
        index.hnsw.efConstruction = 40
        t0 = time.perf_counter()
        index.add(x)
        build_s = time.perf_counter() - t0
    curve = []
    for ef in EF:
        index.hnsw.efSearch = ef
        s, ids = median_time(lambda: index.search(q, 10)[1], repeats, 1, False)
        curve.append({"ef": ef, "qps": len(q) / s, "recall": recall_at(ids, gt, 10)})
        if curve[-1]["recall"] >= RECALL:
            break
    return build_s, curve, index


def _first(curve: list[dict]) -> dict | None:
    return next((c for c in curve if c["recall"] >= RECALL), None)


def _cache() -> Path:
    return Path(os.environ.get("GPU_CHECK_CACHE", "gpu-check/cache"))


def cached_graph(x: np.ndarray, n: int, dev: str):
    """The graph and faiss HNSW index the build target saved for these vectors (or None, None)."""
    import faiss

    g, h = _cache() / f"graph-{n}.npy", _cache() / f"hnsw-{n}.faiss"
    if not (g.exists() and h.exists()):
        return None, None
    graph = np.load(g)
    return (graph, faiss.read_index(str(h))) if graph.shape[0] == len(x) else (None, None)


def trinity_engine(p: dict, device: str | None, cores: int) -> list[dict]:
    """Graph search at recall@10 >= 0.95, batch 4,096: the one-launch kernel beside the fair exact anchors
    and faiss HNSW on all cores; the kernel engine (continuous batching) and the torch engine (before)."""
    from bench.ann import graph as G

    T, n = "Trinity graph search", p.get("n")
    gpu, cuda = device is not None, bool(device and device.startswith("cuda"))
    if n is None:
        return [not_run(T, "q/s at recall@10 >= 0.95", p["skip"], "exact brute force, same GPU")]
    nq = NQ_GRAPH if cuda else 256
    x, q = sift(n, NQ_GRAPH if cuda else nq)
    set_threads(cores)
    dev = device or "cpu"
    reps = 3 if gpu else 1                              # without a GPU only the anchors' code paths run
    an = anchors(x, q, 10, dev, cuda, reps)
    gt = an["fp32"]["ids"]
    graph, hidx = cached_graph(x, n, dev)
    graph = graph if graph is not None else G.build_graph(x, G.GraphParams(), SEED, dev)
    _, h_curve, _ = hnsw(x, q, gt, cores, reps, index=hidx)
    h = _first(h_curve)
    size = f"N={n:,}, {nq} queries, d={D}, graph degree 32"
    h_note = (f"HNSW reached recall {h['recall']:.3f} at efSearch {h['ef']}" if h else
              f"HNSW never reached recall {RECALL} (best {max(c['recall'] for c in h_curve):.3f})")
    metric = "graph search q/s at recall@10 >= 0.95"
    if not gpu:
        return [not_run(T, f"{metric} vs exact fp32 (same GPU)", NO_CUDA, f"exact: {an['fp32']['how']}, CPU",
                        an["fp32"]["qps"], goal=">= 2x", unit="q/s", size=size, issue="graph search"),
                not_run(T, f"{metric} vs faiss HNSW (all cores)", NO_CUDA, f"faiss HNSW, {cores} cores",
                        h["qps"] if h else None, goal=">= 3x", unit="q/s", size=size, note=h_note,
                        issue="graph search")]
    return _graph_rows(T, x, graph, q, gt, an, h, h_note, dev, cores, size)


def _graph_rows(T, x, graph, q, gt, an, h, h_note, dev, cores, size) -> list[dict]:
    from bench.ann import kernels

    metric = "graph search q/s at recall@10 >= 0.95"
    how, why = kernels.mode(dev)
    rows = []
    if how is None:
        rows.append(not_run(T, f"{metric} vs exact fp32 (same GPU)", f"not run: {why}", goal=">= 2x", size=size))
    else:
        curve = kernel_curve(x, graph, q, gt, dev)
        e = _first(curve)
        if e is None:
            best = max(curve, key=lambda c: c["recall"])
            rows.append(not_run(T, f"{metric} vs exact fp32 (same GPU)", f"the kernel never reached recall@10 "
                                f"{RECALL} (best {best['recall']:.3f} at top-M {best['top_m']})", size=size))
        else:
            kw = dict(unit="q/s", size=size, note=f"{how}, one launch; top-M {e['top_m']}, recall@10 {e['recall']:.3f}")
            rows += anchor_rows(T, metric, e["qps"], an, ">= 2x", issue="graph search", **kw)
            rows.append(row(T, f"{metric} vs faiss HNSW (all cores)", e["qps"], f"faiss HNSW, {cores} cores",
                            h["qps"] if h else None, goal=">= 3x", issue="graph search",
                            **{**kw, "note": f"{kw['note']}; {h_note}"}))
            rows += _engines(T, x, graph, q, gt, dev, e, size)
    return rows + [cagra_row(T, x, q, gt, dev, size)]


def _engines(T, x, graph, q, gt, dev, e, size) -> list[dict]:
    """Continuous batching on the kernel (1,024 slots, 4 extends per launch) and the torch extend engine
    (before: CUDA graph, 1,024 slots), each at recall@10 >= 0.95, beside the one-launch search."""
    out = []
    for kernel, label in ((True, "kernel engine (continuous batching, 4 extends per launch)"),
                          (False, "torch extend engine (before)")):
        c = _first(engine_curve(x, graph, q, gt, dev, capacity=1024, chunk=4096, kernel=kernel))
        out.append(row(T, f"{label} q/s at recall@10 >= 0.95 vs the one-launch kernel", c["qps"] if c else None,
                       "one-launch graph search kernel", e["qps"], unit="q/s", size=size,
                       status="measured" if c else "not run", why="" if c else "never reached the recall",
                       note=f"top-M {c['top_m']}, recall {c['recall']:.3f}, {c['mode']}" if c else ""))
    return out


def cagra_row(T: str, x, q, gt, dev: str, size: str) -> dict:
    """cuVS CAGRA (build and search on the GPU) as a further anchor where cuvs is installed (any failure of
    its API is this row's "not run", never the target's)."""
    metric = "cuVS CAGRA q/s at recall@10 >= 0.95 (further anchor)"
    try:
        import cupy as cp
        from cuvs.neighbors import cagra
    except ImportError:
        return not_run(T, metric, "not run: cuvs not installed", size=size)
    try:
        index = cagra.build(cagra.IndexParams(graph_degree=32, intermediate_graph_degree=64), cp.asarray(x))
        qd, best = cp.asarray(q), None
        for m in TOP_M:
            sp = cagra.SearchParams(itopk_size=max(m, 16))
            s, (_, ids) = median_time(lambda: cagra.search(sp, index, qd, 10), 3, 1, True)
            best = {"top_m": m, "qps": len(q) / s, "recall": recall_at(cp.asnumpy(cp.asarray(ids)), gt, 10)}
            if best["recall"] >= RECALL:
                break
    except Exception as e:  # noqa: BLE001 - a further anchor must not sink the target
        return not_run(T, metric, f"not run: cuVS failed: {type(e).__name__}: {str(e)[:120]}", size=size)
    return row(T, metric, best["qps"], "", None, unit="q/s", size=size,
               note=f"itopk {best['top_m']}, recall {best['recall']:.3f}")


def trinity_build(p: dict, device: str | None, cores: int) -> list[dict]:
    """The graph build at the plan's size (1M where it fits: the kNN stage an inverted file on the GPU past
    200k) against faiss HNSW's build on all cores, each timed once (a build is one-shot) after a small
    warm-up build; the graph's recall of 1,000 sampled vectors' exact 10 nearest among their neighbours.
    Both are saved for the graph search target."""
    import faiss

    from bench.ann import graph as G

    T, n = "Trinity graph build", p.get("n")
    if n is None:
        return [not_run(T, "build s (GPU) vs faiss HNSW build s (all cores)", p["skip"])]
    x, _ = sift(n, NQ_GRAPH if device and device.startswith("cuda") else 256)
    set_threads(cores)
    dev, build_s, graph = device or "cpu", None, None
    if device is not None:
        G.build_graph(x[:min(n // 2, 20_000)], G.GraphParams(), SEED, dev)
        _sync(dev)
        t0 = time.perf_counter()
        graph = G.build_graph(x, G.GraphParams(), SEED, dev)
        _sync(dev)
        build_s = time.perf_counter() - t0
    faiss.omp_set_num_threads(cores)
    index = faiss.IndexHNSWFlat(D, 16)
    index.hnsw.efConstruction = 40
    t0 = time.perf_counter()
    index.add(x)
    h_s = time.perf_counter() - t0
    kw = dict(unit="s", size=f"N={n:,}", note=f"kNN stage: {G.build_method(n, G.GraphParams(), dev)}")
    anchor = f"faiss HNSW M=16 efC=40 build, {cores} cores"
    if device is None:
        return [not_run(T, "build s (GPU) vs faiss HNSW build s (all cores)", NO_CUDA, anchor, h_s,
                        issue="graph build", **kw)]
    kw["note"] += f"; {graph_recall(x, graph, dev):.3f} of 1,000 sampled vectors' exact 10 nearest are graph neighbours"
    _cache().mkdir(parents=True, exist_ok=True)
    np.save(_cache() / f"graph-{n}.npy", graph)
    faiss.write_index(index, str(_cache() / f"hnsw-{n}.faiss"))
    return [row(T, "build s (GPU) vs faiss HNSW build s (all cores)", build_s, anchor, h_s,
                goal="< 1x (lower is better)", issue="graph build", **kw)]


def _sync(dev: str) -> None:
    if dev.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def graph_recall(x: np.ndarray, graph: np.ndarray, dev: str, sample: int = 1000) -> float:
    """Share of sampled vectors' exact 10 nearest others that are among their graph neighbours."""
    from bench.ann import brute

    rows = np.random.default_rng(SEED).choice(len(x), size=min(sample, len(x)), replace=False)
    _, ids = brute.search(brute.Base.build(x, dev), x[rows], 11)
    ids = ids.cpu().numpy()
    hits = [len(np.intersect1d([i for i in r if i != v][:10], graph[v])) / 10 for v, r in zip(rows, ids)]
    return float(np.mean(hits))


# ----------------------------------------------------------------------------- Chameleon

def copy_bandwidth(gib: float = 2.0, repeats: int = 10, device: str = "cuda") -> float:
    """The GPU's memory bandwidth: a device-to-device copy of ``gib`` GiB timed with CUDA events, bytes read
    plus written, median of ``repeats`` after two warm-ups."""
    import torch

    if not device.startswith("cuda"):   # the stand-in: a host copy timed with a wall clock
        n = (64 << 20) // 4
        a = torch.rand(n)
        b = torch.empty_like(a)
        s, _ = median_time(lambda: b.copy_(a), repeats, 1, False)
        return 2 * n * 4 / s
    n = int(gib * GIB) // 4
    a = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
    b = torch.empty_like(a)
    for _ in range(2):
        b.copy_(a)
    ts = []
    for _ in range(repeats):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        b.copy_(a)
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    del a, b
    torch.cuda.empty_cache()
    return 2 * n * 4 / statistics.median(ts)


NQ_SCAN, NQ_WIDE, K_SCAN, NPROBE = 1024, 4096, 100, 32


def _timed(cfg, q, k, cuda: bool) -> tuple[float, np.ndarray, dict]:
    """Median seconds of a configuration's batch (after a warm-up: layouts, contexts, kernels), its ids, parts."""
    ok, why = cfg.available()
    if not ok:
        raise RuntimeError(why)
    cfg.search(q, k)
    outs = [cfg.search(q, k) for _ in range(5 if cuda else 2)]
    return statistics.median(o.seconds for o in outs), outs[-1].I, outs[-1].parts


def chameleon(p: dict, device: str | None, cores: int) -> list[dict]:
    """IVF-PQ (nlist = sqrt(N), PQ16) searched with nprobe 32, K 100: the fused scan at batch 1,024 beside
    the fair exact anchors, the torch kernel (before) and faiss GPU where installed; at batch 4,096 its
    probed-code bytes/s against the GPU's bandwidth; ``cpu-gpu`` against ``cpu``."""
    from bench.ann import ivf
    from bench.chameleon.system import backends

    T, n = "Chameleon", p.get("n")
    if n is None:
        return [not_run(T, "IVF-PQ fused scan q/s", p["skip"])]
    gpu, cuda = device is not None, bool(device and device.startswith("cuda"))
    x, q = sift(n, NQ_WIDE if cuda else NQ_SCAN)
    q1 = q[:NQ_SCAN]
    set_threads(cores)
    nlist = max(64, int(round(math.sqrt(n))))
    index = ivf.build(x, nlist, 16, train_size=min(n, max(nlist * 39, 50_000) if cuda else 4_000), seed=SEED)
    size = f"N={n:,}, IVF{nlist},PQ16, nprobe {NPROBE}, K {K_SCAN}, batch {NQ_SCAN}"
    cpu_s, _, _ = _timed(backends.make("cpu", index, NPROBE, cores), q1, K_SCAN, False)
    if not gpu:
        return [not_run(T, "IVF-PQ fused scan q/s vs exact fp32 (same GPU)", NO_CUDA, goal=">= 3x", unit="q/s",
                        size=size, issue="IVF-PQ scan"),
                not_run(T, f"fused scan probed-code bytes/s at batch {NQ_WIDE} vs GPU copy bandwidth", NO_CUDA,
                        goal=">= 0.1x", issue="IVF-PQ bandwidth"),
                not_run(T, "cpu-gpu q/s vs cpu q/s (host)", NO_CUDA, "cpu (faiss, all cores)", NQ_SCAN / cpu_s,
                        goal="paper 0.91-1.42x", unit="q/s", size=size)]
    return _scan_rows(T, index, x, q, device, cuda, cores, size, cpu_s)


def _scan_rows(T, index, x, q, device, cuda, cores, size, cpu_s) -> list[dict]:
    from bench.chameleon.system import backends, pqscan

    q1, dev = q[:NQ_SCAN], device
    an = anchors(x, q1, K_SCAN, dev, cuda)
    gt = an["fp32"]["ids"]
    fused = backends.Fused(index, NPROBE, cores, device=dev)
    f_s, f_I, parts = _timed(fused, q1, K_SCAN, cuda)
    note = f"backend {parts.get('backend')}; recall@{K_SCAN} against exact fp32 {recall_at(f_I, gt, K_SCAN):.3f}"
    rows = anchor_rows(T, "IVF-PQ fused scan q/s", NQ_SCAN / f_s, an, ">= 3x", unit="q/s", size=size, note=note,
                       issue="IVF-PQ scan")
    t_s, t_I, _ = _timed(backends.make("torch-cuda" if cuda else "torch-cpu", index, NPROBE, cores), q1, K_SCAN, cuda)
    rows.append(row(T, "torch PQ kernel (before) q/s vs the fused scan", NQ_SCAN / t_s, "fused scan", NQ_SCAN / f_s,
                    unit="q/s", size=size, note=f"recall@{K_SCAN} {recall_at(t_I, gt, K_SCAN):.3f}"))
    rows.append(_faiss_gpu_row(T, index, q1, gt, size, NQ_SCAN / f_s, cores))
    wide = q if cuda else q1
    w_s, _, _ = _timed(fused, wide, K_SCAN, cuda)
    _, lists = pqscan.ivfpq_of(index).quantizer.search(wide, NPROBE)
    probed = float(pqscan.list_sizes(index)[lists].sum()) * 16
    bw = copy_bandwidth(device=device)
    rows.append(row(T, f"fused scan probed-code bytes/s at batch {len(wide)} vs GPU copy bandwidth", probed / w_s,
                    "device-to-device copy bandwidth (read + write)", bw, unit="B/s", goal=">= 0.1x",
                    size=size.replace(f"batch {NQ_SCAN}", f"batch {len(wide)}"), issue="IVF-PQ bandwidth",
                    note=f"{probed / 1e9:.2f} GB of codes per batch; {len(wide) / w_s:,.0f} q/s; bandwidth {bw / 1e12:.2f} TB/s"))
    cg_s, _, cparts = _timed(backends.make("cpu-gpu" if cuda else "cpu", index, NPROBE, cores), q1, K_SCAN, cuda)
    rows.append(row(T, "cpu-gpu q/s vs cpu q/s (host)", NQ_SCAN / cg_s, f"cpu (faiss, {cores} cores)", NQ_SCAN / cpu_s,
                    goal="paper 0.91-1.42x", unit="q/s", size=size,
                    note=f"coarse on the GPU {cparts.get('coarse_s', float('nan')) * 1e3:.1f} ms of the batch"))
    return rows


def _faiss_gpu_row(T, index, q, gt, size, fused_qps, cores) -> dict:
    """faiss's own GPU IVF-PQ (the ``gpu`` back end where faiss has GPU support) as a further anchor."""
    from bench.chameleon.system import backends
    from bench.core.machine import devices

    metric = "faiss GPU IVF-PQ q/s vs the fused scan (further anchor)"
    if not devices.faiss_gpu_available():
        return not_run(T, metric, "not run: faiss has no GPU build here", size=size)
    s, I, parts = _timed(backends.make("gpu", index, NPROBE, cores), q, K_SCAN, True)
    return row(T, metric, len(q) / s, "fused scan", fused_qps, unit="q/s", size=size,
               note=f"{parts.get('backend')}; recall@{K_SCAN} {recall_at(I, gt, K_SCAN):.3f}")


# ----------------------------------------------------------------------------- WindVE

def _latency(enc, texts: list[str], c: int, repeats: int = 3) -> float:
    """Median seconds of one batch of ``c`` queries (the instance computes its queue as one batch)."""
    batch = (texts * (c // len(texts) + 1))[:c]
    enc.embed(batch)
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        enc.embed(batch)          # returns host arrays: the GPU has finished
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _depth(enc, texts, levels, slo: float, name: str) -> tuple[int, str]:
    from bench.windve.system import estimator

    f = estimator.fit(levels, [_latency(enc, texts, c) for c in levels])
    try:
        return estimator.predict_depth(f, slo, device=name), f"t = {f.alpha * 1e3:.2f} ms x C + {f.beta * 1e3:.1f} ms"
    except estimator.DeviceCannotMeetSlo as e:
        return 0, str(e)


def windve(p: dict, device: str | None, cores: int) -> list[dict]:
    """Regression depths (equation 12) of the GPU and CPU instances at an SLO of 1 s, 75-token queries."""
    T, slo = "WindVE", 1.0
    if device is None:   # no anchor either: the CPU depth alone says nothing about the pair (saves ~20 s)
        return [not_run(T, m, NO_CUDA) for m in ("max concurrency, GPU only",
                                                 "max concurrency with CPU offload vs GPU only (offload gain)")]
    import torch

    from bench.windve.system.encoder import Encoder
    from bench.windve.system.textgen import exact_length_texts, load_fast_tokenizer
    torch.set_num_threads(cores)
    cpu = Encoder(device="cpu")
    texts = exact_length_texts(load_fast_tokenizer(), 16, 75, SEED)
    cpu_depth, cpu_law = _depth(cpu, texts, [1, 4, 8, 16] if device.startswith("cuda") else [1, 4], slo, "CPU")
    size = f"MiniLM, 75-token queries, SLO {slo:g} s, CPU instance {cores} threads"
    gpu = cpu.copy_to(device)
    gpu_depth, gpu_law = _depth(gpu, texts, [1, 32, 64, 128] if device.startswith("cuda") else [1, 4], slo, "GPU")
    note = f"regression depths from in-process batches (no HTTP); GPU {gpu_law}; CPU {cpu_law}"
    return [row(T, "max concurrency, GPU only", gpu_depth, unit="queries", size=size, note=note),
            row(T, "max concurrency with CPU offload vs GPU only (offload gain)", gpu_depth + cpu_depth,
                "GPU only", gpu_depth, unit="queries", size=size, note=note)]


# ----------------------------------------------------------------------------- Loaders

def _bundle(root: Path) -> tuple[str, str]:
    from bench.data import synthetic
    from bench.loaders.system import bert_cat, collection

    out = root / "loaders"
    if not (out / collection.BUNDLE).exists():
        bert_cat.save_checkpoint("minilm", 1, out / collection.MODEL, seed=SEED)
        collection.build_bundle(synthetic.msmarco_like(500, 20, SEED), out, doc_words=200, filler_docs=500,
                                seed=SEED)
    return str(out), str(out / collection.MODEL)


def _samples_per_s(outcome, spec) -> float:
    """The run's samples/s: each process's measured samples over its measured step time, summed over the
    ranks (DP: one process whose batch is ``replicas`` x the per-replica batch)."""
    batch = spec.batch_per_replica * (spec.replicas if spec.parallel == "dp" else 1)
    total = 0.0
    for res in outcome.results:
        rows = [r for r in res["rows"] if r["phase"] == "measured"]
        if not rows:
            return float("nan")
        total += batch * len(rows) / sum(r["step_s"] for r in rows)
    return total


def loaders(p: dict, device: str | None, cores: int) -> list[dict]:
    """One-replica DP and DDP (nccl) on the GPU, one DP replica on the CPU as the anchor; 2 replicas: not run
    on a one-GPU host."""
    T = "Loaders"
    if device is None:   # no anchor either without CUDA (a CPU training run costs ~25 s on 2 cores)
        return [not_run(T, f"{par} {n} samples/s", NO_CUDA) for n in ("1 replica", "2 replicas")
                for par in ("DP", "DDP")]
    import dataclasses

    from bench.core.machine import devices
    from bench.loaders.system import launch, train
    bundle, model = _bundle(Path(os.environ.get("GPU_CHECK_CACHE", "gpu-check/cache")))
    big = bool(device and device.startswith("cuda"))   # else tiny's shapes: the anchor takes seconds on 2 cores
    spec = train.RunSpec(loader="in-memory", parallel="dp", replicas=1, bundle_dir=bundle, model_dir=model,
                         batch_per_replica=16 if big else 4, steps=4 if big else 3, warmup_steps=1,
                         max_length=128 if big else 32, doc_chars=600 if big else 200, threads_per_replica=cores,
                         seed=SEED)
    cpu = launch.launch(spec, timeout_s=90)
    cpu_sps = _samples_per_s(cpu, spec)
    size = (f"1-layer MiniLM cross-encoder, max length {spec.max_length}, {spec.batch_per_replica} samples per "
            "replica, in-memory loader")
    anchor = f"DP, 1 replica on the CPU ({spec.threads_per_replica} threads)"
    rows, n_gpu = [], devices.gpu_count()   # (0 for the stand-in)
    for par in ("dp", "ddp"):
        s = dataclasses.replace(spec, parallel=par, device=device, threads_per_replica=4 if big else 1,
                                steps=8 if big else 3, warmup_steps=2 if big else 1)
        out = launch.launch(s, timeout_s=90)
        rows.append(row(T, f"{par.upper()} 1 replica samples/s (GPU) vs CPU", _samples_per_s(out, s), anchor, cpu_sps,
                        unit="samples/s", size=size, note=train.implementation(par, device)))
    for par in ("dp", "ddp"):
        rows.append(not_run(T, f"{par.upper()} 2 replicas samples/s",
                            f"needs 2 GPUs ({n_gpu} visible)", size=size) if n_gpu < 2 else
                    not_run(T, f"{par.upper()} 2 replicas samples/s", "two GPUs: run the gpu profile", size=size))
    return rows


# ----------------------------------------------------------------------------- ESPN

def espn(p: dict, device: str | None, cores: int) -> list[dict]:
    """MaxSim of one query (32 token vectors) against 1,000 candidates' BOW vectors (up to 128 x 32, fp16,
    ESPN's re-ranking table): the table resident on the GPU (uploaded once, untimed; the query's upload and
    the scores' read back timed), against MaxSim on the CPU with the table resident too (its best) and with
    the host packing of every call (``maxsim.maxsim``, as the study runs it); scores checked to agree."""
    import torch

    from bench.espn.system import maxsim, maxsim_resident

    T = "ESPN"
    rng = np.random.default_rng(SEED)
    n, t = (200 if device == "cpu" else 1000), 128              # the stand-in (tests): a smaller table
    bow = rng.standard_normal((n, t, 32)).astype(np.float16)
    lens = rng.integers(16, t + 1, size=n)
    q = rng.standard_normal((32, 32)).astype(np.float32)
    cand = np.arange(n)
    torch.set_num_threads(cores)
    reps = 20 if device and device.startswith("cuda") else 3 if device else 1   # without CUDA: the code path
    size = f"1 query x {n} candidates, up to {t} BOW vectors of 32 dims (fp16 table, fp32 products)"
    metric = "MaxSim q/s (GPU, resident fp16 table) vs the faster CPU MaxSim"
    pack = (median_time(lambda: maxsim.maxsim(q, bow, lens, "cpu"), reps, 1 if device else 0, False)[0],
            "packing the table per call (maxsim.maxsim, the study's path)")
    if device is None:
        return [not_run(T, metric, NO_CUDA, f"MaxSim on the CPU ({cores} threads), {pack[1]}", 1 / pack[0],
                        unit="queries/s", size=size, goal=">= 30x", issue="MaxSim")]
    cpu_t = maxsim_resident.ResidentTable(bow, lens, "cpu")
    res_s, res_out = median_time(lambda: cpu_t.score(q, cand)[0].numpy(), reps, 1, False)
    cpus = sorted([(res_s, "table resident (torch, padded)"), pack])
    anchor = f"MaxSim on the CPU ({cores} threads), {cpus[0][1]}"
    gpu_t = maxsim_resident.ResidentTable(bow, lens, device)
    how = gpu_t.score(q, cand)[1]
    gpu_s, gpu_out = median_time(lambda: gpu_t.score(q, cand)[0].cpu().numpy(), reps * 2, 3, device.startswith("cuda"))
    err = float(np.max(np.abs(gpu_out - res_out)) / max(1e-9, float(np.max(np.abs(res_out)))))
    note = f"{how}; query upload and scores' read back included; max relative score difference {err:.1e}"
    return [row(T, metric, 1 / gpu_s, anchor, 1 / cpus[0][0], unit="queries/s", size=size, goal=">= 30x", note=note,
                issue="MaxSim"),
            row(T, "MaxSim q/s (GPU, resident) vs the slower CPU MaxSim", 1 / gpu_s,
                f"MaxSim on the CPU ({cores} threads), {cpus[1][1]}", 1 / cpus[1][0], unit="queries/s", size=size,
                note=note)]


FUNCS = {"trinity-engine": trinity_engine, "trinity-build": trinity_build, "chameleon": chameleon,
         "windve": windve, "loaders": loaders, "espn": espn}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("target", choices=TARGETS)
    ap.add_argument("--out", required=True)
    ap.add_argument("--plan", help="JSON of plan()'s entry for this target")
    ap.add_argument("--cores", type=int, default=0)
    a = ap.parse_args(argv)
    from bench.core.machine import devices

    cuda = devices.cuda_available()
    p = json.loads(a.plan) if a.plan else plan(cuda)[a.target]
    cores = a.cores or devices.cpu_count()
    standin = os.environ.get("GPU_CHECK_STANDIN") == "cpu" and not cuda
    rows = run_target(a.target, p, "cuda" if cuda else "cpu" if standin else None, cores)
    Path(a.out).write_text(json.dumps(rows, indent=1, default=float))
    return 0


def run_target(target: str, p: dict, device: str | None, cores: int) -> list[dict]:
    """``target``'s rows; with ``device="cpu"`` (``GPU_CHECK_STANDIN=cpu``, tests only) the GPU branch runs
    on the CPU to check the code paths, its rows marked as a stand-in, never a GPU measurement, and the
    kernels take their torch paths (Triton's interpreter is switched off: thousands of programs)."""
    old = os.environ.get("TRITON_INTERPRET")
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "0"
    try:
        rows = FUNCS[target](p, device, cores)
    finally:
        if device == "cpu":
            os.environ.pop("TRITON_INTERPRET", None) if old is None else os.environ.update(TRITON_INTERPRET=old)
    if device == "cpu":
        for r in rows:
            if r["status"] == "measured":
                r.update(status="stand-in", why="stand-in: the GPU branch run on the CPU (not a GPU measurement)")
    return rows


if __name__ == "__main__":
    sys.exit(main())

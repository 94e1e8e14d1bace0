"""The GPU targets of ``make gpu-check`` (part "targets"; README "Checking the GPU paths on a lent CUDA host
in one call"): each GPU path of the five studies measured beside its anchor, both in the same run on the
same machine, by calling the studies' own code:

- Trinity (section 3.2): the extend engine (``bench.trinity.system.engine``, CUDA graph where it captures)
  at recall@10 >= 0.95 against exact brute force on the same GPU (target >= 2x) and faiss HNSW on all
  host cores; the graph build (``bench.ann.graph``) on the GPU against faiss's HNSW build;
- Chameleon (section 6.2): the ``gpu`` configuration against exact brute force on the same GPU at nprobe 32,
  batch 1,024 (target >= 3x), its probed-code bytes/s as a share of the GPU's copy bandwidth, and
  ``cpu-gpu`` against ``cpu`` (the paper: 0.91-1.42x), all ``bench.chameleon.system.backends``;
- WindVE (section IV-B): the regression depths (equation 12, ``bench.windve.system.estimator``) of the
  real GPU and CPU encoders: max concurrency without and with CPU offload;
- Moving Stuff Around (section 2): one-replica DataParallel and DDP (nccl) on the GPU
  (``bench.loaders.system.launch``), against one replica on the CPU; two replicas need two GPUs;
- ESPN (equation 1): MaxSim on the GPU against the CPU (``bench.espn.system.maxsim``).

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

TARGETS = ("trinity-engine", "trinity-build", "chameleon", "espn", "windve", "loaders")   # run in this order
LABELS = {"trinity-engine": "Trinity engine", "trinity-build": "Trinity graph build", "chameleon": "Chameleon",
          "espn": "ESPN", "windve": "WindVE", "loaders": "Loaders"}
NO_ANCHOR_WITHOUT_CUDA = ("windve", "loaders")   # their rows need no process where there is no CUDA
NO_CUDA = "not run: no CUDA"
GIB = 1 << 30
D = 128          # SIFT-like vectors
SEED = 20240601

# sizes on a CUDA host (the issue's) and on a machine without one (anchors only, seconds on 2 cores)
CUDA_SIZES = {"trinity-engine": 200_000, "trinity-build": 1_000_000, "chameleon": 1_000_000}
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
        goal: str = "", status: str = "measured", why: str = "", size: str = "", note: str = "") -> dict:
    """One summary row: the measured value beside its anchor (``ratio`` = value / anchor_value)."""
    ratio = (value / anchor_value if isinstance(value, (int, float)) and isinstance(anchor_value, (int, float))
             and anchor_value and not math.isnan(anchor_value) else None)
    return {"target": target, "metric": metric, "value": value, "anchor": anchor, "anchor_value": anchor_value,
            "ratio": ratio, "unit": unit, "goal": goal, "status": status, "why": why, "size": size, "note": note}


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


# ----------------------------------------------------------------------------- Trinity

TOP_M = (16, 32, 48, 64, 96, 128, 192, 256)
EF = (16, 24, 32, 48, 64, 96, 128, 192, 256)
RECALL = 0.95


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


def engine_curve(x, graph, q, gt, device: str, capacity: int, chunk: int, repeats: int = 3) -> list[dict]:
    """(top-M, q/s median, recall@10, mode) ascending in top-M until recall@10 >= 0.95."""
    from bench.trinity.system.engine import ExtendEngine

    cuda, out = device.startswith("cuda"), []
    for m in [m for m in TOP_M if m < len(x)]:
        eng = ExtendEngine(x, graph, capacity=capacity, p=1, top_m_max=m, device=device, seed=SEED,
                           chunk=min(chunk, capacity * graph.shape[1]))
        _engine_run(eng, q[:min(len(q), capacity)], 10, m, cuda)          # warm-up (not timed)
        times = []
        for _ in range(repeats):
            s, ids = _engine_run(eng, q, 10, m, cuda)
            times.append(s)
        out.append({"top_m": m, "qps": len(q) / statistics.median(times), "recall": recall_at(ids, gt, 10),
                    "mode": eng.mode, "why_eager": eng._run.reason or ""})
        del eng
        if out[-1]["recall"] >= RECALL:
            break
    return out


def hnsw(x, q, gt, cores: int, repeats: int = 3) -> tuple[float, list[dict]]:
    """faiss IndexHNSWFlat (the study's M=16, efConstruction=40) on all host cores: build seconds and the
    (efSearch, q/s median, recall@10) curve up to recall@10 >= 0.95."""
    import faiss

    faiss.omp_set_num_threads(cores)
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
    return build_s, curve


def _first(curve: list[dict]) -> dict | None:
    return next((c for c in curve if c["recall"] >= RECALL), None)


def trinity_engine(p: dict, device: str | None, cores: int) -> list[dict]:
    import torch

    from bench.chameleon.system import exact
    from bench.ann import graph as G

    T, n = "Trinity engine", p.get("n")
    gpu, cuda = device is not None, bool(device and device.startswith("cuda"))   # cuda: False for the stand-in
    if n is None:
        return [not_run(T, "q/s at recall@10 >= 0.95", p["skip"], "exact brute force, same GPU")]
    nq = 4096 if cuda else 256
    x, q = sift(n, nq)
    set_threads(cores)
    dev = device or "cpu"
    base_t = exact.Base.from_numpy(x, dev)
    gt = exact_topk(base_t, q, 10, dev)                                   # exact ids (recall's truth)
    ex_s, _ = median_time(lambda: exact_topk(base_t, q, 10, dev), 3, 1, cuda)
    ex_qps = nq / ex_s
    size = f"N={n:,}, {nq} queries, d={D}"
    G.build_graph(x[:min(n, 2000)], G.GraphParams(), SEED, dev)          # warm-up of the build's kernels
    t0 = time.perf_counter()
    graph = G.build_graph(x, G.GraphParams(), SEED, dev)
    if cuda:
        torch.cuda.synchronize()
    build_s = time.perf_counter() - t0
    h_build, h_curve = hnsw(x, q, gt, cores)
    h = _first(h_curve)
    rows = [row(T, "graph build s (GPU) vs faiss HNSW build s (all cores)", build_s if gpu else None,
                f"faiss HNSW M=16 efC=40, {cores} cores", h_build, unit="s", size=f"N={n:,}",
                status="measured" if gpu else "not run", why="" if gpu else NO_CUDA, note=G.build_method(n, G.GraphParams(), dev))]
    h_note = f"HNSW reached recall {h['recall']:.3f} at efSearch {h['ef']}" if h else \
        f"HNSW never reached recall {RECALL} (best {max(c['recall'] for c in h_curve):.3f})"
    if not gpu:
        rows += [not_run(T, "q/s at recall@10 >= 0.95 vs exact brute force (same GPU)", NO_CUDA,
                         "exact brute force, CPU (no GPU here)", ex_qps, goal=">= 2x", unit="q/s", size=size),
                 not_run(T, "q/s at recall@10 >= 0.95 vs faiss HNSW (all cores)", NO_CUDA,
                         f"faiss HNSW, {cores} cores", h["qps"] if h else None, unit="q/s", size=size, note=h_note)]
        return rows
    cap = 1024 if cuda else 64
    curve = engine_curve(x, graph, q, gt, dev, capacity=cap, chunk=4096)
    e = _first(curve)
    mode = f"engine {curve[-1]['mode']}" + (f" ({curve[-1]['why_eager']})" if curve[-1]["why_eager"] else "")
    if e is None:
        why = f"the engine never reached recall@10 {RECALL} (best {max(c['recall'] for c in curve):.3f} at top-M {curve[-1]['top_m']})"
        return rows + [not_run(T, "q/s at recall@10 >= 0.95 vs exact brute force (same GPU)", why,
                               "exact brute force, same GPU", ex_qps, unit="q/s", size=size, note=mode)]
    note = f"top-M {e['top_m']}, recall {e['recall']:.3f}; {mode}; capacity {cap}"
    return rows + [row(T, "q/s at recall@10 >= 0.95 vs exact brute force (same GPU)", e["qps"],
                       "exact brute force, same GPU", ex_qps, goal=">= 2x", unit="q/s", size=size, note=note),
                   row(T, "q/s at recall@10 >= 0.95 vs faiss HNSW (all cores)", e["qps"], f"faiss HNSW, {cores} cores",
                       h["qps"] if h else None, unit="q/s", size=size, note=f"{note}; {h_note}")]


def build_size(n_max: int, n0: int, gpu_s0: float, hnsw_s0: float, budget_s: float) -> tuple[int, str]:
    """The largest build size in (n_max, n_max / 2, ...) down to ``n0`` whose predicted time (the GPU build
    measured at ``n0`` scaled by (n / n0)^2, its exact kNN stage; HNSW's by n / n0 x 1.2) fits ``budget_s``;
    ``n0`` itself when none does. Returns (n, the reason when shrunk)."""
    def cost(n: int) -> float:
        r = n / n0
        return gpu_s0 * r * r + hnsw_s0 * r * 1.2
    n = n_max
    while n > n0 and cost(n) > budget_s:
        n //= 2
    n = max(n, n0)
    if n == n_max:
        return n, ""
    return n, (f"shrunk from {n_max:,} to {n:,} vectors: predicted {cost(n_max):.0f} s for both builds at "
               f"{n_max:,} (from {n0:,}: GPU {gpu_s0:.1f} s, HNSW {hnsw_s0:.1f} s) > the {budget_s:.0f} s budget")


def trinity_build(p: dict, device: str | None, cores: int) -> list[dict]:
    """The graph build at the plan's size (1M where it fits) against faiss HNSW's build, both timed once
    (a build is one-shot) after a small warm-up build of the GPU kernels."""
    import torch

    from bench.ann import graph as G

    T, n = "Trinity graph build", p.get("n")
    if n is None:
        return [not_run(T, "build s (GPU) vs faiss HNSW build s (all cores)", p["skip"])]
    x, _ = sift(n, 0)
    set_threads(cores)
    dev = device or "cpu"
    if device is not None:
        cuda = device.startswith("cuda")
        G.build_graph(x[:min(n // 2, 20_000)], G.GraphParams(), SEED, dev)
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        G.build_graph(x, G.GraphParams(), SEED, dev)
        if cuda:
            torch.cuda.synchronize()
        build_s = time.perf_counter() - t0
    import faiss

    faiss.omp_set_num_threads(cores)
    index = faiss.IndexHNSWFlat(D, 16)
    index.hnsw.efConstruction = 40
    t0 = time.perf_counter()
    index.add(x)
    h_s = time.perf_counter() - t0
    kw = dict(unit="s", size=f"N={n:,}", note=f"kNN stage: {G.build_method(n, G.GraphParams(), dev)}")
    anchor = f"faiss HNSW M=16 efC=40 build, {cores} cores"
    if device is None:
        return [not_run(T, "build s (GPU) vs faiss HNSW build s (all cores)", NO_CUDA, anchor, h_s, **kw)]
    return [row(T, "build s (GPU) vs faiss HNSW build s (all cores)", build_s, anchor, h_s,
                goal="lower is better (ratio < 1: GPU faster)", **kw)]


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


def chameleon(p: dict, device: str | None, cores: int) -> list[dict]:
    """IVF-PQ (nlist = 1000 at 1M, PQ16) searched with nprobe 32, K 100, one batch of 1,024 queries."""
    from bench.ann import ivf
    from bench.chameleon.system import backends, pqscan

    T, n = "Chameleon", p.get("n")
    if n is None:
        return [not_run(T, "gpu scan q/s vs exact brute force (same GPU)", p["skip"])]
    nq, k, nprobe = 1024, 100, 32
    gpu, cuda = device is not None, bool(device and device.startswith("cuda"))   # cuda: False for the stand-in
    x, q = sift(n, nq)
    set_threads(cores)
    nlist = max(64, int(round(math.sqrt(n))))
    index = ivf.build(x, nlist, 16, train_size=min(n, max(nlist * 39, 50_000) if cuda else 4_000), seed=SEED)
    size = f"N={n:,}, IVF{nlist},PQ16, nprobe {nprobe}, K {k}, batch {nq}"

    def timed(name: str, **kw) -> tuple[float, np.ndarray, dict]:
        cfg = backends.make(name, index, nprobe, threads=cores, **kw)
        ok, why = cfg.available()
        if not ok:
            raise RuntimeError(why)
        cfg.search(q, k)                                   # warm-up (layouts, CUDA contexts, kernels)
        outs = [cfg.search(q, k) for _ in range(5 if cuda else 2)]
        return statistics.median(o.seconds for o in outs), outs[-1].I, {**outs[-1].parts,
                                                                        "backend": getattr(cfg, "backend", name)}
    cpu_s, cpu_I, _ = timed("cpu")
    rows = []
    if not gpu:
        rows.append(not_run(T, "gpu scan q/s vs exact brute force (same GPU)", NO_CUDA, goal=">= 3x", unit="q/s",
                            size=size))
        rows.append(not_run(T, "gpu probed-code bytes/s as a share of GPU copy bandwidth", NO_CUDA, size=size))
        rows.append(not_run(T, "cpu-gpu q/s vs cpu q/s (host)", NO_CUDA, "cpu (faiss, all cores)", nq / cpu_s,
                            goal="paper 0.91-1.42x", unit="q/s", size=size))
        return rows
    gpu_s, gpu_I, parts = timed("gpu" if cuda else "torch-cpu")
    ex_s, ex_I, _ = timed("exact-cuda" if cuda else "exact-cpu", base=x)
    rec = recall_at(gpu_I, ex_I, k)
    rows.append(row(T, "gpu scan q/s vs exact brute force (same GPU)", nq / gpu_s, "exact brute force, same GPU",
                    nq / ex_s, goal=">= 3x", unit="q/s", size=size,
                    note=f"backend {parts.get('backend')}; recall@{k} against exact {rec:.3f}"))
    _, lists = pqscan.ivfpq_of(index).quantizer.search(q, nprobe)
    probed = float(pqscan.list_sizes(index)[lists].sum()) * 16     # bytes of m-byte codes read
    bw = copy_bandwidth(device=device)
    rows.append(row(T, "gpu probed-code bytes/s as a share of GPU copy bandwidth", probed / gpu_s,
                    "device-to-device copy bandwidth (read + write)", bw, unit="B/s", size=size,
                    note=f"{probed / 1e9:.2f} GB of codes per batch; bandwidth {bw / 1e12:.2f} TB/s"))
    cg_s, _, cparts = timed("cpu-gpu" if cuda else "cpu")
    rows.append(row(T, "cpu-gpu q/s vs cpu q/s (host)", nq / cg_s, f"cpu (faiss, {cores} cores)", nq / cpu_s,
                    goal="paper 0.91-1.42x", unit="q/s", size=size,
                    note=f"coarse on the GPU {cparts.get('coarse_s', float('nan')) * 1e3:.1f} ms of the batch"))
    return rows


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
    ESPN's re-ranking table), GPU against CPU, the scores checked to agree."""
    import torch

    from bench.espn.system import maxsim

    T = "ESPN"
    rng = np.random.default_rng(SEED)
    n, t = 1000, 128
    bow = rng.standard_normal((n, t, 32)).astype(np.float16)
    lens = rng.integers(16, t + 1, size=n)
    q = rng.standard_normal((32, 32)).astype(np.float32)
    torch.set_num_threads(cores)
    cpu_s, cpu_out = median_time(lambda: maxsim.maxsim(q, bow, lens, "cpu"), 20, 2, False)
    size = f"1 query x {n} candidates, up to {t} BOW vectors of 32 dims (fp16)"
    anchor = f"MaxSim on the CPU ({cores} threads)"
    if device is None:
        return [not_run(T, "MaxSim q/s (GPU) vs CPU", NO_CUDA, anchor, 1 / cpu_s, unit="queries/s", size=size)]
    gpu_s, gpu_out = median_time(lambda: maxsim.maxsim(q, bow, lens, device), 20, 2, device.startswith("cuda"))
    err = float(np.max(np.abs(gpu_out - cpu_out)) / max(1e-9, float(np.max(np.abs(cpu_out)))))
    return [row(T, "MaxSim q/s (GPU) vs CPU", 1 / gpu_s, anchor, 1 / cpu_s, unit="queries/s", size=size,
                note=f"each side includes the host packing of the padded table (numpy), which dominates at this "
                f"size, and on the GPU the host-to-device copy; max relative score difference {err:.1e}")]


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
    on the CPU to check the code paths, its rows marked as a stand-in, never a GPU measurement."""
    rows = FUNCS[target](p, device, cores)
    if device == "cpu":
        for r in rows:
            if r["status"] == "measured":
                r.update(status="stand-in", why="stand-in: the GPU branch run on the CPU (not a GPU measurement)")
    return rows


if __name__ == "__main__":
    sys.exit(main())

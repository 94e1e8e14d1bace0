"""Measurement step ``recall`` (Trinity section 3.2): the extend engine measured offline, all queries waiting
at t=0: recall@k against queries/s at batch 1, with static and with continuous batching while sweeping
top-M (and other parents-per-extend values), beside faiss ``IndexHNSWFlat`` sweeping efSearch and exact
brute force on the engine's device (same data, same threads), in the ann-benchmarks style."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...ann import hnsw
from ...ann.metrics import recall_at_k
from ...core.measuring import measure
from ...core.declaring.params import as_dict
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Params
from ..system import batching, event_loop
from ..system.workload import Request, Source
from . import _cagra, inputs

METHOD = (
    "Engine: all queries waiting at t=0; wall clock (time.perf_counter, CUDA synchronised) around the whole "
    "serving loop (admission, extends, result copies) of {nb} queries (batch 1: {n1}); queries/s = queries / "
    "wall time; {warmup} warm-up run(s) on the first queries recorded as phase=warmup; {repeats} measured runs "
    "per (mode, top-M) split over the step's fresh processes (rows carry `process`: the targets' intervals "
    "resample them first), each process's runs checked to return the same ids. faiss IndexHNSWFlat(M={hm}, efConstruction={hc}) on "
    "the same vectors (float32): one batched search call of the same {nb} queries with {threads} OpenMP "
    "threads per run, same warm-up and repeats. cuVS CAGRA (where CUDA and cuvs are installed): built with the "
    "same graph degrees, itopk_size swept over the same top-M, one batched search per run, cuVS's stream "
    "synchronised before the timer stops. hnswlib is not installed (no wheel on this machine: sdist "
    "only), so it is not run. recall@{k} = |found top-{k} ∩ exact top-{k}| / {k} (bench.ann.metrics).")


@dataclasses.dataclass(frozen=True)
class Bench:
    """What every run of the step shares: the parameters, the data and graph, the seed and the device."""

    p: Params
    v: inputs.Vectors
    seed: int
    device: str
    repeats: int       # this fresh process's share of the measured runs (recall.repeats split over processes)

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")


@dataclasses.dataclass(frozen=True)
class Setting:
    """One engine curve: a batching mode at one top-M over ``n_queries`` queries (``suffix`` names a p)."""

    mode: str
    top_m: int
    n_queries: int
    suffix: str = ""


def _offline(eng, xq, qidx, k, top_m, policy, cuda):
    src = Source([], len(xq), 0)
    for i, q in enumerate(qidx):
        r = Request(i, int(q), k, top_m, 0.0)
        src.heap.append((0.0, i, r))
    ad = event_loop.LiveAdapter(eng, xq)
    with measure.Timer(cuda=cuda) as t:
        done, log = event_loop.run(ad, policy, src)
    done.sort(key=lambda r: r.rid)
    return t.seconds, np.stack([r.ids for r in done]), done, log


def _engine_rows(b: Bench, s: Setting) -> list[dict]:
    p, rp = b.p, b.p.recall
    cap = 1 if s.mode == "batch1" else p.engine.capacity
    eng = inputs.engine(p, b.v, cap, s.top_m, b.seed)
    policy = lambda: batching.make("continuous" if s.mode != "static" else "static", cap, 0.0)  # noqa: E731
    k = min(rp.k, s.top_m)
    rows, first = [], None
    n_warm = min(s.n_queries, max(cap, 8))
    for i in range(rp.warmup + b.repeats):
        phase = "warmup" if i < rp.warmup else "measured"
        qidx = np.arange(n_warm if phase == "warmup" else s.n_queries)
        wall, ids, done, log = _offline(eng, b.v.queries, qidx, k, s.top_m, policy(), b.cuda)
        if phase == "measured":
            if first is not None and not np.array_equal(first, ids):
                raise RuntimeError(f"{s.mode} top-M={s.top_m}: repeated runs returned different ids")
            first = ids
        rows.append({"system": f"engine-{s.mode}{s.suffix}", "mode": s.mode, "param": "top_m", "value": s.top_m,
                     "p": p.engine.p, "phase": phase,
                     "repeat": i, "n_queries": len(qidx), "capacity": cap, "wall_s": wall, "qps": len(qidx) / wall,
                     f"recall_at_{rp.k}": recall_at_k(ids, b.v.gt[qidx], k) if k == rp.k else np.nan,
                     "extends_mean": float(np.mean([r.extends for r in done])),
                     "lane_util": float(np.sum(log.fill) / (np.sum(log.launches) * eng.lanes)),
                     "threads": p.engine.threads, "source": "measured"})
    return rows


def _timed_rows(t: measure.Timings, nq: int, rec: float, k: int, threads: int, **cols) -> list[dict]:
    return [{**cols, "phase": phase, "repeat": i, "n_queries": nq, "capacity": nq, "wall_s": s, "qps": nq / s,
             f"recall_at_{k}": rec, "threads": threads, "source": "measured"}
            for phase, times in (("warmup", t.warmup), ("measured", t.runs)) for i, s in enumerate(times)]


def _hnsw_rows(b: Bench, nq: int) -> tuple[list[dict], dict]:
    rp, h = b.p.recall, b.p.recall.hnsw
    index, build_s = hnsw.build(b.v.base, h.M, h.ef_construction)
    q = b.v.queries[:nq]
    rows = []
    for ef in h.ef_search:
        hnsw.set_ef_search(index, ef)
        t = measure.repeat(lambda: hnsw.search(index, q, rp.k), repeats=b.repeats, warmup=rp.warmup,
                           keep_results=True)
        rec = recall_at_k(t.results[0], b.v.gt[:nq], rp.k)
        rows += _timed_rows(t, nq, rec, rp.k, b.p.engine.threads, system="faiss-hnsw", mode="batched",
                            param="ef_search", value=ef)
    return rows, {"hnsw_build_s": build_s, "hnsw_M": h.M, "hnsw_ef_construction": h.ef_construction}


def _exact_rows(b: Bench, nq: int) -> list[dict]:
    """Exact brute force on the engine's device (one matmul + topk per chunk of queries): the anchor a
    graph engine must beat (recall 1 by construction); CUDA synchronised before each timer stops."""
    import torch

    rp, k, dev = b.p.recall, b.p.recall.k, b.device
    xb = torch.as_tensor(np.ascontiguousarray(b.v.base, dtype=np.float32), device=dev)
    nb2 = (xb * xb).sum(1)
    q = torch.as_tensor(np.ascontiguousarray(b.v.queries[:nq], dtype=np.float32), device=dev)

    def search():
        out = []
        for c in range(0, nq, 1024):
            qc = q[c:c + 1024]
            d = nb2[None, :] - 2 * qc @ xb.T      # + |q|^2, which does not change the order
            out.append(torch.topk(d, k, dim=1, largest=False).indices)
        return torch.cat(out).cpu().numpy()
    t = measure.repeat(search, repeats=b.repeats, warmup=rp.warmup, keep_results=True, cuda=b.cuda)
    rec = recall_at_k(t.results[0], b.v.gt[:nq], k)
    return _timed_rows(t, nq, rec, k, b.p.engine.threads, system=f"exact-{'cuda' if b.cuda else 'cpu'}",
                       mode="batched", param="exact", value=0)


NOT_RUN = [{"system": "hnswlib", "mode": "batched", "param": "ef", "phase": "measured", "source": "not_run",
            "why": "hnswlib not installed: no wheel on this machine (sdist only)"}]


def _all_rows(b: Bench, nb: int, n1: int) -> tuple[list[dict], dict]:
    """Every engine curve (modes x top-M, then each other p in continuous mode), HNSW, exact, not-run rows."""
    rp, rows = b.p.recall, []
    for mode in rp.modes:
        for m in rp.top_m:
            rows += _engine_rows(b, Setting(mode, m, n1 if mode == "batch1" else nb))
    for pv in [v for v in rp.p_values if v != b.p.engine.p]:   # parents per extend, swept
        bp = dataclasses.replace(b, p=dataclasses.replace(b.p, engine=dataclasses.replace(b.p.engine, p=pv)))
        for m in rp.top_m:
            rows += _engine_rows(bp, Setting("continuous", m, nb, suffix=f"-p{pv}"))
    hrows, hprov = _hnsw_rows(b, nb)
    crows, cprov = _cagra_rows(b, nb)
    return rows + hrows + _exact_rows(b, nb) + crows + NOT_RUN, {**hprov, **cprov}


def _cagra_rows(b: Bench, nq: int) -> tuple[list[dict], dict]:
    """cuVS CAGRA, the reference curve, where CUDA and cuvs are here; else one not-run row saying why."""
    why = _cagra.why_not() if b.cuda else "cuVS CAGRA reference needs the engine on CUDA"
    if why:
        return [{"system": _cagra.SYSTEM, "mode": "batched", "param": "itopk", "phase": "measured",
                 "source": "not_run", "why": why}], {}
    rp, g = b.p.recall, b.p.graph
    rows, prov = _cagra.rows(b.v.base, b.v.queries[:nq], b.v.gt, degree=g.degree, knn_degree=g.knn_degree,
                             itopk=rp.top_m, k=rp.k, p=b.p.engine.p, repeats=b.repeats, warmup=rp.warmup)
    return [{**r, "threads": b.p.engine.threads} for r in rows], prov


@step("recall", needs=("manifest", "graph"), processes=True,
      keys=("graph", "engine", "recall", "workload", "load", "scheduler"))
def recall(ctx: Context) -> Result:
    p: Params = ctx.params
    rp = p.recall
    threads = p.engine.threads
    measure.set_threads(threads)
    v = inputs.loaded(p, ctx.input("manifest"), ctx.input("graph"))
    b = Bench(p, v, ctx.seed, inputs.device(p), ctx.share(rp.repeats))
    nb, n1 = min(rp.batch_queries, len(v.queries)), min(rp.batch1_queries, len(v.queries))
    rows, hprov = _all_rows(b, nb, n1)
    df = pd.DataFrame(rows)
    df.insert(0, "dataset", v.ds.name)
    summ = (df[(df.phase == "measured") & (df.source == "measured")]
            .groupby(["dataset", "system", "value"]).agg(qps_median=("qps", "median"), qps_min=("qps", "min"),
                                                         qps_max=("qps", "max"),
                                                         recall=(f"recall_at_{rp.k}", "first")).reset_index())
    return Result(records=df, summary=summ, dataset_id=f"{v.ds.name} ({v.ds.id})", dataset_checksum=v.ds.checksum,
                  method=METHOD.format(nb=nb, n1=n1, warmup=rp.warmup, repeats=ctx.shared_total(rp.repeats), hm=rp.hnsw.M,
                                       hc=rp.hnsw.ef_construction, threads=threads, k=rp.k),
                  provenance={"graph": v.side, "engine": as_dict(p.engine), "device": b.device, **hprov})

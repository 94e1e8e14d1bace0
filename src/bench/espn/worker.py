"""The ``e2e-worker`` internal verb (:mod:`bench.espn.verbs`), not a step: one end-to-end configuration of
the ``e2e`` step (paper Tables 4/5, Figure 1) in its own process. Load the build, the
encoder and the query texts, prime lazily allocated state, then join the memory cap (``cgroup-v1`` or
``cgroup-v2``; and, for the emulated slower SSD, the read throttle: cgroup blkio (v1) or io.max (v2)) and
time every query of each back end, cold at each run's start."""
from __future__ import annotations

import contextlib
import dataclasses
import time

import numpy as np
import pandas as pd

from .params import Params
from .steps import inputs
from .system import backends, encoders, memory_budget as memory, slow_ssd
from .system.maxsim import resolve_device
from .system.pipeline import Retriever


@dataclasses.dataclass
class Setup:
    b: inputs.Build
    params: Params
    enc: object
    texts: list[str]
    device: str
    nq: int
    label: str
    budget: dict | None
    mech: str
    cap: memory.CgroupCap | None
    throttle: slow_ssd.BlkioThrottle | None
    bg_engine: str | None


def _setup(build_dir, params: Params, budget, label, mech, threads, blkio_iops) -> Setup:
    from ..core import measure
    from ..data import prepared

    measure.set_threads(threads)
    inputs.set_maxsim_threads(params)
    b = inputs.load_build(build_dir)
    enc = encoders.load_encoder(b.meta["encoder"], inputs.paths(build_dir)["encoder"])
    texts = prepared.load_text(b.meta["manifest"]).queries
    cap = None
    if budget is not None and memory.is_cgroup(mech):
        cap = memory.CgroupCap(budget["budget_embedding_bytes"] + budget["headroom_bytes"])
    throttle = slow_ssd.BlkioThrottle(b.table, blkio_iops) if blkio_iops else None
    return Setup(b, params, enc, texts, resolve_device(params.device), min(params.e2e_queries, len(b.qids)),
                 label, budget, mech, cap, throttle, inputs.prefetch_engine(params))


def _open(s: Setup, kind: str):
    """The store and retriever of one back end (direct_prefetch: direct reads + the prefetcher)."""
    p = s.params
    pre = kind == "direct_prefetch"
    store = backends.open_store("direct" if pre else kind, s.b.table, s.b.off, depth=p.io_depth,
                                engine=p.io_engine, background_engine=s.bg_engine if pre else None)
    r = Retriever(s.b.index, store, p.k, min(p.nprobe, s.b.index.nlist), p.k,
                  p.prefetch_step if pre else None, s.device, p.bow_weight, p.prefetch_chunk)
    return store, r


def _source(s: Setup) -> str:
    if s.throttle is not None:
        return "emulated"  # measured on an emulated slower SSD
    return "measured" if memory.is_cgroup(s.mech) or s.budget is None else "emulated"


def _row(s: Setup, kind, phase, rep, i, enc_s, res) -> dict:
    pre = kind == "direct_prefetch"
    tm = res.timings
    return {"backend": kind, "budget": s.label, **(s.budget or {}), "phase": phase, "repeat": rep,
            "query_id": s.b.qids[i], "encode_s": enc_s, **{f"{k}_s": v for k, v in tm.items() if k != "total"},
            "total_s": enc_s + tm["total"], "hits": res.hits, "needed": res.needed,
            "hit_rate": res.hits / res.needed if pre else np.nan, "n_crit_reads": res.extra["n_crit_reads"],
            "n_prefetch_reads": res.extra["n_prefetch_reads"], "status": "ok", "reason": "",
            "source": _source(s), "mechanism": s.mech if s.budget else "none",
            "ssd": "emulated" if s.throttle else "native",
            "ssd_read_iops": float(s.throttle.iops) if s.throttle else np.nan,
            "prefetch_engine": (s.bg_engine or backends.pick_engine(s.params.io_engine)) if pre else "",
            "device": s.device, "encoder": s.b.meta["encoder"]}


def _one_run(s: Setup, kind, store, r, phase, rep) -> tuple[list[dict], int]:
    """Every query once (a warm-up pass: the first ``warmup_queries``), from a cold table; with
    page-cache eviction as the budget, evict when over."""
    emb_budget = s.budget["budget_embedding_bytes"] if s.budget else None
    rows, evictions = [], 0
    store.cold()
    if s.cap is not None:
        s.cap.reset_peak()
    n = min(s.nq, s.params.warmup_queries or s.nq) if phase == "warmup" else s.nq
    for i in range(n):
        t0 = time.perf_counter()
        c, t = s.enc.encode_queries([s.texts[i]])
        enc_s = time.perf_counter() - t0
        res = r.run(c, t)
        if emb_budget is not None and s.mech == "fadvise-evict" and kind != "memory":
            if backends.resident_bytes(s.b.table) > emb_budget:
                store.cold()
                evictions += 1
        rows.append(_row(s, kind, phase, rep, i, enc_s, res))
    return rows, evictions


def _measure(s: Setup, kind: str) -> list[dict]:
    store, r = _open(s, kind)
    rows, evictions = [], 0
    for phase, reps in (("warmup", s.params.warmup), ("measured", s.params.repeats)):
        for rep in range(reps):
            got, ev = _one_run(s, kind, store, r, phase, rep)
            evictions += ev
            extra = {"resident_table_bytes": backends.resident_bytes(s.b.table), "fadvise_evictions": evictions,
                     **(s.cap.stats() if s.cap is not None else {})}
            rows += [{**row, **extra} for row in got]
    store.close()
    return rows


def _prime(s: Setup, kinds) -> None:
    """Initialise lazily allocated state (torch, thread pools, malloc arenas) outside the cap."""
    for k in kinds:
        store, r = _open(s, k)
        for i in range(min(2, s.nq)):
            r.run(*s.enc.encode_queries([s.texts[i]]))
        store.cold()
        store.close()


def run(build_dir, params: Params, budget, label, kinds, mech, threads, out, blkio_iops=None) -> None:
    """The worker: rows of every back end in ``kinds`` under one budget, written to ``out`` (it draws
    nothing at random; the seed is the parent's)."""
    s = _setup(build_dir, params, budget, label, mech, threads, blkio_iops)
    if s.cap is not None:
        _prime(s, kinds)
    rows = []
    with contextlib.ExitStack() as stack:
        if s.cap is not None:
            stack.enter_context(s.cap)
        if s.throttle is not None:
            stack.enter_context(s.throttle)
        for k in kinds:
            rows += _measure(s, k)
    pd.DataFrame(rows).to_parquet(out)

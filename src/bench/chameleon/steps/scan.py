"""Chameleon section 3.2 (the CPU scans PQ codes at about 1.0-1.2 GB/s per core): the ``scan`` step. The
project's torch PQ scan (``system.pqscan``) against faiss's scan of the same probed lists: time ratio
(alternating pairs), GB/s per core, identical top-K; the torch scan on CUDA where there is one."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.machine import devices

from ...core.measuring import measure, records
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Params
from ..system import pqscan
from .inputs import load


def _alternating(run_f, run_t, repeats: int):
    """faiss and torch runs alternate, so a change of machine load hits both alike (one warm-up each)."""
    fa = measure.Timings(warmup=[], runs=[])
    tt = measure.Timings(warmup=[], runs=[])
    for i in range(1 + repeats):
        for t, fn in ((fa, run_f), (tt, run_t)):
            one = measure.repeat(fn, 1, warmup=0, keep_results=(i == 0))
            (t.warmup if i == 0 else t.runs).append(one.runs[0])
            if i == 0:
                t.results.append(one.results[0])
    return fa, tt


def _cpu_rows(fa, tt, ov, base: dict, nbytes: int, nthreads: int) -> list[dict]:
    rows = []
    for impl, t in (("faiss", fa), ("torch", tt)):
        for r, s in enumerate(t.runs):
            rows.append({**base, "impl": impl, "device": "cpu", "source": "measured", "run": r, "seconds": s,
                         "gbps_per_core": nbytes / s / 1e9 / nthreads, "warmup_s": t.warmup[0],
                         "overlap_mean": ov.mean(), "identical_queries": float((ov == 1.0).mean()),
                         "pair_ratio_torch_over_faiss": tt.runs[r] / fa.runs[r]})
    return rows


def _cuda_rows(layout, xq, Iq, k, Dq_t, repeats, faiss_ids, base) -> list[dict]:
    if not devices.cuda_available():
        return [{**base, "impl": "torch", "device": "cuda", "source": "not_run", "run": 0, "seconds": np.nan,
                 "gbps_per_core": np.nan, "warmup_s": np.nan, "overlap_mean": np.nan, "identical_queries": np.nan,
                 "pair_ratio_torch_over_faiss": np.nan, "why": "no CUDA on this machine"}]
    lay_c = layout.to("cuda")
    tc = measure.repeat(lambda: pqscan.scan(lay_c, xq, Iq, k, coarse_dist=Dq_t), repeats, warmup=1,
                        cuda=True, keep_results=True)
    ovc = pqscan.overlap(faiss_ids, tc.results[0][1].cpu().numpy())
    return [{**base, "impl": "torch", "device": "cuda", "source": "measured", "run": r, "seconds": s,
             "gbps_per_core": np.nan, "warmup_s": tc.warmup[0], "overlap_mean": ovc.mean(),
             "identical_queries": float((ovc == 1.0).mean()), "pair_ratio_torch_over_faiss": np.nan}
            for r, s in enumerate(tc.runs)]


SCAN_RATIO_MAX, GBPS_MIN = 2.0, 1.0   # the thresholds of the two targets the scan's timings decide


def decided(rows: pd.DataFrame, params) -> bool:
    """Stage 1 of the two-stage design (:mod:`bench.core.measuring.sequential`): do this dataset's intervals, drawn at
    the design's level over the fresh processes, already clear both targets (torch within 2x of faiss, faiss
    >= 1.0 GB/s per core)? When not, a second stage of as many processes runs."""
    from ...core.judging import claims
    from ...core.judging import intervals
    from ...core.measuring import sequential

    m = rows[(rows.phase == "measured") & (rows.device == "cpu")] if "phase" in rows else rows[rows.device == "cpu"]
    t, f = m[m.impl == "torch"], m[m.impl == "faiss"]
    if t.empty or f.empty:
        return True
    _, lo, hi = intervals.bootstrap_ci(t.pair_ratio_torch_over_faiss, level=sequential.LEVEL,
                                       groups=intervals.process_of(t, by=("impl",)))
    _, glo, ghi = intervals.bootstrap_ci(f.gbps_per_core, level=sequential.LEVEL,
                                         groups=intervals.process_of(f, by=("impl",)))
    return (claims.clears(SCAN_RATIO_MAX, "<=")(lo, hi) and claims.clears(GBPS_MIN)(glo, ghi))


@step("scan", needs=("manifest", "index"), processes=True, decide=decided,
      keys=("pq_m", "nlist", "nprobe", "k", "scan"))
def scan(ctx: Context) -> Result:
    """Torch PQ scan vs faiss scan of the same lists, on ``scan.threads`` threads (1 = per core)."""
    import torch

    p: Params = ctx.params
    ds, idx = load(ctx)
    dataset = ctx.dataset or ds.name
    nthreads = p.scan.threads
    settings = measure.set_threads(nthreads)
    xq = np.ascontiguousarray(ds.queries[: p.scan.n_queries], dtype=np.float32)
    ivf = pqscan.ivfpq_of(idx)
    ivf.nprobe = p.nprobe
    layout = pqscan.IVFPQLayout.from_faiss(idx, "cpu")
    Dq, Iq = ivf.quantizer.search(xq, p.nprobe)
    pqscan.check_k(layout.sizes[Iq].sum(1), p.k)
    nbytes = layout.code_bytes(Iq)
    Dq_t = torch.from_numpy(Dq)
    fa, tt = _alternating(lambda: pqscan.faiss_scan(idx, xq, Iq, Dq, p.k),
                          lambda: pqscan.scan(layout, xq, Iq, p.k, coarse_dist=Dq_t), ctx.share(p.scan.repeats))
    ov = pqscan.overlap(fa.results[0][1], tt.results[0][1].numpy())
    base = {"dataset": dataset, "threads": nthreads, "n_queries": len(xq), "bytes": nbytes, "m": layout.m,
            "nprobe": p.nprobe, "probed_lists": int((Iq >= 0).sum())}   # (query, list) pairs scanned
    rows = _cpu_rows(fa, tt, ov, base, nbytes, nthreads)
    rows += _cuda_rows(layout, xq, Iq, p.k, Dq_t, ctx.share(p.scan.repeats), fa.results[0][1], base)
    df = pd.DataFrame(rows)
    summary = records.summarize_runs(df[df.source == "measured"], ["dataset", "impl", "device"], "seconds")
    return Result(
        records=df, summary=summary, dataset_id=f"{dataset} ({ds.id})", dataset_checksum=ds.checksum,
        method=f"PQ scan only (coarse assignment precomputed, identical lists for both): faiss "
               f"search_preassigned vs the torch kernel (lookup tables, gather-sum, top-K) on {nthreads} "
               f"thread(s); {ctx.shared_total(p.scan.repeats)} timed runs of each in {ctx.processes} fresh "
               f"process(es) of the step, each after 1 warm-up, faiss and torch alternating "
               f"(the ratio is the median of per-pair ratios); GB/s = bytes of m-byte PQ codes scanned / "
               f"time / threads.",
        provenance={"scan_thread_settings": settings})

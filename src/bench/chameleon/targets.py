"""Chameleon's target rows (the harness's own thresholds, ``target-*``; implementation checks, ``check-*``):
the torch PQ scan against faiss and faiss's GB/s per core (section 2.3's "roughly 1 GB/s per core"), the
ChamVS performance model against the authors' archived points, the binomial L1 queue lengths against the
authors' (section 4.2.2), and the memory nodes over TCP (section 4.3)."""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from ..core.judging import claims, fidelity, intervals
from ..core.measuring import sequential
from . import analysis, paper_values, wording
from .system import fpga_model, priority_queue

STUDY = "chameleon"
MODEL_INPUTS = (*fpga_model.PAPER_INPUTS, *paper_values.PAPER_INPUTS)
GBPS_DEFINITION = fidelity.Definition(
    paper="Even utilizing the state-of-the-art SIMD-optimized CPU implementation [1], the throughput peaks at "
          "roughly 1 GB/s per core when scanning PQ codes (1.2 GB/s on Intel(R) Xeon(R) Platinum 8259CL @ 2.50GHz)",
    where="section 2.3",
    ours="m-byte PQ codes faiss's search_preassigned scans per second per thread, the median over every "
         "dataset's timed scans, a hierarchical bootstrap over the fresh processes (per dataset) then the scans")


KSUB = 256                  # entries per sub-quantizer of an 8-bit PQ (the torch scan and faiss's here)
SCAN_SETUP_BAR = 10.0       # code lookups a probed list at least 10x its lookup table's entries: setup <= ~10%
PAPER_CODES_PER_LIST = paper_values.PAPER_N / paper_values.PAPER_NLIST   # ~30.5k codes a list (1B over 32,768)
LLC_PREMISE = "PQ codes beyond the CPU's last-level cache"


def scan_setup_premise(f: pd.DataFrame, provenance: dict | None = None) -> claims.Premise:
    """Section 2.3's "about 1 GB/s per core" is a steady scan: each probed list holds ~30k codes (1B vectors
    over 32,768 lists) streamed from memory, so the per-(query, list) lookup-table setup (256 x m entries) is
    a small share of the work. Tested on our records (exact given the index and the queries): the codes
    scanned per probed list, whose m lookups each, against the table's 256 x m entries; at least
    :data:`SCAN_SETUP_BAR` times, else the GB/s measures table setup as much as the scan."""
    name = "each probed list's scan outweighs its lookup-table setup"
    paper = (f"~{PAPER_CODES_PER_LIST:,.0f} codes a list (1B vectors over {paper_values.PAPER_NLIST:,} lists) = "
             f"{PAPER_CODES_PER_LIST / KSUB:.0f}x the {KSUB} x m table entries")
    nprobe = ((provenance or {}).get("config") or {}).get("nprobe")
    if f.empty or not {"bytes", "m"} <= set(f) or ("probed_lists" not in f and not nprobe):
        return claims.premise(name, None, SCAN_SETUP_BAR, what="codes scanned per probed list", paper=paper)
    g = f.groupby("dataset").first()
    lists = g.probed_lists if "probed_lists" in g else g.n_queries * float(nprobe)
    per = (g["bytes"] / g.m / lists).astype(float)
    worst = str(per.idxmin())
    ratio = float(per.min()) / KSUB
    return claims.premise(
        name, ratio, SCAN_SETUP_BAR, ">=", unit="x", paper=paper,
        what=f"code lookups per probed list over its lookup table's entries, codes x m / ({KSUB} x m), "
             f"{per.min():.0f} codes a list / {KSUB} ({worst}, the smallest of: "
             + ", ".join(f"{d} {v:.0f}" for d, v in per.items()) + ")",
        exact="the codes in the probed lists, fixed by the index and the queries (no timing)")


def _scan_scale(m: pd.DataFrame, sc: pd.DataFrame) -> str:
    """The scan rows' scale: queries, threads and what the profile shrank (the datasets scanned among it)."""
    ran = {"datasets": ("datasets scanned", sorted(sc.dataset.unique()))} if "dataset" in sc else None
    shrank = wording.shrunk_of(sc, "scan", wording.SCAN_SETTINGS, ran)
    return f"{int(m.n_queries.iloc[0])} queries per dataset, {int(m.threads.iloc[0])} thread(s), {shrank}"


def scan_targets(sc: pd.DataFrame, premises: Sequence[claims.Premise] = ()) -> list[claims.Claim]:
    """The scan targets; ``premises``: the search rows' scale premises, of which the GB/s row carries the
    one on the codes' size against the last-level cache (section 2.3's scan streams them from memory)."""
    busy = claims.busy(sc)
    m = analysis.scan_measured(sc)
    m = m[m.device == "cpu"]
    t, f = m[m.impl == "torch"], m[m.impl == "faiss"]
    level = sequential.level_of(m)   # 0.975 a look where the scan ran the two-stage design
    per = {ds: intervals.bootstrap_ci(g.pair_ratio_torch_over_faiss, groups=analysis.clusters(g), level=level)
           for ds, g in t.groupby("dataset")}
    gbps = intervals.bootstrap_ci(f.gbps_per_core, groups=analysis.clusters(f), level=level)
    scale = _scan_scale(m, sc)
    design = sequential.stages_text(m)
    design = f"; {design} ({sequential.METHOD})" if design else ""
    ov = t.groupby("dataset").overlap_mean.first()
    return [
        claims.claim(STUDY, "target-torch-scan-within-2x", "torch PQ scan on CPU within 2x of faiss's scan time "
                     "(same lists), every dataset", "— (target)",
                     configs=[claims.Config.of(ds, e, busy) for ds, e in per.items()], threshold=2.0,
                     direction="<=", unit="x", scale=scale, machine_busy=busy, needs=(),
                     reason=f"median of alternating torch/faiss pairs per dataset ({intervals.processes_text(t)}, "
                            f"clustered by process and dataset){design}"),
        claims.claim(STUDY, "target-scan-gbps-per-core", "CPU PQ-scan throughput about 1.0-1.2 GB/s per core "
                     "(faiss, section 2.3)", "1.0-1.2 GB/s/core", estimate=gbps, threshold=1.0,
                     unit="GB/s/core", scale=scale + "; this machine's CPU, not the paper's Xeon 8259CL",
                     machine_busy=busy, needs=(), definition=GBPS_DEFINITION,
                     premises=[scan_setup_premise(f, sc.attrs.get("provenance")),
                               *(p for p in premises if p.name == LLC_PREMISE)],
                     reason="faiss search_preassigned, m-byte codes scanned / time / threads, the median over all "
                            f"datasets' scans, clusters = (fresh process, dataset): {gbps.clusters} of them; per "
                            "dataset faiss " + ", ".join(f"{d} {v:.2f}" for d, v in
                                                          f.groupby("dataset").gbps_per_core.median().items())
                            + ", torch " + ", ".join(f"{d} {v:.2f}" for d, v in
                                                     t.groupby("dataset").gbps_per_core.median().items()) + design),
        claims.claim(STUDY, "target-torch-scan-identical", "torch scan top-100 identical to faiss (>= 99% overlap)",
                     "— (target)", ours=float(ov.min()), ci=(float(ov.min()), float(ov.min())), threshold=0.99,
                     unit="overlap", scale=scale, needs=(), quality="a top-K overlap: no timing",
                     interval="exact: the overlap of two deterministic scans of the same lists (same seed, no "
                              "timing), the smallest over the datasets",
                     reason="mean top-K id overlap per dataset (deterministic): "
                            + ", ".join(f"{d} {v * 100:.2f}%" for d, v in ov.items())),
    ]


def _model_target(md: pd.DataFrame) -> claims.Claim:
    val = analysis.uncalibrated(md)
    share = float(analysis.within_tolerance(val).mean())
    thr, lat = val[val.kind == "qps"], val[val.kind != "qps"]
    frac = lambda d: f"{int(analysis.within_tolerance(d).sum())}/{len(d)}"  # noqa: E731
    return claims.claim(
        STUDY, "target-model-within-20pct", "performance model within 20% of the authors' archived FPGA points it "
        "was not calibrated on", "— (target; the authors' points)", ours=share, ci=(share, share), threshold=1.0,
        unit="of points", source="modelled", needs=("fpga",), fixed_by=MODEL_INPUTS,
        interval="exact: a deterministic model against fixed points",
        judged_on="no profile here: the model is checked against the authors' FPGA measurements, which it is "
                  "calibrated on three of; an FPGA of our own would test it",
        scale=f"the authors' 1B-vector points ({len(val)} uncalibrated, {int(md.calibration.sum())} calibration)",
        reason=f"a sanity check of the model, set by the numbers it takes from the paper and the authors' archive "
               f"(it would read {claims.judge(share, share, 1.0)}); throughput {frac(thr)}, latency {frac(lat)} (median |error| {lat.rel_error.abs().median() * 100:.1f}%,"
               f" max {lat.rel_error.abs().max() * 100:.1f}%); by PQ size: m=16 {frac(lat[lat.m == 16])}, m>=32 "
               f"{frac(lat[lat.m >= 32])}")


def _l1_target(q: pd.DataFrame) -> claims.Claim:
    f8 = analysis.fig8_authors(q)
    one = float((f8.analytic_one_queue_per_unit == f8.authors).mean())
    two = ", ".join(f"m={int(r.m)}: {int(r.analytic_two_queues_per_unit)}" for r in f8.itertuples())
    return claims.claim(
        STUDY, "target-queue-l1-lengths", "the binomial model counting ONE L1 queue per decoding unit gives the "
        "authors' L1 lengths 10/15/23/38 (m = 8/16/32/64); the paper's design pairs TWO with each unit",
        "10/15/23/38", ours=one, ci=(one, one), threshold=1.0, unit="of lengths", source="modelled", needs=(),
        verdict=claims.judge(one, one, 1.0), interval="exact: arithmetic of the binomial model",
        scale=f"analytic (no data): K = {paper_values.PAPER_K}, units = 4 channels x 64 B / m "
              f"({', '.join(f'm={m}: {priority_queue.units_for_m(m)}' for m in paper_values.L1_LENGTHS)})",
        reason="the authors' lengths are what the binomial model (P(L)^queues >= 0.99) gives with one L1 queue "
               "per decoding unit, as section 4.2.2's example counts ('given 16 level-one queues' for m = 16, "
               "Figure 7); section 4.2.1 pairs two L1 queues with each unit, and at that count the model asks "
               f"for {two}: the authors' lengths are one doubling of queues conservative. Per m, one queue per "
               "unit: " + ", ".join(f"m={int(r.m)}: {int(r.analytic_one_queue_per_unit)} (authors {int(r.authors)})"
                                    for r in f8.itertuples()))


def model_targets(md: pd.DataFrame, q: pd.DataFrame) -> list[claims.Claim]:
    return [_model_target(md), _l1_target(q)]


def nodes_targets(nd: pd.DataFrame) -> list[claims.Claim]:
    chk = analysis.node_checks(nd)
    ident = chk[chk.check.str.startswith("identical")]
    ok = float(ident.passed.all()) if len(ident) else float("nan")
    faults = chk[~chk.check.str.startswith("identical")]
    share = float(faults.passed.mean()) if len(faults) else float("nan")
    n = int(nd.n_nodes.iloc[0])
    return [
        claims.claim(STUDY, "target-nodes-identical", f"{n} memory nodes over TCP return the single-process top-K",
                     "— (target)", ours=ok, ci=(ok, ok), threshold=1.0, unit="pass", scale=f"{n} local node processes",
                     needs=(), quality="a comparison of top-K ids: no timing",
                     interval="exact: a pass/fail comparison of top-K ids, deterministic given the seed",
                     reason="; ".join(ident.detail)),
        claims.claim(STUDY, "check-nodes-fault-handling", "memory nodes: a node down, a late node and a malformed "
                     "message each fail with a clear error (implementation check)", "— (check)", ours=share,
                     ci=(share, share), threshold=1.0, unit="of checks", scale=f"{n} local node processes",
                     needs=(), quality="pass/fail checks of the error paths",
                     interval="exact: pass/fail checks of the error paths, each deterministic",
                     reason="; ".join(f"{r.check}: {'pass' if r.passed else 'FAIL'}" for r in faults.itertuples())),
    ]

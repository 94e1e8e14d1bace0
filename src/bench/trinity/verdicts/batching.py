"""Trinity's continuous-batching rows (section 3.2), computed on the replayed load grid (the ``load`` records)
with the replay's error against the live engine (the ``trace`` step's check points) carried in every
interval: the paper's two claims (the distance stage kept busy; smoother P50/P95), which need a GPU (the
replay is drawn beside them, never judges them), and the harness's targets (sustained load under a p95
bound, lane utilisation at high load), judged on the replay."""
from __future__ import annotations

import pandas as pd

from ...core.judging import claims, fidelity, intervals
from .. import analysis
from ..params import Params
from . import paper
from .common import (PAIRED, RUN_KEYS, STUDY, busy, clusters, of_dataset, paired, replay_error, shrunk, traces_words,
                     widened)

TRACE_WORK = (("trace_queries",), ("trace_calibration",))
# The two section 3.2 claims are about a GPU: the busy claim's quantity is the distance kernel's HBM throughput
# and SM utilization, the smoothing claim's mechanism a captured CUDA Graph amortising the driver's launch
# overhead. The replay (a virtual clock on the CPU) has neither, so it is drawn beside them, never judges them.
NEEDS = ("gpu",)
BUSY_JUDGED_ON = ("a CUDA GPU with the fixed-shape distance kernel's SM utilization and HBM throughput read by a "
                  "profiler, continuous against static batching (no profile here reads those counters)")
SMOOTH_JUDGED_ON = ("a CUDA GPU serving the load grid live with captured CUDA Graph launches (the load grid is "
                    "a replay in every profile here)")


def _sustained(g: pd.DataFrame, bound: float) -> tuple[float, claims.Search]:
    """One seed's sustained load under the p95 bound (:func:`..analysis.sustained`) and the search behind
    it: bracketed only where a load met the bound and the next listed load did not."""
    s = claims.bracket([(float(r.load_frac), bool(r.p95_s <= bound)) for r in g.itertuples()],
                       cut_off="the highest listed load")
    return analysis.sustained(g, bound), s


def _searched(g: pd.DataFrame, bound: float) -> tuple[dict, dict]:
    """Per policy, each seed's sustained load (with its trace columns, for pairing), and the first seed's
    search that did not bracket (None when all did)."""
    out, open_ = {}, {}
    keep = [c for c in ("trace_process", "trace_uid", "process_uid", "dataset") if c in g]
    for pol in ("static", "continuous"):
        rows, open_[pol] = [], None
        for rep, gr in g[g.policy == pol].groupby("repeat"):
            rps, s = _sustained(gr, bound)
            open_[pol] = open_[pol] or (None if s.bracketed else s)
            rows.append({"repeat": rep, "rps": rps, **gr.iloc[0][keep].to_dict()})
        out[pol] = pd.DataFrame(rows)
    return out, open_


def _search(open_: dict) -> tuple[claims.Search | None, str]:
    """The search the row is judged under, and in words why a censored one may still count: continuous
    batching still under the bound at the highest listed load only bounds the ratio from below (a lower bound
    that clears the target reproduces it; nothing else is judged); static's search must bracket."""
    s, c = open_["static"], open_["continuous"]
    if s is None and c is not None and c.passed is not None and c.failed is None:
        return None, ("continuous batching stayed under the bound at the highest listed load in some seed, so "
                      "its sustained load there is a lower bound and so is the ratio: only a ratio that clears "
                      "the target on its lower bound is judged")
    return s or c, ""


def bound_of(g: pd.DataFrame, factor: float) -> float:
    """The p95 bound of the sustained-load target: ``factor`` x continuous batching's median p95 at the
    lowest load."""
    low = g[(g.policy == "continuous") & (g.load_frac == g.load_frac.min())]
    return factor * float(low.p95_s.median())


def sustained_estimate(g: pd.DataFrame, factor: float, arrival: str, pairs: pd.DataFrame):
    """The sustained-load target's quantity for one arrival process (what the row judges and the figure
    draws): the bound, each policy's sustained load per seed, the first unbracketed search (or None), and the
    paired ratio widened by the replay's error with that error."""
    bound = bound_of(g, factor)
    sus, search = _searched(g, bound)
    err = replay_error(pairs, "load", "p95_s", "static", versus="continuous", arrival=arrival,
                       what="the p95 of static over continuous batching")
    return bound, sus, search, widened(paired(sus["continuous"], sus["static"], "rps"), err), err


def _load_row(ds: str, arrival: str, g: pd.DataFrame, params: Params, pairs: pd.DataFrame,
              setting: list) -> claims.Claim:
    lp, tr = params.load, params.recall.target_recall
    bound, sus, open_, est, err = sustained_estimate(g, lp.p95_bound_factor, arrival, pairs)
    search, censored = _search(open_)
    rec = float(g.recall.mean())
    reason = (f"p95 bound {bound * 1e3:.0f} ms ({lp.p95_bound_factor}x continuous p95 at the lowest load); "
              f"sustained {sus['continuous'].rps.median():.0f} vs {sus['static'].rps.median():.0f} requests/s "
              f"(median over seeds); mean recall@10 of the request mix {rec:.3f}; {traces_words(g)}; {PAIRED}; "
              f"{err.text()} (a p95 error moves the load where p95 crosses the bound by less, as p95 rises "
              "steeply there)" + (f"; {censored}" if censored else ""))
    row = _sustained_claim(ds, arrival, g, params, est, search, reason, rec, pairs, setting)
    if censored and row.verdict != claims.REPRODUCED:   # a lower bound decides only a pass
        row = _sustained_claim(ds, arrival, g, params, est, open_["continuous"], reason, rec, pairs, setting)
    return row


def _sustained_claim(ds, arrival, g, params: Params, est, search, reason: str, rec: float, pairs,
                     setting: list) -> claims.Claim:
    lp, tr = params.load, params.recall.target_recall
    return claims.claim(STUDY, f"target-continuous-load-{ds}-{arrival}",
                        "continuous batching sustains >= 1.5x the offered load of static batching under the same "
                        "p95 bound, at recall@10 >= 0.95", ">= 1.5x (harness target)", estimate=est,
                        threshold=lp.target_ratio, unit="x", source="emulated", search=search,
                        scale=f"{ds}, {arrival} arrivals, capacity {int(g.capacity.iloc[0])} slots, "
                              f"{g.repeat.nunique()} seeds{shrunk(params, TRACE_WORK)}",
                        reason=reason if rec >= tr else f"recall {rec:.3f} < {tr}; {reason}",
                        verdict=claims.NOT_REPRODUCED if rec < tr else None, machine_busy=busy(g, pairs),
                        quantity="sustained load under a p95 bound, continuous over static", premises=setting)


def load_rows(df: pd.DataFrame, params: Params, pairs: pd.DataFrame,
              setting: list[claims.Premise] | None = None) -> list[claims.Claim]:
    """The sustained-load targets, per dataset and arrival process, under the claims' setting."""
    rep = analysis.replayed(df)
    return [_load_row(ds, arrival, g, params, of_dataset(pairs, ds), setting or [])
            for (ds, arrival), g in rep.groupby(["dataset", "arrival"])]


def _high(g: pd.DataFrame, high_load: float) -> pd.DataFrame:
    hi = g[g.load_frac >= high_load]
    return hi if len(hi) else g[g.load_frac == g.load_frac.max()]


def _lane_target(ds: str, g: pd.DataFrame, params: Params, pairs: pd.DataFrame, setting: list) -> claims.Claim:
    lp = params.load
    hi = _high(g, lp.high_load)
    cont, stat = hi[hi.policy == "continuous"], hi[hi.policy == "static"]
    err = replay_error(pairs, "load", "lane_util", "continuous", load=float(hi.load_frac.max()),
                       what="continuous batching's lane utilisation")
    est = widened(intervals.bootstrap_ci(cont.lane_util, groups=clusters(cont)), err)
    return claims.claim(STUDY, f"target-lane-util-{ds}", "lane utilisation >= 90% under continuous batching at "
                        "high load", ">= 0.90 (harness target)", estimate=est, threshold=lp.target_util,
                        unit="of lanes", source="emulated", machine_busy=busy(g, pairs),
                        scale=f"{ds}, loads >= {lp.high_load} x capacity, {int(g.lanes.iloc[0])}-lane op"
                              f"{shrunk(params, TRACE_WORK)}",
                        quantity="lane utilisation of the distance op under continuous batching", premises=setting,
                        reason=f"{traces_words(cont)}; static at the same loads: {stat.lane_util.median():.3f} "
                               "(median); a busy slot launches all its p x D lanes (candidates its visited set "
                               "drops are masked, not compacted into one task array as in the paper); "
                               f"{err.text()}")


def busy_estimate(g: pd.DataFrame, high_load: float, pairs: pd.DataFrame):
    """The busy claim's stand-in quantity (what the row and the figure draw): lane utilisation, continuous
    over static, paired seed by seed at the high loads, widened by the replay's error, with that error."""
    hi = _high(g, high_load)
    cont, stat = hi[hi.policy == "continuous"], hi[hi.policy == "static"]
    err = replay_error(pairs, "load", "lane_util", "continuous", versus="static", load=float(hi.load_frac.max()),
                       what="lane utilisation, continuous over static")
    return widened(paired(cont, stat, "lane_util", RUN_KEYS), err), err


def _busy(ds: str, g: pd.DataFrame, params: Params, pairs: pd.DataFrame, setting: list) -> claims.Claim:
    lp = params.load
    est, err = busy_estimate(g, lp.high_load, pairs)
    return claims.claim(STUDY, f"claim-continuous-busy-{ds}", "continuous batching keeps the distance stage busy "
                        "(vs static)", "qualitative (sec. 3.2)", estimate=est, threshold=1.0,
                        unit="x static's lane utilisation", source="emulated", machine_busy=busy(g, pairs),
                        scale=f"{ds}, loads >= {lp.high_load} x capacity (the paper states no load), "
                              f"{int(g.capacity.iloc[0])} slots, {int(g.lanes.iloc[0])}-lane op"
                              f"{shrunk(params, TRACE_WORK)}",
                        definition=paper.BUSY, needs=NEEDS, ran_on=fidelity.ran_on(g), judged_on=BUSY_JUDGED_ON,
                        premises=setting, quantity="lane utilisation, continuous over static",
                        reason=f"lane utilisation continuous / static at high load; {traces_words(g)}; {PAIRED}; "
                               f"{err.text()}; the paper's quantity is the GPU's HBM throughput and SM "
                               "utilization under the fixed-shape operator (section 3.2); ours, the share of "
                               "lanes a CPU replay fills, reads no SM or HBM counter, so it is drawn beside the "
                               "claim")


def smooth_setting(g: pd.DataFrame, claim_load: float) -> tuple[float, str, pd.DataFrame]:
    """The smoothing claim's setting: the listed load nearest ``claim_load``, bursty arrivals where run."""
    near = min(g.load_frac.unique(), key=lambda x: abs(x - claim_load))
    c = g[g.load_frac == near]
    arrival = "bursty" if "bursty" in set(c.arrival) else c.arrival.iloc[0]
    return near, arrival, c[c.arrival == arrival]


def smooth_estimates(g: pd.DataFrame, claim_load: float, pairs: pd.DataFrame) -> dict:
    """The smoothing claim's stand-in quantities (what the row and the figure draw): per p50 and p95, the
    jitter of static over continuous, paired seed by seed, widened by the replay's error, with that error."""
    near, arrival, b = smooth_setting(g, claim_load)
    bs, bc = b[b.policy == "static"], b[b.policy == "continuous"]
    out = {}
    for q in ("p50", "p95"):
        err = replay_error(pairs, "load", f"{q}_jitter_s", "static", versus="continuous", arrival=arrival,
                           load=near, what=f"the {q} jitter of static over continuous")
        out[q] = (widened(paired(bc, bs, f"{q}_jitter_s", RUN_KEYS, flip=True), err), err)
    return out


def _smooth(ds: str, g: pd.DataFrame, params: Params, pairs: pd.DataFrame, setting: list) -> claims.Claim:
    lp = params.load
    near, arrival, b = smooth_setting(g, lp.claim_load)
    bs, bc = b[b.policy == "static"], b[b.policy == "continuous"]
    est = smooth_estimates(g, lp.claim_load, pairs)
    is_busy = busy(b, pairs)
    configs = [claims.Config.of(f"{q} jitter", est[q][0], is_busy) for q in ("p50", "p95")]
    level = f"p95 level static / continuous {bs.p95_s.median() / bc.p95_s.median():.2f} (shown, not judged)"
    return claims.claim(STUDY, f"claim-continuous-smooth-p95-{ds}", "continuous batching smooths P50/P95 under "
                        "heterogeneous, bursty queries (less latency jitter)", "qualitative (sec. 3.2)",
                        configs=configs, threshold=1.0, unit="x (static jitter / continuous jitter)",
                        source="emulated", machine_busy=is_busy, definition=paper.SMOOTH, needs=NEEDS,
                        ran_on=fidelity.ran_on(b), judged_on=SMOOTH_JUDGED_ON, premises=setting,
                        scale=f"{ds}, {arrival} arrivals at {near:g} x capacity (the paper states no load), "
                              f"windows of {lp.jitter_window} requests, {int(b.windows.median())} a run"
                              f"{shrunk(params, TRACE_WORK)}",
                        quantity="latency jitter, static over continuous",
                        reason=f"{level}; {traces_words(b)}; {PAIRED}; {est['p50'][1].text()}; "
                               f"{est['p95'][1].text()}; the paper's mechanism is fixed-shape launches (a captured CUDA "
                               "Graph) amortising the CPU/driver launch overhead (section 3.2); a CPU replay on a "
                               "virtual clock has no such overhead, so it is drawn beside the claim")


def uneven(trace: pd.DataFrame, params: Params) -> list[claims.Premise]:
    """The claims' setting, "heterogeneous queries" (section 3.2: "even when individual requests are short,
    uneven, or bursty"): the mix's request classes take different numbers of extends (the slowest class's
    mean over the fastest's, at least 1.5), exact given the traced searches."""
    ext = analysis.class_extends(trace)
    ms = [c.top_m for c in params.workload.classes if c.top_m in ext]
    if len(ms) < 2:
        return [claims.premise("the requests are uneven", None, 1.5, what="extends per request by class")]
    r = max(ext[m] for m in ms) / min(ext[m] for m in ms)
    return [claims.premise("the requests are uneven", r, 1.5, unit="x", what="the slowest class's mean extends "
                           "over the fastest's", exact="the traced searches' extends, fixed by the graph and queries",
                           paper="'heterogeneous queries', 'short, uneven, or bursty' (no numbers)")]


def lane_rows(df: pd.DataFrame, params: Params, pairs: pd.DataFrame,
              setting: list[claims.Premise] | None = None) -> list[claims.Claim]:
    """The lane-utilisation target and the paper's two claims, per dataset; ``setting``: the premises of the
    claims' setting (:func:`uneven`)."""
    rep = analysis.replayed(df)
    out = []
    for ds, g in rep.groupby("dataset"):
        mine = of_dataset(pairs, ds)
        out += [_lane_target(ds, g, params, mine, setting or []), _busy(ds, g, params, mine, setting or [])]
        if "p95_jitter_s" in g:
            out.append(_smooth(ds, g, params, mine, setting or []))
    return out

"""The harness's targets on the extend engine measured offline (the ``recall`` records, section 3.2's
engine): at recall@10 >= 0.95 it reaches >= 0.5x faiss HNSW's queries/s and >= 2x exact brute force's on
the same device. Timed rows: their intervals resample the step's fresh processes first."""
from __future__ import annotations

import pandas as pd

from ...core.judging import claims, intervals
from .. import analysis
from ..params import Params
from .common import STUDY, shrunk


def _ratio(num: pd.DataFrame, den: pd.DataFrame) -> intervals.Estimate:
    return intervals.ratio_ci(num.qps, den.qps, groups=(intervals.process_of(num), intervals.process_of(den)))


def _exact(ds: str, g: pd.DataFrame, best_e, e_runs: pd.DataFrame, less: str) -> list[claims.Claim]:
    """The engine at recall >= 0.95 against exact brute force on the same device (the harness's target: >= 2x)."""
    ex = g[g.system.str.startswith("exact-")]
    if ex.empty:
        return []
    dev = ex.system.iloc[0].removeprefix("exact-")
    return [claims.claim(STUDY, f"target-vs-exact-{ds}", "the engine at recall@10 >= 0.95 reaches >= 2x the "
                         "queries/s of exact brute force (matmul + topk) on the same device", ">= 2x (harness target)",
                         estimate=_ratio(e_runs, ex), threshold=2.0, unit="x", source="measured",
                         machine_busy=claims.busy(g), scale=f"{ds}, {dev}, {int(g.threads.iloc[0])} thread(s){less}",
                         reason=f"best engine {best_e[0]} top-M {best_e[1]:.0f} ({e_runs.qps.median():.0f} q/s) over "
                                f"exact on {dev} ({ex.qps.median():.0f} q/s, recall 1); "
                                f"{intervals.processes_text(g)}")]


def search_rows(df: pd.DataFrame, params: Params) -> list[claims.Claim]:
    rp = params.recall
    rcol = f"recall_at_{rp.k}"
    less = shrunk(params, (("recall", "batch_queries"),))
    out = []
    for ds, g in analysis.searches(df).groupby("dataset"):
        ok = g[g[rcol] >= rp.target_recall]
        eng, hn = ok[ok.system.str.startswith("engine")], ok[ok.system == "faiss-hnsw"]
        if eng.empty or hn.empty:
            out.append(claims.claim(STUDY, f"target-vs-hnsw-{ds}", "engine >= 0.5x faiss HNSW queries/s at recall@10 "
                                    "0.95", ">= 0.5x (harness target)", threshold=0.5, source="measured",
                                    verdict=claims.INCONCLUSIVE, scale=ds,
                                    reason="no engine or HNSW setting reached the recall target"))
            continue
        best_e = eng.groupby(["system", "value"]).qps.median().idxmax()
        best_h = hn.groupby("value").qps.median().idxmax()
        e_runs = eng[(eng.system == best_e[0]) & (eng.value == best_e[1])]
        h_runs = hn[hn.value == best_h]
        out.append(claims.claim(STUDY, f"target-vs-hnsw-{ds}", "at its best batch size the engine reaches >= 0.5x "
                                "faiss HNSW's queries/s at recall@10 >= 0.95 (same data, same threads)",
                                ">= 0.5x (harness target)", estimate=_ratio(e_runs, h_runs), threshold=0.5, unit="x",
                                source="measured", machine_busy=claims.busy(g),
                                scale=f"{ds}, {int(g.threads.iloc[0])} thread(s), torch CPU engine vs faiss C++"
                                      f"{less}",
                                reason=f"best engine: {best_e[0]} top-M {best_e[1]:.0f} ({e_runs.qps.median():.0f} "
                                       f"q/s); best HNSW meeting recall: efSearch {best_h:.0f} "
                                       f"({h_runs.qps.median():.0f} q/s); {intervals.processes_text(g)}"))
        out += _exact(ds, g, best_e, e_runs, less)
    return out

"""Equation 4 of the ESPN paper (section 4.3) from records: query batch threshold = SSD bandwidth x prefetch
budget / data per query, with the bandwidth of our reader and of fio (iops records) and the prefetch
budget measured in the batch step, next to the observed knee of Figures 8/9."""
from __future__ import annotations

import pandas as pd

from . import paper_values as PV

ESPN_BATCH = "ESPN (direct + prefetch)"
KNEE_FACTOR = 1.5   # the knee: the first batch where ESPN's critical access exceeds 1.5x memory's


def eq4_table(b: pd.DataFrame, io: pd.DataFrame) -> pd.DataFrame:
    """Equation 4's batch threshold from each tool's bandwidth at its highest QD, next to the observed
    knee (the first batch where ESPN's critical access exceeds 1.5x memory's)."""
    ok = io[io.status == "ok"]
    m = b[b.phase == "measured"]
    budget = float(m.prefetch_budget_s.iloc[0])
    rec = float(b.attrs["provenance"]["build"]["mean_io_size"])
    rows = []
    for tool in ("espn-reader", "fio"):
        d = ok[(ok.tool == tool) & ((ok.engine != "aio") if tool == "espn-reader" else True)]
        if not len(d):
            continue
        qd = d.qd.max()
        bw = float(d[d.qd == qd].iops.median()) * 4096
        for mode, dd in m.groupby("rerank"):
            n = int(dd.rerank_n.iloc[0])
            g = dd.groupby(["method", "batch"]).access_s.median().unstack("method")
            knee = None
            if "memory" in g and ESPN_BATCH in g:
                over = g.index[(g[ESPN_BATCH] > KNEE_FACTOR * g["memory"]) & (g[ESPN_BATCH] - g["memory"] > 1e-4)]
                knee = int(over.min()) if len(over) else None
            rows.append({"rerank": mode, "n": n, "bandwidth_source": f"{tool} QD{qd}", "bw_MBps": bw / 1e6,
                         "prefetch_budget_ms": budget * 1e3, "data_per_query_KB": n * rec / 1e3,
                         "threshold_eq4": bw * budget / (n * rec), "observed_knee_batch": knee,
                         "max_batch_run": int(dd.batch.max()), "min_batch_run": int(dd.batch.min()),
                         "paper_threshold": PV.BATCH_THRESHOLD_EXACT if mode == "exact" else PV.BATCH_THRESHOLD_PARTIAL})
    return pd.DataFrame(rows)

"""The recall chain's row of the claims ledger. It reproduces no paper claim of its own: it checks the
premise ESPN's Figure 5 and Chameleon's choice of nprobe 32 rest on, that IVF-PQ recall rises with
nprobe while queries/s fall, on every dataset of the profile (judged over all datasets, the
reason naming the worst; recall is deterministic, queries/s get an interval over the measured runs)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.judging import claims

from ..core.judging import intervals
from . import analysis
from .params import Params

RECORDS = ("recall",)


def _qps_fall(m: pd.DataFrame, ds: str) -> claims.Config:
    """Queries/s at the smallest nprobe over those at the largest, with a bootstrap interval over runs."""
    g = m[m.dataset == ds]
    lo_p, hi_p = g.nprobe.min(), g.nprobe.max()
    a, b = g[g.nprobe == lo_p], g[g.nprobe == hi_p]
    est = intervals.ratio_ci(a.qps, b.qps, groups=(intervals.process_of(a), intervals.process_of(b)))
    return claims.Config.of(f"{ds} (nprobe {lo_p} over {hi_p})", est, claims.busy(g))


def build(data: dict[str, pd.DataFrame], params: Params, profile: str) -> list[claims.Claim]:
    m = analysis.measured(data["recall"])
    k = max(params.k)
    per = analysis.per_setting(m, k)
    rising = {ds: bool(np.all(np.diff(g["recall"].to_numpy()) >= -1e-9)) for ds, g in per.groupby(level=0)}
    falls = [_qps_fall(m, ds) for ds in sorted(rising)]
    not_rising = [ds for ds, ok in rising.items() if not ok]
    text = ("harness check behind ESPN Fig. 5 and Chameleon's nprobe: recall@k rises and queries/s fall with "
            "nprobe, on every dataset")
    scale = f"{', '.join(sorted(m.dataset.unique()))}, {int(m.n_queries.iloc[0])} queries"
    words = (f"recall@{k} non-decreasing with nprobe on {len(rising) - len(not_rising)}/{len(rising)} datasets "
             "(deterministic given the index and queries)")
    if not_rising:
        return [claims.claim("ivf_recall", "check-recall-rises-with-nprobe", text, "— (premise, no paper value)",
                             configs=falls, threshold=1.0, unit="x queries/s (smallest over largest nprobe)",
                             scale=scale, verdict=claims.NOT_REPRODUCED,
                             reason=f"{words}: recall falls somewhere on {', '.join(not_rising)}")]
    return [claims.claim("ivf_recall", "check-recall-rises-with-nprobe", text, "— (premise, no paper value)",
                         configs=falls, threshold=1.0, unit="x queries/s (smallest over largest nprobe)", scale=scale,
                         interval="bootstrap over the measured runs at each nprobe",
                         reason=f"{words}; queries/s must fall: the smallest nprobe's over the largest's, > 1 on "
                                "every dataset")]

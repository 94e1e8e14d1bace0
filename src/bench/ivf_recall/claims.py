"""The recall chain's row of the claims ledger. It reproduces no paper claim of its own: it checks the
premise ESPN's Figure 5 and Chameleon's choice of nprobe 32 rest on, that IVF-PQ recall rises with
nprobe while queries/s fall, on every dataset of the profile."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core import claims
from . import analysis
from .params import Params

RECORDS = ("recall",)


def build(data: dict[str, pd.DataFrame], params: Params, profile: str) -> list[claims.Claim]:
    m = analysis.measured(data["recall"])
    k = max(params.k)
    per = analysis.per_setting(m, k)
    rising = [float(np.all(np.diff(g["recall"].to_numpy()) >= -1e-9)) for _, g in per.groupby(level=0)]
    falling = [float(g["qps"].iloc[-1] < g["qps"].iloc[0]) for _, g in per.groupby(level=0)]
    share = float(np.mean([r * f for r, f in zip(rising, falling)]))
    return [claims.claim(
        "ivf_recall", "check-recall-rises-with-nprobe",
        "harness check behind ESPN Fig. 5 and Chameleon's nprobe: recall@k rises and queries/s fall with nprobe",
        "— (premise, no paper value)", ours=share, ci=(share, share), threshold=1.0, unit="of datasets",
        scale=f"{', '.join(sorted(m.dataset.unique()))}, {int(m.n_queries.iloc[0])} queries",
        reason=f"recall@{k} non-decreasing and queries/s lower at the largest nprobe on "
               f"{int(share * len(rising))}/{len(rising)} datasets (deterministic, no interval needed)",
        machine_busy=bool(m.machine_busy.any()) if "machine_busy" in m else False)]

"""The recall chain's row of the claims ledger. It reproduces no paper claim of its own: it checks the
premise ESPN's Figure 5 and Chameleon's choice of nprobe 32 rest on, that IVF-PQ recall rises with
nprobe while queries/s fall, on every dataset of the profile."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..core import claims, records

RECORDS = ("recall",)


def build(inputs: dict[str, list[Path]], params: dict, profile: str) -> list[claims.Claim]:
    df = pd.concat([records.read(p) for p in inputs["recall"]], ignore_index=True)
    m = df[df.phase == "measured"]
    k = max(params["k"])
    per = m.groupby(["dataset", "nprobe"]).agg(recall=(f"recall_at_{k}", "first"), qps=("qps", "median"))
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

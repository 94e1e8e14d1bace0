"""Trinity's Figure 2 row (section 3.1): an independent vector-search pool against coupled placement, from
the analytic model (``placement`` records, modelled): a sanity check of the model, never judged (no GPU
cluster here, and the model takes the paper's one search GPU per LLM node)."""
from __future__ import annotations

import pandas as pd

from ...core.judging import claims
from ..system import placement
from . import paper
from .common import STUDY


def placement_rows(df: pd.DataFrame) -> list[claims.Claim]:
    ok = df[~df.overloaded.astype(bool)]
    pool, coupled = ok[ok.placement == "independent_pool"], ok[ok.placement == "coupled"]
    both = sorted(set(pool.load_rps) & set(coupled.load_rps))
    val = float(pool.set_index("load_rps").loc[both, "search_util"].mean() /
                coupled.set_index("load_rps").loc[both, "search_util"].mean()) if both else None
    return [claims.claim(STUDY, "claim-independent-pool", "an independent vector-search pool serves diverse retrievals "
                         "with high throughput and low tail latency (vs coupled or co-located)",
                         "qualitative (sec. 3.1, Fig. 2)", ours=val, unit="x coupled's search utilisation",
                         scale="analytic model with measured extend times; a cluster of prefill and decode GPU nodes "
                               "(the profile's) against the paper's unstated one", source="modelled",
                         definition=paper.POOL, needs=("gpus:2",), fixed_by=placement.PAPER_INPUTS,
                         judged_on="a cluster of prefill, decode and search GPU nodes (no profile here runs one)",
                         reason="GPU pools and links not available here; Figure 2 is modelled")]

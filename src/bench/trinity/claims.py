"""Trinity's rows of the claims ledger: the paper's qualitative claims and the harness's targets, judged on
records with intervals over fresh processes (:mod:`.verdicts`, one module per part of the paper). The paper
gives no numbers (no evaluation section), so ``paper_value`` states the qualitative claim or the target.
Every serving row rests on a replay of real searches and carries the replay's measured error against the
live engine (the ``trace`` step's check points)."""
from __future__ import annotations

import pandas as pd

from ..core.judging import claims
from . import analysis
from .params import Params
from .verdicts import batching, placement, replay, saturation, scheduling, search

RECORDS = ("recall", "trace", "load", "sched", "roofline", "placement")


def build(data: dict[str, pd.DataFrame], params: Params, profile: str) -> list[claims.Claim]:
    pairs = analysis.check_pairs(data["trace"])
    setting = batching.uneven(data["trace"], params)
    return [*batching.load_rows(data["load"], params, pairs, setting),
            *batching.lane_rows(data["load"], params, pairs, setting),
            *search.search_rows(data["recall"], params), *scheduling.sched_rows(data["sched"], params, pairs),
            *saturation.roofline_rows(data["roofline"], params), *placement.placement_rows(data["placement"]),
            *replay.replay_rows(pairs)]

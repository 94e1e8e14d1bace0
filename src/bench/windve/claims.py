"""WindVE's rows of the claims ledger: the paper's claims (Tables I/II gains, 1.22x throughput, 18.6% cost
saving, regression as good as the stress test, looser SLO and smaller device gap -> larger gain, CPU
utilisation, the queue manager's < 0.1 ms) and the harness's targets (``target-*``), each judged on the
records (:mod:`.rows`). Every row that involves the accelerator takes its ``source`` from the records
(:mod:`.analysis`): ``measured`` where the CUDA GPU ran (the paper's GPU + CPU setting), ``emulated`` where
the emulated accelerator did; an emulated value is set by the paper's ratios (``fixed_by``), never judged."""
from __future__ import annotations

import pandas as pd

from bench.core.judging import claims

from .params import Params
from .rows import concurrency, depths, service
from .rows.builder import Builder

RECORDS = ("profile", "serving")
STUDY = "windve"


def build(data: dict[str, pd.DataFrame], params: Params, profile: str) -> list[claims.Claim]:
    b = Builder(data["profile"], data["serving"], params)
    concurrency.table_cells(b)
    concurrency.headline(b)
    concurrency.trends(b)
    depths.table_iii(b)
    service.utilisation(b)
    service.dispatch(b)
    service.service_share(b)
    service.overload(b)
    return b.rows

"""Chameleon Table 5 (section 6.2, "Resource and energy consumption"): the ``energy`` step. Energy per
query of the CPU and of ChamVS (FPGA + GPU), from the search step's records: measured where a power counter
was readable during the timed batches (``system.energy``), else modelled from the power the paper's Table 5
implies (``power``). FPGA-CPU is not priced: the paper gives no power for it."""
from __future__ import annotations

import pandas as pd

from ...core.measuring import records
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from .. import power
from ..system.energy import power_counters


@step("energy", optional=("search",), timed=False, keys=("batch_sizes", "energy", "fpga"))
def energy(ctx: Context) -> Result:
    """Energy per query for the CPU and ChamVS (FPGA + GPU), the paper's beside.

    Measured where a counter was readable during the search step's timed batches (RAPL, NVML), else
    MODELLED: the power the authors' Table 5 implies for that system (its energy x batch / their median
    latency, the median over the table's cells) times our median batch latency, per query. FPGA-CPU is
    recorded as not run: the paper states no power for it.
    """
    rows = []
    for path in ctx.inputs.get("search", []):
        rows += power.rows(records.read(path), ctx.params.energy.batch_sizes)
    df = pd.DataFrame(rows)
    if df.empty:
        df = pd.DataFrame([{"dataset": "", "source": "not_run", "note": "no search records with cpu/fpga",
                            "why": "no search records with cpu and fpga configurations"}])
    return Result(records=df, method=energy.__doc__.split("\n\n")[1].strip().replace("\n", " "),
                  provenance={"power_counters": power_counters(),
                              "power_w": {c: power.watts(c) for c in power.POWER},
                              "paper_inputs": [i.text() for i in power.PAPER_INPUTS]})

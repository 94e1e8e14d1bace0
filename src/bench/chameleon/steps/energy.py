"""Chameleon Table 5 (section 6.2, "Resource and energy consumption"): the ``energy`` step. Energy per
query of the CPU and ChamVS configurations, from the search step's records: measured where a power counter
was readable during the timed batches (``system.energy``), else modelled from the power the authors'
Table 5 implies."""
from __future__ import annotations

import pandas as pd

from ...core.measuring import records
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from .. import paper_values
from ..system.energy import power_counters

_SYSTEM = {"cpu": "CPU", "fpga-gpu": "FPGA-GPU", "fpga-cpu": "FPGA-GPU"}


def _paper_arch(pds: str, system: str) -> str:
    if system == "CPU":
        return "16CPU" if pds.startswith("RALM") else "8CPU"
    return "2FPGA-1GPU" if pds == "RALM-L1000M" else "1FPGA-1GPU"


def _energy_row(dsname, cfg, g, bs, pe, pl) -> dict | None:
    pds, system = paper_values.paper_dataset(dsname), _SYSTEM.get(cfg)
    gb = g[g.batch_size == bs]
    if pds is None or system is None or gb.empty:
        return None
    arch = _paper_arch(pds, system)
    e_row = pe[(pe.dataset == pds) & (pe.system == system) & (pe.batch_size == bs)]
    l_row = pl[(pl.dataset == pds) & (pl.arch == arch) & (pl.batch_size == bs)]
    if e_row.empty or l_row.empty:
        return None
    paper_mj, paper_ms = float(e_row.energy_mj.iloc[0]), float(l_row.median_ms.iloc[0])
    watts = paper_mj * 1e-3 * bs / (paper_ms * 1e-3)
    ours_ms = float(gb.latency_ms.median())
    measured = gb["energy_per_query_mj"].dropna() if "energy_per_query_mj" in gb else pd.Series([], dtype=float)
    if len(measured) and (gb.source == "measured").all():
        e_mj, src, note = float(measured.median()), "measured", "RAPL/NVML counters around the timed batches"
    else:
        e_mj, src = watts * ours_ms * 1e-3 / bs * 1e3, "modelled"
        note = f"no readable power counter: power implied by the paper ({arch}) x our latency"
    return {"dataset": dsname, "paper_dataset": pds, "config": cfg, "system": system, "batch_size": bs,
            "our_latency_ms": ours_ms, "paper_latency_ms": paper_ms, "paper_power_w": watts, "energy_mj": e_mj,
            "paper_energy_mj": paper_mj, "source": src, "note": note}


@step("energy", optional=("search",), timed=False, keys=("batch_sizes", "energy", "fpga"))
def energy(ctx: Context) -> Result:
    """Energy per query for CPU and ChamVS configurations, paper values beside.

    Measured where a counter was readable during the search step's timed batches (RAPL, NVML), else
    MODELLED: the power the authors' Table 5 implies (energy x batch / their median latency) times our
    median batch latency, per query.
    """
    pe, pl = paper_values.energy(), paper_values.latency()
    rows = []
    for path in ctx.inputs.get("search", []):
        df = records.read(path)
        df = df[(df.kind == "latency") & (df.phase == "measured")]
        for (dsname, cfg), g in df.groupby(["dataset", "config"]):
            rows += [r for bs in ctx.params.energy.batch_sizes
                     if (r := _energy_row(dsname, cfg, g, bs, pe, pl)) is not None]
    df = pd.DataFrame(rows)
    if df.empty:
        df = pd.DataFrame([{"dataset": "", "source": "not_run", "note": "no search records with cpu/fpga"}])
    return Result(records=df, method=energy.__doc__.split("\n\n")[1].strip().replace("\n", " "),
                  provenance={"power_counters": power_counters()})

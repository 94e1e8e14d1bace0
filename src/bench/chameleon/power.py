"""Chameleon Table 5 (section 6.2, "Resource and energy consumption"): the power model behind our energy per
query wherever no power counter was readable.

The paper reads the CPU's energy with RAPL and the GPU's with nvidia-smi, reports the FPGA's from Vivado,
and prints energy per query (Table 5) for two systems only: the CPU, and ChamVS as FPGA + GPU. What the
paper fixes here is the power each of the two draws (:data:`PAPER_INPUTS`, read through
:func:`bench.core.judging.fidelity.value`): Table 5's energy x batch / the authors' archived median latency
of the same system, dataset and batch, the median over the table's twelve cells of that system. Our
modelled energy per query = that power x our median batch latency / batch.

FPGA-CPU has no power in the paper (Table 5 prices ChamVS with its index scan on the GPU), so it is not
priced: its rows are ``not_run`` and say why, rather than borrowing the FPGA-GPU power.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.judging import fidelity
from . import paper_values

SYSTEMS = {"cpu": "CPU", "fpga-gpu": "FPGA-GPU"}   # our configuration -> its Table 5 system
NOT_PRICED = {"fpga-cpu": "not priced: the paper gives power only for the CPU and for ChamVS as FPGA + GPU "
                          "(Table 5); no FPGA-CPU power is stated, and the FPGA-GPU one is not FPGA-CPU's"}


def paper_arch(pds: str, system: str) -> str:
    """The authors' configuration Table 5's system ran as on dataset ``pds`` (their archive's arch name)."""
    if system == "CPU":
        return "16CPU" if pds.startswith("RALM") else "8CPU"
    return "2FPGA-1GPU" if pds == "RALM-L1000M" else "1FPGA-1GPU"


def implied_powers(system: str) -> pd.DataFrame:
    """Per Table 5 cell of ``system``: the power it implies (energy x batch / the authors' median latency)."""
    pe, pl = paper_values.energy(), paper_values.latency()
    rows = []
    for r in pe[pe.system == system].itertuples():
        arch = paper_arch(r.dataset, system)
        lat = pl[(pl.dataset == r.dataset) & (pl.arch == arch) & (pl.batch_size == r.batch_size)].median_ms
        if len(lat):
            rows.append({"dataset": r.dataset, "batch_size": int(r.batch_size), "arch": arch,
                         "power_w": float(r.energy_mj) * r.batch_size / float(lat.iloc[0])})
    return pd.DataFrame(rows)


def _power_input(system: str, name: str) -> fidelity.PaperInput:
    w = float(np.median(implied_powers(system).power_w))
    return fidelity.PaperInput(name, round(w, 2), f"Table 5 ({system} energy per query, batches 1, 4, 16) x batch / "
                               f"the authors' archived median latency of the same system and dataset: the median "
                               f"over the table's twelve {system} cells", "W")


CPU_POWER_W = _power_input("CPU", "table5-cpu-power-w")
CHAMVS_POWER_W = _power_input("FPGA-GPU", "table5-chamvs-power-w")
POWER = {"cpu": CPU_POWER_W, "fpga-gpu": CHAMVS_POWER_W}
PAPER_INPUTS = (CPU_POWER_W, CHAMVS_POWER_W)


def watts(config: str) -> float:
    """The power our energy model prices ``config`` at (the paper's, or its scaled value in the sensitivity
    test); KeyError for a configuration the paper gives no power for."""
    return fidelity.value(POWER[config])


def _cell(dsname: str, cfg: str, g: pd.DataFrame, bs: int) -> dict | None:
    """One dataset x configuration x batch size: energy per query, measured or modelled, the paper's beside."""
    pds = paper_values.paper_dataset(dsname)
    gb = g[g.batch_size == bs]
    if pds is None or gb.empty:
        return None
    base = {"dataset": dsname, "paper_dataset": pds, "config": cfg, "batch_size": bs}
    if cfg in NOT_PRICED:
        return {**base, "source": "not_run", "why": NOT_PRICED[cfg], "note": NOT_PRICED[cfg]}
    system = SYSTEMS[cfg]
    pe = paper_values.energy()
    e_row = pe[(pe.dataset == pds) & (pe.system == system) & (pe.batch_size == bs)]
    ours_ms = float(gb.latency_ms.median())
    measured = gb["energy_per_query_mj"].dropna() if "energy_per_query_mj" in gb else pd.Series([], dtype=float)
    if len(measured) and (gb.source == "measured").all():
        e_mj, src, note = float(measured.median()), "measured", "RAPL/NVML counters around the timed batches"
    else:
        e_mj, src = watts(cfg) * ours_ms / bs, "modelled"
        note = f"no readable power counter: the {system} power the paper implies x our latency"
    return {**base, "system": system, "our_latency_ms": ours_ms, "power_w": watts(cfg), "energy_mj": e_mj,
            "paper_energy_mj": float(e_row.energy_mj.iloc[0]) if len(e_row) else np.nan, "source": src,
            "note": note}


def rows(search: pd.DataFrame, batch_sizes) -> list[dict]:
    """The energy rows of the measured latency batches of ``search`` (every dataset and configuration Table 5
    prices, and a not-run row for FPGA-CPU), at each of ``batch_sizes``."""
    d = search[(search.kind == "latency") & (search.phase == "measured")]
    out = []
    for (dsname, cfg), g in d.groupby(["dataset", "config"]):
        if cfg in SYSTEMS or cfg in NOT_PRICED:
            out += [r for bs in batch_sizes if (r := _cell(dsname, cfg, g, int(bs))) is not None]
    return out

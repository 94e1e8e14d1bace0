"""Chameleon Table 5 (section 6.2): the energy efficiency of ChamVS (FPGA + GPU) over the CPU as ratios per
batch size, ours as the ledger row judges it (modelled where no power counter is readable) beside the
paper's, with the text's range and the table's own."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis, paper_values, power
from ._draw import (busy_text, dataset_order, label, log_dots, nice_log_limits, plain_log_ticks, where,
                    write_csv, write_md)

TEXT_LOW = 5.8     # the abstract's and section 6.2's "5.8~26.2x"
CAPTION = (
    "Table 5 (reproduced as ratios): energy per query of the CPU over that of ChamVS (FPGA + GPU), per batch "
    "size. The paper (section 6.2): 'we report the energy per query by measuring the power consumption and "
    "latency for index scan on GPU and PQ-code scan on FPGAs, and summing the two parts up'. Stars: the "
    "authors' Table 5 ratios (their 1B-vector datasets). Dots: ours, as the ledger row judges them, the CPU's "
    "batch latencies x its power over FPGA-GPU's x its power, with the row's 95% interval (a bootstrap over "
    "the fresh processes, then the batches). {modelled} The text states 5.8-26.2x; Table 5's own cells give "
    "{table} (lowest {lowest}); the ledger row judges the text's lower end (dotted line), the table's is "
    "dashed. FPGA-CPU is not priced: the paper gives no power for it (Table 5 prices ChamVS with its index "
    "scan on the GPU), so none is borrowed. {ours} Absolute mJ, ours and the paper's, in the table beside this "
    "figure. {busy} {where}.")


def _modelled_text(d: pd.DataFrame) -> str:
    """Which power multiplies which latency, where energy is modelled."""
    if not (d.source == "modelled").any():
        return "Ours are measured with the power counters."
    return (f"Ours are MODELLED where no power counter was readable: the power the paper's Table 5 implies "
            f"(its energy x batch / the authors' median latency, the median over the table's cells: CPU "
            f"{power.CPU_POWER_W.value:g} W, ChamVS {power.CHAMVS_POWER_W.value:g} W; paper inputs) x our "
            f"latency, FPGA-GPU's latency itself modelled.")


def _ours_text(search: pd.DataFrame, cells: pd.DataFrame) -> str:
    if len(cells):
        return ""
    gone = search[(search.config == "fpga-gpu") & (search.source == "not_run")]
    why = "; ".join(sorted(set(gone.why.dropna().astype(str)))) if "why" in gone else ""
    return (f"Ours: not run here: FPGA-GPU needs a CUDA GPU for its index scan "
            f"({why or 'no FPGA-GPU rows in the search records'}), so only the paper's stars are drawn.")


def _panel(ax, ds: str, pds: str | None, cells: pd.DataFrame, col: dict, lab: str) -> np.ndarray:
    """One dataset: our ratios with their intervals and the paper's beside them; returns the values drawn."""
    t5 = analysis.table5_ratios()
    paper = t5[t5.dataset == pds].set_index("batch_size").ratio if pds else pd.Series(dtype=float)
    c = cells[cells.dataset == ds].set_index("batch_size")
    bss = sorted(set(paper.index) | set(c.index))
    x = {b: i for i, b in enumerate(bss)}
    plotting.panel_scale(ax, "the profile's scale")
    if len(c):
        xs = np.array([x[b] for b in c.index], dtype=float)
        log_dots(ax, xs, c.ratio, color=col[lab], label=lab)
        ax.errorbar(xs, c.ratio, yerr=[c.ratio - c.low, c.high - c.ratio], fmt="none", ecolor=col[lab], capsize=2)
    else:
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
    if len(paper):
        plotting.paper_marks(ax, [x[b] for b in paper.index], paper.values,
                             plotting.label_source("CPU / ChamVS energy (Table 5, 1B vectors; tagged 1B)", "paper"),
                             scale="1B vectors", tag="1B")
    ax.axhline(TEXT_LOW, color="0.35", ls=":", lw=1.2, label="the text's lower end, 5.8x (the row's bar)")
    ax.axhline(t5.ratio.min(), color="0.35", ls="--", lw=0.9, label=f"Table 5's lowest cell, {t5.ratio.min():.1f}x")
    ax.set_xticks(range(len(bss)), [str(b) for b in bss])
    ours = "" if len(c) else "\nours not run: FPGA-GPU needs CUDA"
    ax.set(title=f"{ds} (paper: {pds}){ours}", xlabel="batch size")
    return np.r_[c.low.to_numpy(float), c.high.to_numpy(float), paper.to_numpy(float), TEXT_LOW]


def _table(d: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """The figure's data in a few columns: per dataset and batch, the paper's mJ and ratio beside ours."""
    t5 = analysis.table5_ratios().rename(columns={"dataset": "paper_dataset", "ratio": "paper_ratio"})
    pe = paper_values.energy().pivot_table(index=["dataset", "batch_size"], columns="system",
                                           values="energy_mj").reset_index()
    pe.columns = ["paper_dataset", "batch_size", "paper_cpu_mj", "paper_chamvs_mj"]
    names = {paper_values.paper_dataset(n): n for n in d.dataset.unique()} if "dataset" in d else {}
    out = t5.merge(pe, on=["paper_dataset", "batch_size"])
    out["dataset"] = out.paper_dataset.map(names)
    c = cells.assign(ours=[f"{r:.3g} [{lo:.3g}, {hi:.3g}]" for r, lo, hi in zip(cells.ratio, cells.low, cells.high)])
    out = out.merge(c[["dataset", "batch_size", "ours"]], on=["dataset", "batch_size"], how="left")
    out["ours"] = out.ours.astype(object).where(out.ours.notna(), "not run")
    return out[["paper_dataset", "batch_size", "paper_cpu_mj", "paper_chamvs_mj", "paper_ratio", "ours"]]


@figure("table5", records=("energy", "search"), title="Table 5: energy efficiency over the CPU",
        claims=("energy-efficiency",))
def table5(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["energy"]
    prov = df.attrs["provenance"]
    d = analysis.energy_ran(df)
    cells = analysis.energy_cells(data["search"], df)
    names = dataset_order(d.dataset.unique() if "dataset" in d and len(d) else list(paper_values.DATASET_MAP), prov)
    names = [n for n in names if n] or list(paper_values.DATASET_MAP)
    fig, axes = plotting.start(len(names), w=3.2 + 1 / len(names), h=3.8, sharey=True)
    src = "modelled" if (d.get("source", pd.Series(dtype=object)) == "modelled").any() else "measured"
    lab = label("CPU / FPGA-GPU energy, ours", src)
    col = {lab: plotting.COLORBLIND[0]}
    drawn = [_panel(ax, ds, paper_values.paper_dataset(ds), cells, col, lab) for ax, ds in zip(axes, names)]
    nice_log_limits(axes[0], np.concatenate(drawn))   # shared y: every value of every panel between labelled ticks
    axes[0].set_ylabel("energy efficiency over the CPU (x)")
    plotting.legend_below(fig, ncol=2)
    table = _table(d, cells)
    write_csv(table, out_png)
    write_md(table, out_png, "Table 5: energy per query (mJ) and the efficiency ratio, the paper's beside ours",
             {"paper_dataset": "the paper's dataset", "batch_size": "batch", "paper_cpu_mj": "CPU, paper (mJ)",
              "paper_chamvs_mj": "ChamVS, paper (mJ)", "paper_ratio": "CPU / ChamVS, paper",
              "ours": "CPU / ChamVS, ours [95% interval]"})
    t5 = analysis.table5_ratios()
    low = t5.loc[t5.ratio.idxmin()]
    return plotting.save(fig, out_png, CAPTION.format(
        modelled=_modelled_text(d) if len(cells) else "", table=f"{t5.ratio.min():.1f}-{t5.ratio.max():.1f}x",
        lowest=f"{low.dataset} batch {int(low.batch_size)}", ours=_ours_text(data["search"], cells), busy=busy_text(df),
        where=where(prov)))

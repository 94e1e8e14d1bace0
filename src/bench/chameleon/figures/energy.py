"""Chameleon Table 5 (section 6.2): the energy efficiency of ChamVS over the CPU as ratios per batch size,
ours (modelled where no power counter is readable) beside the paper's."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core import plotting
from ...core.figures import figure
from .. import analysis
from ._draw import label, log_dots, paper_point, where, write_csv

CAPTION = (
    "Table 5 (reproduced as ratios): energy per query of the CPU over that of ChamVS, per batch size; the "
    "authors' Table 5 ratios as markers (their 1B-vector datasets), ours as bars. Ours are measured where a "
    "power counter was readable, else MODELLED (the power implied by the paper's Table 5 and latency medians, "
    "times our measured cpu or modelled fpga latency); here: {sources} (RAPL: {rapl}, NVML: {nvml}). Absolute "
    "mJ, ours and the paper's, in the CSV beside this figure. {where}.")


def _panel(ax, ds: str, g: pd.DataFrame, ratio_label, col: dict) -> None:
    """One dataset: our cpu / fpga energy ratios per batch size, the paper's beside them."""
    cpu = g[g.config == "cpu"].set_index("batch_size")
    bss = sorted(g.batch_size.unique())
    cfgs = sorted(g[g.config.str.startswith("fpga")].config.unique())
    if cpu.empty or not cfgs:
        plotting.not_run(ax, f"{ds}: no cpu and fpga energy rows")
        return
    ours = {c: cpu.energy_mj.reindex(bss) / g[g.config == c].set_index("batch_size").energy_mj.reindex(bss)
            for c in cfgs}
    paper = (cpu.paper_energy_mj / g[g.config == cfgs[0]].set_index("batch_size").paper_energy_mj).reindex(bss)
    w = 0.8 / len(cfgs)
    for j, c in enumerate(cfgs):
        lab = ratio_label(c, g[g.config == c].source.iloc[0])
        log_dots(ax, np.arange(len(bss)) + (j - (len(cfgs) - 1) / 2) * w, ours[c], color=col[lab], label=lab)
    paper_point(ax, np.arange(len(bss)), paper.values, "CPU / ChamVS energy (Table 5, 1B vectors)")
    ax.set_xticks(np.arange(len(bss)), [str(b) for b in bss])
    ax.set(title=f"{ds} (paper: {g.paper_dataset.iloc[0]})", xlabel="batch size")


@figure("table5", records=("energy",), title="Table 5: energy efficiency over the CPU")
def table5(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["energy"]
    prov = df.attrs["provenance"]
    d = analysis.energy_ran(df)
    n = max(d.dataset.nunique(), 1)
    fig, axes = plotting.start(n, w=3.2 + 1 / n, h=3.8, sharey=True)
    if d.empty or "energy_mj" not in d:
        plotting.not_run(axes[0], "no energy rows: no search records with cpu and fpga configurations")
        return plotting.save(fig, out_png, "Table 5: not run (no energy rows).")
    write_csv(d, out_png)
    fp = d[d.config.str.startswith("fpga")]
    cpu_src = set(d[d.config == "cpu"].source)

    def ratio_label(c: str, src: str) -> str:   # the ratio is modelled if either energy is
        return label(f"cpu / {c} energy", "modelled" if "modelled" in cpu_src | {src} else src)
    col = plotting.colors(ratio_label(c, s) for c, s in zip(fp.config, fp.source))
    for ax, (ds, g) in zip(axes, d.groupby("dataset")):
        _panel(ax, ds, g, ratio_label, col)
    axes[0].set_ylabel("energy efficiency over CPU (x)")
    plotting.legend_below(fig, ncol=3)
    counters = prov.get("power_counters", {})
    return plotting.save(fig, out_png, CAPTION.format(sources=", ".join(sorted(d.source.unique())),
                                                      rapl=counters.get("rapl"), nvml=counters.get("nvml"),
                                                      where=where(prov)))

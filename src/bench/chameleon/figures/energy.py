"""Chameleon Table 5 (section 6.2): the energy efficiency of ChamVS over the CPU as ratios per batch size,
ours (modelled where no power counter is readable) beside the paper's."""
from __future__ import annotations

from pathlib import Path

import re

import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from ._draw import busy_text, dataset_order, label, log_dots, nice_log_limits, where, write_csv

CAPTION = (
    "Table 5 (reproduced as ratios): energy per query of the CPU over that of ChamVS, per batch size; the "
    "authors' Table 5 ratios as stars (their 1B-vector datasets), ours as dots, datasets in the study's order. "
    "Ours are measured where a power counter was readable, else MODELLED: the power implied by the paper's "
    "Table 5 and latency medians, times our measured cpu or modelled fpga latency; here: {sources} ({counters}). "
    "{modelled}Absolute mJ, ours and the paper's, in the CSV beside this figure. {busy} "
    "{where}.")
POWER = re.compile(r"power implied by the paper \(([^)]+)\)")


def _counters_text(counters: dict) -> str:
    """Which power counters were readable, in words (RAPL for the CPU package, NVML for a GPU)."""
    have = [f"{name} read" for name, key in (("the CPU's RAPL counter", "rapl"), ("the GPU's NVML counter", "nvml"))
            if counters.get(key)]
    return ", ".join(have) if have else "no power counter was readable here"


def _power_arch(g: pd.DataFrame) -> str:
    """The paper's system whose power our energy of these rows was modelled with (from the records' note)."""
    found = sorted({m.group(1) for n in g.get("note", pd.Series(dtype=object)).dropna().astype(str)
                    if (m := POWER.search(n))})
    return "/".join(found)


def _modelled_text(d: pd.DataFrame) -> str:
    """What is modelled, per configuration: which paper system's power multiplies which of our latencies."""
    parts = []
    for c, g in d[d.source == "modelled"].groupby("config"):
        by_arch = {}
        for ds in dataset_order(g.dataset):
            if a := _power_arch(g[g.dataset == ds]):
                by_arch.setdefault(a, []).append(ds)
        kind = "modelled" if c.startswith("fpga") else "measured"
        if by_arch:
            per = ", ".join(f"{a} ({', '.join(ds)})" for a, ds in by_arch.items())
            parts.append(f"{c} energy = our {kind} {c} latency x the power the paper implies for its {per}")
    return ("Modelled: " + "; ".join(parts) + ". ") if parts else ""


def _panel(ax, ds: str, g: pd.DataFrame, ratio_label, col: dict) -> np.ndarray:
    """One dataset: our cpu / fpga energy ratios per batch size, the paper's beside them; returns the values
    drawn (the shared y axis is fitted to all panels')."""
    cpu = g[g.config == "cpu"].set_index("batch_size")
    bss = sorted(g.batch_size.unique())
    cfgs = sorted(g[g.config.str.startswith("fpga")].config.unique())
    if cpu.empty or not cfgs:
        plotting.not_run(ax, f"{ds}: no cpu and fpga energy rows")
        return np.array([])
    ours = {c: cpu.energy_mj.reindex(bss) / g[g.config == c].set_index("batch_size").energy_mj.reindex(bss)
            for c in cfgs}
    paper = (cpu.paper_energy_mj / g[g.config == cfgs[0]].set_index("batch_size").paper_energy_mj).reindex(bss)
    w = 0.8 / len(cfgs)
    for j, c in enumerate(cfgs):
        lab = ratio_label(c, g[g.config == c].source.iloc[0])
        log_dots(ax, np.arange(len(bss)) + (j - (len(cfgs) - 1) / 2) * w, ours[c], color=col[lab], label=lab)
    plotting.panel_scale(ax, "the profile's scale")
    plotting.paper_marks(ax, np.arange(len(bss)), paper.values,
                         plotting.label_source("CPU / ChamVS energy (Table 5, 1B vectors; tagged 1B)", "paper"),
                         scale="1B vectors", tag="1B")
    ax.set_xticks(np.arange(len(bss)), [str(b) for b in bss])
    ax.set(title=f"{ds} (paper: {g.paper_dataset.iloc[0]})", xlabel="batch size")
    return np.r_[np.concatenate([v.to_numpy(float) for v in ours.values()]), paper.to_numpy(float)]


@figure("table5", records=("energy",), title="Table 5: energy efficiency over the CPU",
        claims=("energy-efficiency",))
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
        modelled = "modelled" in cpu_src | {src}
        arch = _power_arch(fp[fp.config == c])
        how = f" (our {c} latency x the paper's {arch} power)" if modelled and src == "modelled" and arch else ""
        return label(f"cpu / {c} energy{how}", "modelled" if modelled else src)
    col = plotting.colors(ratio_label(c, s) for c, s in zip(fp.config, fp.source))
    drawn = [_panel(ax, ds, d[d.dataset == ds], ratio_label, col)
             for ax, ds in zip(axes, dataset_order(d.dataset, prov))]
    nice_log_limits(axes[0], np.concatenate(drawn))   # shared y: every value of every panel between labelled ticks
    axes[0].set_ylabel("energy efficiency over CPU (x)")
    plotting.legend_below(fig, ncol=3)
    counters = prov.get("power_counters", {})
    return plotting.save(fig, out_png, CAPTION.format(sources=", ".join(sorted(d.source.unique())),
                                                      counters=_counters_text(counters),
                                                      modelled=_modelled_text(d), busy=busy_text(df),
                                                      where=where(prov)))

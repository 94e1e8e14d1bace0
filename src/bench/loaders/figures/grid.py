"""Figures of the loaders grid (Moving Stuff Around, Figure 1, Tables 1 and 2, and beyond the paper the
memory duplication factor): every loader x {DP, DDP} x replicas, from the ``train`` records."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...core.judging import claims as core_claims

from ...core.judging import intervals
from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis as A
from .. import paper_values as P
from . import _draw as D


def config_style(cfgs, par: str, n: int) -> dict:
    """Colour and marker of configuration (par, n) where the points are configurations, not loaders: the
    loaders' colours (every other loaders figure) are not used. Shades of purple, darker with more
    replicas; DP a filled circle, DDP a hollow square."""
    import matplotlib.pyplot as plt

    ns = sorted({c[1] for c in cfgs})
    shade = 0.7 if len(ns) == 1 else 0.5 + 0.4 * ns.index(n) / (len(ns) - 1)
    colour = plt.cm.Purples(shade)
    return {"color": colour, "marker": "o", "mfc": colour} if par == "dp" else {"color": colour, "marker": "s",
                                                                                  "mfc": "none"}


@figure("fig1_step_time_share", records=("train",), title="share of step time in the DataLoader")
def fig1_step_time_share(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["train"]
    st = A.steps(A.grid(df))
    cfgs, loaders = A.configs(df), A.grid_loaders(df)
    labels = [D.label(*c) for c in cfgs]
    fig, (ax,) = plotting.start(1, w=7.5, h=0.5 * len(loaders) + 2.2)
    for k, ((par, n), lab) in enumerate(zip(cfgs, labels)):
        share = A.wait_share(st, par, n, loaders)
        y = [loaders.index(l) + (k - (len(cfgs) - 1) / 2) * 0.12 for l in share]
        ax.plot(list(share.values()), y, ls="none", ms=7, mew=1.8, label=f"ours, {lab} (measured)",
                **config_style(cfgs, par, n))
    ax.plot([100 * P.FIG1_DATALOADER_SHARE], [len(loaders)], **D.P_STYLE,
            label="paper Fig. 1: ir_datasets, 500 steps, GPU profiler (its GPU count is not stated)")
    ax.set_yticks(range(len(loaders) + 1), [*loaders, "paper (ir_datasets)"])
    ax.invert_yaxis()
    ax.set(xlabel="% of step time waiting for the DataLoader (read + tokenize)", xlim=(0, None),
           title="time in the DataLoader per step")
    if not cfgs:
        plotting.not_run(ax, "no grid runs in the records")
    plotting.legend_below(fig, ncol=min(3, len({c[1] for c in cfgs}) + 1))   # DP above DDP per column
    cap = (f"Figure 1 of the paper, measured: the share of the mean step time spent waiting for the "
           f"DataLoader's batch (reading + tokenization), per loader and configuration (measured steps only, "
           f"warm-up excluded; parts averaged over ranks); the rest is the host-to-device copy and "
           f"forward + backward + optimizer. The paper's 17.8% (ir_datasets, Tensorboard profiler, 500 steps, GPU) "
           f"is in its own row: the paper does not say on how many GPUs. Configurations in purples (darker: more "
           f"replicas; DP filled circles, DDP hollow squares), not the loaders' colours. {D.impl(df)}. "
           f"Scale: {D.scale(df)}; {P.SCALE}. On CPU the copy is empty and compute is far slower than on a GPU, "
           f"so the data share is smaller there than on the paper's GPUs.")
    return plotting.save(fig, out_png, cap)


def _tput_cells(df, st, cfgs, loaders):
    """Median samples/s with a bootstrap interval per (config, loader); OOM cells as the note "OOM"."""
    cells = {}
    for cfg in cfgs:
        for l in loaders:
            v = A.tput(st, parallel=cfg[0], replicas=cfg[1], loader=l)
            if v.size:
                cells[(cfg, l)] = intervals.bootstrap_ci(v, n_boot=D.N_BOOT)
    for cfg in cfgs:
        for l in loaders:
            if A.oom(df, cfg, l):
                cells[(cfg, l)] = "OOM"
    return cells


def _rel_cells(st, cfgs, loaders):
    """% samples/s against in-memory in the same configuration (ratio of medians, bootstrap interval)."""
    rel = {}
    for cfg in cfgs:
        base = A.tput(st, parallel=cfg[0], replicas=cfg[1], loader="in-memory")
        for l in loaders:
            v = A.tput(st, parallel=cfg[0], replicas=cfg[1], loader=l)
            if v.size and base.size:
                e, lo, hi = intervals.ratio_ci(v, base, n_boot=D.N_BOOT)
                rel[(cfg, l)] = (100 * (e - 1), 100 * (lo - 1), 100 * (hi - 1))
    return rel


def _paper_panel(ax, table, loaders, col, title, ylabel):
    """The paper's Table 1 or 2 at its own scale (1-8 GPUs)."""
    pcfg = [(p, n) for n in P.GPUS for p in ("dp", "ddp")]
    pl = [l for l in loaders if l in table]
    pv = {(cfg, l): ((table[l][cfg],) * 3 if table[l][cfg] is not None else "OOM") for cfg in pcfg for l in pl}
    D.grouped(ax, pcfg, pl, pv, col)
    ax.set(title=title, ylabel=ylabel)
    ax.tick_params(axis="x", rotation=60)


def _paper_md(table) -> str:
    pcfg = [(p, n) for n in P.GPUS for p in ("dp", "ddp")]
    paper = pd.DataFrame({D.label(*cfg): [("OOM" if table[l][cfg] is None else f"{table[l][cfg]:.2f}")
                                          for l in table] for cfg in pcfg}, index=pd.Index(list(table), name="paper"))
    return D.md_table(paper)


@figure("table1_samples_per_s", records=("train",), title="Table 1: samples/s per loader, DP and DDP",
        claims=("in-memory-not-faster", "irds-ahead-multi-gpu", "ddp-faster-than-dp"))
def table1_samples_per_s(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["train"]
    st = A.steps(A.grid(df))
    cfgs, loaders = A.configs(df), A.grid_loaders(df)
    col = plotting.colors(loaders)
    cells, rel = _tput_cells(df, st, cfgs, loaders), _rel_cells(st, cfgs, loaders)
    fig, (a, b, c) = plotting.start(3, w=14 / 3, h=4.2)
    D.grouped(a, cfgs, loaders, cells, col)
    a.set(title="ours: samples/s (median of steps, 95% CI)", ylabel="samples/s")
    others = [l for l in loaders if l != "in-memory"]   # in-memory is the reference: 0% by definition
    D.grouped(b, cfgs, others, {k: v for k, v in rel.items() if k[1] != "in-memory"}, col)
    for i, cfg in enumerate(cfgs):
        for j, l in enumerate(others):
            if l in P.TABLE1 and (r := P.ratio_vs_in_memory(P.TABLE1, l, cfg)) is not None:
                b.plot(D.xpos(i, j, len(others)), 100 * (r - 1), **D.P_STYLE,
                       label="computed from the paper's Table 1 (% vs in-memory)")
    b.axhline(0, color=col.get("in-memory", "0.3"), lw=1.6, zorder=1.5,
              label="in-memory = the reference (middle: the 0% line)")
    b.set(title="% vs in-memory, same configuration", ylabel="% samples/s vs in-memory")
    _paper_panel(c, P.TABLE1, loaders, col, "paper: samples/s (another scale: 1-8 GPUs)", "samples/s (paper)")
    plotting.legend_below(fig, ncol=len(loaders) + 2)
    t = pd.DataFrame({D.label(*cfg): [D.fmt_cell(cells.get((cfg, l)), rel.get((cfg, l)) if l != "in-memory" else None)
                                      for l in loaders] for cfg in cfgs}, index=pd.Index(loaders, name="loader"))
    md = D.markdown(t, out_png.with_suffix(".md"), "Table 1: samples/s (median [95% CI], % vs in-memory)",
                    f"{D.scale(df)}.\n\n## Paper (Table 1; {P.SCALE})\n\n{_paper_md(P.TABLE1)}")
    cap = (f"Table 1 of the paper, measured: samples/s per loader under DP and DDP ({D.impl(df)}); median of the "
           f"measured steps with a 95% bootstrap interval, samples/s per step = samples of all replicas over "
           f"the slowest rank's step (loading and tokenization included, unlike the authors' timer). Middle: % "
           f"vs in-memory in the same configuration, ours (bars) and the paper's (stars, computed from its "
           f"Table 1); in-memory itself is the reference, the line at 0% in its colour. Right: the paper's values at their scale. OOM: killed by the memory cap. "
           f"Scale: {D.scale(df)}; {P.SCALE}.")
    return [*plotting.save(fig, out_png, cap), md]


def _mem_cells(df, cfgs, loaders, column):
    """A run-row memory column in GB per (config, loader); OOM cells as the note "OOM"."""
    runs = A.per_run(A.runs(A.grid(df)))   # rounds averaged
    out = {}
    for cfg in cfgs:
        for l in loaders:
            rid = A.run_id(l, *cfg)
            if rid not in runs.index:
                continue
            r = runs.loc[rid]
            out[(cfg, l)] = "OOM" if r.status == "oom" else (r[column] / A.GB,) * 3
    return out


@figure("table2_memory", records=("train",), title="Table 2: memory per loader, DP and DDP",
        claims=("irds-memory-7-14pct", "inmem-ddp-memory-linear", "target-irds-15pct-pss"))
def table2_memory(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["train"]
    cfgs, loaders = A.configs(df), A.grid_loaders(df)
    col = plotting.colors(loaders)
    pss, paper_method = _mem_cells(df, cfgs, loaders, "pss_peak_bytes"), _mem_cells(df, cfgs, loaders, "paper_mem_bytes")
    fig, (a, b, c) = plotting.start(3, w=14 / 3, h=4.2)
    D.grouped(a, cfgs, loaders, pss, col)
    a.set(title="ours: PSS summed over the process tree (peak)", ylabel="GB")
    D.grouped(b, cfgs, loaders, paper_method, col)
    b.set(title="ours, the paper's method: main RSS (x replicas for DDP)", ylabel="GB")
    top = max([v[0] for v in (*pss.values(), *paper_method.values()) if not isinstance(v, str)], default=1)
    a.set_ylim(0, 1.08 * top)
    b.set_ylim(0, 1.08 * top)
    _paper_panel(c, P.TABLE2, loaders, col, "paper: GB (main RSS x GPUs; another scale)", "GB (paper)")
    plotting.legend_below(fig, ncol=len(loaders))
    t = pd.DataFrame({D.label(*cfg): [(v if isinstance(v := pss.get((cfg, l)), str) else
                                       f"{v[0]:.3f} (paper method {paper_method[(cfg, l)][0]:.3f})" if v else "-")
                                      for l in loaders] for cfg in cfgs}, index=pd.Index(loaders, name="loader"))
    md = D.markdown(t, out_png.with_suffix(".md"), "Table 2: memory in GB (summed PSS peak; paper's method beside)",
                    f"{D.scale(df)}.\n\n## Paper (Table 2, GB; {P.SCALE})\n\n{_paper_md(P.TABLE2)}")
    cap = (f"Table 2 of the paper, measured: memory per loader and configuration ({D.impl(df)}). Left: PSS summed "
           f"over the whole process tree (ranks and DataLoader workers; shared pages split, so nothing is "
           f"counted twice), peak over the run, sampled every few tens of ms from outside the run. Middle: the "
           f"paper's method on the same runs (main process RSS, times the replicas for DDP). Right: the paper's values at "
           f"their scale. Every process here also holds torch and the model (a few hundred MB), which the "
           f"small collection does not dwarf as the paper's 22 GB did. Scale: {D.scale(df)}; {P.SCALE}.")
    return [*plotting.save(fig, out_png, cap), md]


def _duplication(df, many, loaders):
    """PSS(N replicas) / PSS(1) per (config, loader), ratio of medians with a bootstrap interval."""
    vals = {}
    for cfg in many:
        for l in loaders:
            num, den = A.mem(df, A.run_id(l, *cfg)), A.mem(df, A.run_id(l, cfg[0], 1))
            if num.size and den.size:
                vals[(cfg, l)] = intervals.ratio_ci(num, den, n_boot=D.N_BOOT)
            elif A.oom(df, cfg, l):
                vals[(cfg, l)] = "OOM"
    return vals


@figure("memory_duplication", records=("train",), title="memory duplication factor: PSS(N replicas) / PSS(1)",
        claims=("inmem-ddp-memory-linear",))
def memory_duplication(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["train"]
    cfgs, loaders = A.configs(df), A.grid_loaders(df)
    col = plotting.colors(loaders)
    many = [c for c in cfgs if c[1] > 1]
    vals = _duplication(df, many, loaders)
    fig, (ax,) = plotting.start(1, w=7.5, h=4)
    if not many:
        plotting.not_run(ax, "no run with more than one replica")
    else:
        D.grouped(ax, many, loaders, vals, col)
        for i, cfg in enumerate(many):
            for j, l in enumerate(loaders):
                if l in P.TABLE2 and (a := P.TABLE2[l].get(cfg)) and (b := P.TABLE2[l].get((cfg[0], 1))):
                    ax.plot(D.xpos(i, j, len(loaders)), a / b, **D.P_STYLE,
                            label="computed from the paper's Table 2 (main RSS x GPUs for DDP)")
        ax.axhline(1, color="0.5", lw=0.8)
        ax.set(ylabel="PSS(N) / PSS(1)", title="memory duplication factor")
    n_keys = len(loaders) + 1   # one per loader and the paper's star: one row when they fit, else two
    plotting.legend_below(fig, ncol=n_keys if n_keys <= 4 else (n_keys + 1) // 2)
    cap = (f"Beyond the paper: summed PSS of the process tree with N replicas over that with one, per loader "
           f"(readings during the measured steps; 95% bootstrap interval of the ratio of medians, drawn where the "
           f"readings vary: a run whose memory held still has none). DDP gives "
           f"every rank its own process, model and, for in-memory, its own copy of the corpus; DP threads "
           f"share one process. Stars: the same ratio computed from the paper's Table 2, whose memory is the "
           f"main process's RSS times the GPU count (so DDP is 2x there by construction). {D.impl(df)}. "
           f"Scale: {D.scale(df)}; {P.SCALE}.")
    return plotting.save(fig, out_png, cap)

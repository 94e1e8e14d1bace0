"""Figures of the loaders study (Moving Stuff Around): Figure 1, Tables 1-3 drawn as figures (with
Markdown tables beside them), and the beyond-the-paper figures. Drawn from records only; the paper's
values are drawn in their own marker and colour, in their own panel when at another scale."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..core import claims as core_claims
from ..core import plotting
from ..core.figures import Registry
from . import analysis as A
from . import paper_values as P

FIGURES = Registry()
N_BOOT = 400  # bootstrap resamples of the drawn intervals (the claims use the core default)
PARTS = ("wait_s", "copy_s", "compute_s")
PART_LABEL = {"wait_s": "data wait (DataLoader: read + tokenize)", "copy_s": "host-to-device copy",
              "compute_s": "forward + backward + optimizer"}
CPU = "CPU stand-in: DP = one replica per thread in one process; DDP = one process per replica (gloo)"


def _impl(df: pd.DataFrame) -> str:
    """What ran as DP and DDP, from the records (older records without the column: the CPU stand-ins)."""
    if "implementation" not in df or df.implementation.dropna().empty:
        return CPU
    return "ran as: " + "; ".join(sorted(set(A.runs(df).implementation.dropna())))


def _scale(df: pd.DataFrame) -> str:
    prov = df.attrs.get("provenance", {})
    coll = prov.get("collection", {})
    r = df[df.kind == "step"] if "kind" in df else df
    bpr = int(r.batch_per_replica.iloc[0]) if "batch_per_replica" in r and len(r) else "?"
    ml = int(r.max_length.iloc[0]) if "max_length" in r and len(r) else "?"
    model = f", batch {bpr} per replica, max length {ml}, cut-down MiniLM" if bpr != "?" else ""
    gpu = (prov.get("gpu") or {}).get("gpu_model") if prov.get("device") == "cuda" else None
    return (f"ours: {gpu or prov.get('cpu_model', 'this CPU')}, profile {prov.get('profile', '?')}, "
            f"{coll.get('n_docs', '?')} documents ({coll.get('collection_bytes', 0) / 1e6:.0f} MB){model}")


def _configs(df) -> list[tuple[str, int]]:
    r = A.runs(df[df.option == "grid"])
    have = set(zip(r.parallel, r.replicas.astype(int)))
    return [(p, n) for n in sorted({n for _, n in have}) for p in ("dp", "ddp") if (p, n) in have]


def _label(par, n):
    return f"{par.upper()} {n}"


def _grouped(ax, groups, hues, values, colors, width=0.8, hatch=None, label_suffix=""):
    """Bars at x = group index, one per hue; ``values[(g, h)] = (est, lo, hi)`` or a string (a note)."""
    w = width / max(len(hues), 1)
    for j, h in enumerate(hues):
        for i, g in enumerate(groups):
            v = values.get((g, h))
            x = i - width / 2 + (j + 0.5) * w
            if isinstance(v, str):
                ax.text(x, 0.02, v, rotation=90, ha="center", va="bottom", fontsize="x-small", color="0.2",
                        transform=ax.get_xaxis_transform())
            elif v is not None and np.isfinite(v[0]):
                ax.bar(x, v[0], w, color=colors[h], hatch=hatch, label=f"{h}{label_suffix}" if i == 0 else None,
                       edgecolor="white")
                if v[1] is not None and np.isfinite(v[1]) and v[2] != v[1]:
                    ax.errorbar(x, v[0], yerr=[[v[0] - v[1]], [v[2] - v[0]]], color="0.2", capsize=2, lw=1)
    ax.set_xticks(range(len(groups)), [_label(*g) if isinstance(g, tuple) else g for g in groups])
    return [i - width / 2 + (j + 0.5) * w for i in range(len(groups)) for j in range(len(hues))]


def _xpos(i, j, n_hues, width=0.8):
    return i - width / 2 + (j + 0.5) * width / max(n_hues, 1)


def _wait_share(st, par: str, n: int, loaders: list[str]) -> dict[str, float]:
    """% of the mean step time spent waiting for the DataLoader's batch, per loader."""
    g = st[(st.parallel == par) & (st.replicas == n)].groupby("loader")[list(PARTS)].mean()
    return {l: 100 * g.loc[l, "wait_s"] / g.loc[l].sum() for l in loaders if l in g.index}


@FIGURES.figure("fig1_step_time_share", records=("train",), title="share of step time in the DataLoader")
def fig1_step_time_share(inputs: dict[str, list[Path]], out_png: Path) -> list[Path]:
    plotting.apply_style()
    df = A.read(inputs["train"])
    st = A.steps(df[df.option == "grid"])
    cfgs = _configs(df)
    loaders = list(dict.fromkeys(df[df.option == "grid"].loader))
    labels = [_label(*c) for c in cfgs]
    col = plotting.colors(labels)
    fig, ax = plt.subplots(figsize=(7.5, 0.5 * len(loaders) + 2.2), layout="constrained")
    marks = "osD^v<>"
    for k, ((par, n), lab) in enumerate(zip(cfgs, labels)):
        share = _wait_share(st, par, n, loaders)
        y = [loaders.index(l) + (k - (len(cfgs) - 1) / 2) * 0.12 for l in share]
        ax.plot(list(share.values()), y, marks[k % len(marks)], color=col[lab], ms=7, ls="none",
                label=f"ours, {lab} (measured)")
    ax.plot([100 * P.FIG1_DATALOADER_SHARE], [len(loaders)], **P_STYLE,
            label="paper Fig. 1: ir_datasets, 500 steps, GPU profiler (its GPU count is not stated)")
    ax.set_yticks(range(len(loaders) + 1), [*loaders, "paper (ir_datasets)"])
    ax.invert_yaxis()
    ax.set(xlabel="% of step time waiting for the DataLoader (read + tokenize)", xlim=(0, None),
           title="time in the DataLoader per step")
    if not cfgs:
        plotting.not_run(ax, "no grid runs in the records")
    plotting.legend_below(fig, ncol=2)
    cap = (f"Figure 1 of the paper, measured: the share of the mean step time spent waiting for the "
           f"DataLoader's batch (reading + tokenization), per loader and configuration (measured steps only, "
           f"warm-up excluded; parts averaged over ranks); the rest is the host-to-device copy and "
           f"forward + backward + optimizer. The paper's 17.8% (ir_datasets, Tensorboard profiler, 500 steps, GPU) "
           f"is in its own row: the paper does not say on how many GPUs. {_impl(df)}. "
           f"Scale: {_scale(df)}; {P.SCALE}. On CPU the copy is empty and compute is far slower than on a GPU, "
           f"so the data share is smaller there than on the paper's GPUs.")
    return plotting.save(fig, out_png, cap)


P_STYLE = {**plotting.PAPER_STYLE}


def _tput_cells(st, cfgs, loaders):
    cells = {}
    for cfg in cfgs:
        for l in loaders:
            v = A.tput(st, parallel=cfg[0], replicas=cfg[1], loader=l)
            if v.size:
                cells[(cfg, l)] = core_claims.bootstrap_ci(v, n_boot=N_BOOT)
    return cells


def _oom(df, cfg, loader) -> bool:
    r = A.runs(df[(df.option == "grid") & (df.loader == loader) & (df.parallel == cfg[0]) & (df.replicas == cfg[1])])
    return bool(len(r)) and (r.status == "oom").any()


@FIGURES.figure("table1_samples_per_s", records=("train",), title="Table 1: samples/s per loader, DP and DDP")
def table1_samples_per_s(inputs, out_png):
    plotting.apply_style()
    df = A.read(inputs["train"])
    st = A.steps(df[df.option == "grid"])
    cfgs, loaders = _configs(df), list(dict.fromkeys(df[df.option == "grid"].loader))
    col = plotting.colors(loaders)
    cells = _tput_cells(st, cfgs, loaders)
    for cfg in cfgs:
        for l in loaders:
            if _oom(df, cfg, l):
                cells[(cfg, l)] = "OOM"
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(14, 4.2), layout="constrained")
    _grouped(a, cfgs, loaders, cells, col)
    a.set(title="ours: samples/s (median of steps, 95% CI)", ylabel="samples/s")
    rel = {}
    for cfg in cfgs:
        base = A.tput(st, parallel=cfg[0], replicas=cfg[1], loader="in-memory")
        for l in loaders:
            v = A.tput(st, parallel=cfg[0], replicas=cfg[1], loader=l)
            if v.size and base.size:
                e, lo, hi = core_claims.ratio_ci(v, base, n_boot=N_BOOT)
                rel[(cfg, l)] = (100 * (e - 1), 100 * (lo - 1), 100 * (hi - 1))
    _grouped(b, cfgs, loaders, rel, col)
    for i, cfg in enumerate(cfgs):
        for j, l in enumerate(loaders):
            if l in P.TABLE1 and (r := P.ratio_vs_in_memory(P.TABLE1, l, cfg)) is not None:
                b.plot(_xpos(i, j, len(loaders)), 100 * (r - 1), **P_STYLE,
                       label="computed from the paper's Table 1 (% vs in-memory)")
    b.axhline(0, color="0.5", lw=0.8)
    b.set(title="% vs in-memory, same configuration", ylabel="% samples/s vs in-memory")
    pcfg = [(p, n) for n in P.GPUS for p in ("dp", "ddp")]
    pl = [l for l in loaders if l in P.TABLE1]
    pv = {(cfg, l): ((P.TABLE1[l][cfg],) * 3 if P.TABLE1[l][cfg] is not None else "OOM") for cfg in pcfg for l in pl}
    _grouped(c, pcfg, pl, pv, col)
    c.set(title="paper: samples/s (another scale: 1-8 GPUs)", ylabel="samples/s (paper)")
    c.tick_params(axis="x", rotation=60)
    plotting.legend_below(fig, ncol=len(loaders) + 1)
    _table1_md(cells, rel, cfgs, loaders, out_png.with_suffix(".md"), df)
    cap = (f"Table 1 of the paper, measured: samples/s per loader under DP and DDP ({_impl(df)}); median of the "
           f"measured steps with a 95% bootstrap interval, samples/s per step = samples of all replicas over "
           f"the slowest rank's step (loading and tokenization included, unlike the authors' timer). Middle: % "
           f"vs in-memory in the same configuration, ours (bars) and the paper's (stars, computed from its "
           f"Table 1). Right: the paper's values at their scale. OOM: killed by the memory cap. "
           f"Scale: {_scale(df)}; {P.SCALE}.")
    return [*plotting.save(fig, out_png, cap), out_png.with_suffix(".md")]


def _fmt_cell(v, pct=None):
    if isinstance(v, str):
        return v
    if v is None:
        return "-"
    s = f"{v[0]:.1f} [{v[1]:.1f}, {v[2]:.1f}]"
    return s + (f" ({pct[0]:+.1f}%)" if pct is not None and not isinstance(pct, str) else "")


def _table1_md(cells, rel, cfgs, loaders, path, df):
    t = pd.DataFrame({_label(*cfg): [_fmt_cell(cells.get((cfg, l)), rel.get((cfg, l)) if l != "in-memory" else None)
                                     for l in loaders] for cfg in cfgs}, index=pd.Index(loaders, name="loader"))
    paper = pd.DataFrame({_label(*cfg): [("OOM" if P.TABLE1[l][cfg] is None else f"{P.TABLE1[l][cfg]:.2f}")
                                         for l in P.TABLE1] for cfg in [(p, n) for n in P.GPUS for p in ("dp", "ddp")]},
                         index=pd.Index(list(P.TABLE1), name="paper"))
    A.markdown(t, path, "Table 1: samples/s (median [95% CI], % vs in-memory)",
               f"{_scale(df)}.\n\n## Paper (Table 1; {P.SCALE})\n\n{A._md_table(paper)}")


@FIGURES.figure("table2_memory", records=("train",), title="Table 2: memory per loader, DP and DDP")
def table2_memory(inputs, out_png):
    plotting.apply_style()
    df = A.read(inputs["train"])
    cfgs, loaders = _configs(df), list(dict.fromkeys(df[df.option == "grid"].loader))
    col = plotting.colors(loaders)
    runs = A.runs(df[df.option == "grid"]).set_index("run_id")

    def cells(column):
        out = {}
        for cfg in cfgs:
            for l in loaders:
                rid = A.run_id(l, *cfg)
                if rid not in runs.index:
                    continue
                r = runs.loc[rid]
                out[(cfg, l)] = "OOM" if r.status == "oom" else (r[column] / A.GB,) * 3
        return out

    pss, paper_method = cells("pss_peak_bytes"), cells("paper_mem_bytes")
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(14, 4.2), layout="constrained")
    _grouped(a, cfgs, loaders, pss, col)
    a.set(title="ours: PSS summed over the process tree (peak)", ylabel="GB")
    _grouped(b, cfgs, loaders, paper_method, col)
    b.set(title="ours, the paper's method: main RSS (x replicas for DDP)", ylabel="GB")
    top = max([v[0] for v in (*pss.values(), *paper_method.values()) if not isinstance(v, str)], default=1)
    a.set_ylim(0, 1.08 * top)
    b.set_ylim(0, 1.08 * top)
    pcfg = [(p, n) for n in P.GPUS for p in ("dp", "ddp")]
    pl = [l for l in loaders if l in P.TABLE2]
    pv = {(cfg, l): ((P.TABLE2[l][cfg],) * 3 if P.TABLE2[l][cfg] is not None else "OOM") for cfg in pcfg for l in pl}
    _grouped(c, pcfg, pl, pv, col)
    c.set(title="paper: GB (main RSS x GPUs; another scale)", ylabel="GB (paper)")
    c.tick_params(axis="x", rotation=60)
    plotting.legend_below(fig, ncol=len(loaders))
    t = pd.DataFrame({_label(*cfg): [(v if isinstance(v := pss.get((cfg, l)), str) else
                                      f"{v[0]:.3f} (paper method {paper_method[(cfg, l)][0]:.3f})" if v else "-")
                                     for l in loaders] for cfg in cfgs}, index=pd.Index(loaders, name="loader"))
    paper = pd.DataFrame({_label(*cfg): [("OOM" if P.TABLE2[l][cfg] is None else f"{P.TABLE2[l][cfg]:.2f}")
                                         for l in P.TABLE2] for cfg in pcfg}, index=pd.Index(list(P.TABLE2), name="paper"))
    md = A.markdown(t, out_png.with_suffix(".md"), "Table 2: memory in GB (summed PSS peak; paper's method beside)",
                    f"{_scale(df)}.\n\n## Paper (Table 2, GB; {P.SCALE})\n\n{A._md_table(paper)}")
    cap = (f"Table 2 of the paper, measured: memory per loader and configuration ({_impl(df)}). Left: PSS summed "
           f"over the whole process tree (ranks and DataLoader workers; shared pages split, so nothing is "
           f"counted twice), peak over the run, sampled every few tens of ms from outside the run. Middle: the "
           f"paper's method on the same runs (main process RSS, times the replicas for DDP). Right: the paper's values at "
           f"their scale. Every process here also holds torch and the model (a few hundred MB), which the "
           f"small collection does not dwarf as the paper's 22 GB did. Scale: {_scale(df)}; {P.SCALE}.")
    return [*plotting.save(fig, out_png, cap), md]


def _paper_key(rid: str):
    """The paper's Table 3 row of the same setting as our run ``rid``, or None (never a row of another
    setting: our "pin_memory+2 workers+ramdisk" is not the paper's 8-worker row)."""
    opt, _, val = rid.partition("=")
    if opt.startswith("pin_memory+") and opt.endswith("ramdisk"):
        opt, val = opt, "-"
    key = (opt, val)
    return key if key in P.TABLE3 else None


def _paper_rel(key, col: int = 0):
    """The paper's value against its baseline (samples/s: col 0; memory: col 1), as a ratio."""
    return None if key is None else P.TABLE3[key][col] / P.TABLE3[("baseline", "-")][col]


def _option_rows(r) -> list[str]:
    """Our runs in their order, then the paper's Table 3 rows we did not run (their own rows)."""
    ours = list(dict.fromkeys(r.run_id))
    have = {_paper_key(rid) for rid in ours}
    return ours + [f"{o}={v}" for (o, v) in P.TABLE3 if (o, v) not in have]


def _unrun_why(df) -> str:
    w = df.attrs.get("provenance", {}).get("options", {}).get("num_workers")
    return f"this profile runs num_workers {', '.join(map(str, w))} only" if w else "not in this profile"


def _option_cells(df):
    st = A.steps(df)
    r = A.runs(df)
    order = _option_rows(r)
    base = A.tput(st, run_id="baseline=-")
    base_mem = A.mem(df, "baseline=-")
    cells, rel, mem, notes = {}, {}, {}, {}
    for rid in order:
        rows = r[r.run_id == rid]
        v = A.tput(st, run_id=rid)
        if rows.empty or rows.iloc[0].status != "ok" or not v.size:
            notes[rid] = str(rows.iloc[0].get("why") or rows.iloc[0].status) if len(rows) else _unrun_why(df)
            continue
        cells[rid] = core_claims.bootstrap_ci(v, n_boot=N_BOOT)
        if base.size:
            e, lo, hi = core_claims.ratio_ci(v, base, n_boot=N_BOOT)
            rel[rid] = (100 * (e - 1), 100 * (lo - 1), 100 * (hi - 1))
        m = A.mem(df, rid)
        if m.size and base_mem.size:
            mem[rid] = core_claims.ratio_ci(m, base_mem, n_boot=N_BOOT)
    return order, cells, rel, mem, notes, r.set_index("run_id")


def _option_panel(ax, order, vals, col, title):
    for i, rid in enumerate(order):
        if (v := vals.get(rid)) is not None:
            ax.errorbar(v[0], i, xerr=[[v[0] - v[1]], [v[2] - v[0]]], fmt="o", color=col, ecolor="0.3", capsize=2,
                        lw=1, label="ours (measured, median and 95% CI)")
    ax.set_title(title)


def _option_paper(ax, order, col: int, pct: bool):
    for i, rid in enumerate(order):
        if (pv := _paper_rel(_paper_key(rid), col)) is not None:
            ax.plot(100 * (pv - 1) if pct else pv, i, **P_STYLE, label="paper's Table 3 (same setting; computed)")


@FIGURES.figure("table3_options", records=("options",), title="Table 3: pin_memory, workers, RAMDISK")
def table3_options(inputs, out_png):
    plotting.apply_style()
    df = A.read(inputs["options"])
    order, cells, rel, mem, notes, runs = _option_cells(df)
    col = plotting.colors(["ours"])["ours"]
    labels = [rid.removesuffix("=-") for rid in order]
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(14, 0.42 * len(order) + 2), layout="constrained", sharey=True,
                                  gridspec_kw={"width_ratios": [1.2, 1, 1]})
    _option_panel(a, order, cells, col, "ours: samples/s")
    _option_panel(b, order, rel, col, "samples/s: % vs baseline")
    _option_panel(c, order, {k: v for k, v in mem.items()}, col, "memory: x baseline (summed PSS peak)")
    for i, rid in enumerate(order):
        if rid in notes:
            a.text(0.02, i, "not run: " + notes[rid], va="center", fontsize="x-small", color="0.25",
                   transform=a.get_yaxis_transform())
    _option_paper(b, order, 0, pct=True)
    _option_paper(c, order, 1, pct=False)
    a.set_yticks(range(len(order)), labels, fontsize="small")
    a.invert_yaxis()
    b.axvline(0, color="0.5", lw=0.8)
    c.axvline(1, color="0.5", lw=0.8)
    plotting.legend_below(fig, ncol=2)
    md_rows = {rid: [(_fmt_cell(cells[rid], rel.get(rid)) if rid in cells else f"not run ({notes.get(rid, '')})"),
                     (f"{runs.loc[rid].pss_peak_bytes / A.GB:.3f}" if rid in cells else "-"),
                     (f"{100 * (v - 1):+.1f}%" if (v := _paper_rel(_paper_key(rid))) is not None else "-"),
                     (f"{P.TABLE3[k][1]:.2f}" if (k := _paper_key(rid)) else "-")] for rid in order}
    t = pd.DataFrame(md_rows, index=["samples/s [95% CI] (% vs baseline)", "memory GB (summed PSS peak)",
                                     "paper: % vs baseline (computed from Table 3)", "paper: memory GB"]).T
    t.index.name = "option"
    o = df.attrs.get("provenance", {}).get("options", {})
    md = A.markdown(t, out_png.with_suffix(".md"), "Table 3: options on the paper's chosen configuration",
                    f"Configuration: {o.get('loader', '?')}, {str(o.get('parallel', '?')).upper()}, "
                    f"{o.get('replicas', '?')} replicas. {_scale(df)}. Paper: ir_datasets, DDP, 4 GPUs.")
    cap = (f"Table 3 of the paper, measured: samples/s and memory of each option on the paper's chosen "
           f"configuration ({o.get('loader', '?')}, {str(o.get('parallel', '?')).upper()}, {o.get('replicas', '?')} "
           f"replicas): ours as dots with 95% bootstrap intervals over steps (samples/s) or memory readings (memory), "
           f"as a % change or ratio against the baseline (no workers, no pin_memory, page cache warm); the paper's "
           f"as stars, computed from its Table 3, on the row of the same setting only. Rows the paper has and this "
           f"profile did not run (more workers than it runs, pin_memory without CUDA) say why. RAMDISK adds the "
           f"copied files' size to memory, as the paper does. Beyond the paper: worker start method and a cold page "
           f"cache. Scale: {_scale(df)}; {P.SCALE}.")
    return [*plotting.save(fig, out_png, cap), md]


@FIGURES.figure("loader_only_throughput", records=("loader_only",), title="samples/s each loader delivers, no model")
def loader_only_throughput(inputs, out_png):
    plotting.apply_style()
    df = A.read(inputs["loader_only"])
    m = df[df.phase == "measured"]
    loaders, modes = list(dict.fromkeys(m.loader)), list(dict.fromkeys(m["mode"]))
    col = plotting.colors(modes)
    vals = {(l, mo): core_claims.bootstrap_ci(g.samples_per_s, n_boot=N_BOOT) for (l, mo), g in m.groupby(["loader", "mode"])}
    fig, ax = plt.subplots(figsize=(7.5, 4), layout="constrained")
    for j, mo in enumerate(modes):  # points, not bars: a log axis has no zero for bars to start from
        for i, l in enumerate(loaders):
            if (v := vals.get((l, mo))) is not None:
                ax.errorbar(_xpos(i, j, len(modes)), v[0], yerr=[[v[0] - v[1]], [v[2] - v[0]]], fmt="o",
                            color=col[mo], capsize=3, label=mo if i == 0 else None)
    ax.set_xticks(range(len(loaders)), loaders)
    ax.set_yscale("log")
    ax.set(ylabel="samples/s (one process, one thread)", title="loader-only throughput (no model)")
    plotting.legend_below(fig, ncol=2)
    cap = (f"Beyond the paper: samples/s each loader delivers with no model, in one process and one thread "
           f"(a sample = a query, its positive and a random negative document): 'lookup' reads the two "
           f"documents, 'lookup+tokenize' adds the collate function's tokenization (two pairs per sample). "
           f"Median of {m.groupby(['loader', 'mode']).size().min()} repeats (95% bootstrap interval), warm-up "
           f"excluded. A faster accelerator cannot train faster than this rate per data-loading core. "
           f"No paper value (the paper does not measure it). Scale: {_scale(df)}.")
    return plotting.save(fig, out_png, cap)


@FIGURES.figure("worker_memory_growth", records=("workers",), title="memory of each DataLoader worker over batches")
def worker_memory_growth(inputs, out_png):
    plotting.apply_style()
    df = A.read(inputs["workers"])
    loaders = list(dict.fromkeys(df.loader))
    series = sorted({f"{w} worker(s): {'main' if k < 0 else f'worker {k}'}"
                     for w, k in zip(df.num_workers, df.worker)})
    col = plotting.colors(series)
    fig, axes = plt.subplots(1, len(loaders), figsize=(5 * len(loaders), 4), layout="constrained",
                             sharey=True, squeeze=False)
    for ax, l in zip(axes[0], loaders):
        g = df[df.loader == l]  # every reading: before the first batch too (the fork), as hollow markers
        for (w, k), s in g.groupby(["num_workers", "worker"]):
            name = f"{w} worker(s): {'main' if k < 0 else f'worker {k}'}"
            s = s.sort_values("t_rel_s")
            mk = "s" if k < 0 else "ox+1234"[int(k) % 7]  # coinciding workers stay apart by marker
            ax.plot(s.t_rel_s, s.uss_bytes / 1e6, color=col[name], label=name, ls="-" if k >= 0 else "--",
                    marker=mk, ms=7, mew=1.8)
            early = s[s.phase != "measured"]
            ax.plot(early.t_rel_s, early.uss_bytes / 1e6, ls="none", marker="o", ms=11, mfc="none", mec=col[name],
                    mew=1.5, zorder=3)
        ax.set(title=l, ylabel="USS (MB, private pages)", xlabel="seconds (ringed: loading the collection)")
    plotting.legend_below(fig, ncol=3)
    cap = ("Beyond the paper: private memory (USS) of the main process and of each DataLoader worker over "
           "time while batches are delivered (no model); every reading is a marker, ringed while the "
           "process loads the collection (before its workers start). Workers are forked: pages of the dict loader's Python objects "
           "that a worker reads get copied into it as their reference counts change (copy-on-read, a "
           "long-standing PyTorch issue), so its USS grows with the documents it touches (the main process's "
           "USS drops when the workers fork: its pages become shared with them); loaders whose "
           f"data lives in files or numpy/Arrow buffers do not grow so. Scale: {_scale(df)}.")
    return plotting.save(fig, out_png, cap)


@FIGURES.figure("memory_duplication", records=("train",), title="memory duplication factor: PSS(N replicas) / PSS(1)")
def memory_duplication(inputs, out_png):
    plotting.apply_style()
    df = A.read(inputs["train"])
    cfgs, loaders = _configs(df), list(dict.fromkeys(df[df.option == "grid"].loader))
    col = plotting.colors(loaders)
    many = [c for c in cfgs if c[1] > 1]
    vals = {}
    for cfg in many:
        for l in loaders:
            num, den = A.mem(df, A.run_id(l, *cfg)), A.mem(df, A.run_id(l, cfg[0], 1))
            if num.size and den.size:
                vals[(cfg, l)] = core_claims.ratio_ci(num, den, n_boot=N_BOOT)
            elif _oom(df, cfg, l):
                vals[(cfg, l)] = "OOM"
    fig, ax = plt.subplots(figsize=(7.5, 4), layout="constrained")
    if not many:
        plotting.not_run(ax, "no run with more than one replica")
    else:
        _grouped(ax, many, loaders, vals, col)
        for i, cfg in enumerate(many):
            for j, l in enumerate(loaders):
                if l in P.TABLE2 and (a := P.TABLE2[l].get(cfg)) and (b := P.TABLE2[l].get((cfg[0], 1))):
                    ax.plot(_xpos(i, j, len(loaders)), a / b, **P_STYLE,
                            label="computed from the paper's Table 2 (main RSS x GPUs for DDP)")
        ax.axhline(1, color="0.5", lw=0.8)
        ax.set(ylabel="PSS(N) / PSS(1)", title="memory duplication factor")
    plotting.legend_below(fig, ncol=3)
    cap = (f"Beyond the paper: summed PSS of the process tree with N replicas over that with one, per loader "
           f"(readings during the measured steps; 95% bootstrap interval of the ratio of medians, drawn where the "
           f"readings vary: a run whose memory held still has none). DDP gives "
           f"every rank its own process, model and, for in-memory, its own copy of the corpus; DP threads "
           f"share one process. Stars: the same ratio computed from the paper's Table 2, whose memory is the "
           f"main process's RSS times the GPU count (so DDP is 2x there by construction). {_impl(df)}. "
           f"Scale: {_scale(df)}; {P.SCALE}.")
    return plotting.save(fig, out_png, cap)

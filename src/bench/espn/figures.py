"""ESPN's figures and tables (paper Figures 1, 5-10, Tables 4/5, equation 4), drawn from records only, with
the paper's values drawn beside ours in their own marker and colour. A table (CSV + Markdown) is
written beside each figure."""
from __future__ import annotations

from pathlib import Path

import functools

import numpy as np
import pandas as pd

from ..core import records
from ..core.atomic import write_text
from ..core.figures import Registry
from . import paper_values as PV
from .eq4 import ESPN_BATCH, eq4_table

# What each figure shows, for the report (the caption the figure writes adds the run's details).
DESCRIPTIONS = {
    "eq4": (
        "ESPN equation 4: query batch threshold = SSD bandwidth x prefetch budget / data per query, with "
        "the bandwidth of our reader and of fio measured on the same file and the measured prefetch "
        "budget, next to the observed knee of Figures 8/9; the paper's 12 and 192 drawn as stars."
    ),
    "fig1": (
        "ESPN Figure 1: end-to-end query latency broken down into encode, ANN search, prefetch wait, "
        "critical-path embedding reads and re-ranking, per back end (memory, mmap, direct I/O, direct I/O "
        "+ prefetcher) and memory budget (fraction of the embedding table that fits in memory). Cold page "
        "cache at the start of each run. Bars marked [measured on an emulated SSD] ran under a read-IOPS "
        "throttle (cgroup blkio (v1) or io.max (v2)), never merged with the native ones."
    ),
    "fig10": (
        "ESPN Figure 10 (modelled, as in the paper): batch query latency and throughput from the measured "
        "ANN time, critical-path access and MaxSim time per batch size; the paper's batch threshold 12 "
        "drawn."
    ),
    "fig5": (
        "ESPN Figure 5: recall@1000 of the CLS candidate list (IVF over 128-d CLS vectors, ir_measures "
        "over the qrels) and median per-query ANN time against nprobe. The paper's ColBERTer R@1k (Table "
        "1) is drawn for reference."
    ),
    "fig6": (
        "ESPN Figure 6: MRR@10 and nDCG@10 when only the top n candidates are MaxSim re-ranked (the rest "
        "keep their CLS order), normalised by re-ranking all K. Stars: the paper's ColBERTer values "
        "(99.3-99.7% at 64-128). The caption beside the figure names the encoder and whether the text is "
        "synthetic."
    ),
    "fig7": (
        "ESPN Figure 7: prefetcher hit rate (fraction of the final top-n candidates already read after "
        "delta = step x nprobe clusters) against the prefetch step. Dark markers: the paper's stated "
        "values."
    ),
    "fig8_9": (
        "ESPN Figures 8/9: critical-path embedding access latency against query batch size for exact (top "
        "K) and partial (top 64) re-ranking: memory, direct I/O, and ESPN with a constant prefetch budget "
        "(emulated by a sleep, as the paper simulates batches); below, as a ratio to memory with the "
        "paper's 7.2x and batch thresholds drawn."
    ),
    "iops": (
        "ESPN reference: our O_DIRECT readers against fio (4 KiB random reads, same file, same run) at "
        "each queue depth."
    ),
    "tables45": (
        "ESPN Tables 4/5: end-to-end latency of mmap, direct I/O and direct I/O + prefetcher across "
        "memory budgets, with the fully cached latency, and the paper's Table 4 (GDS) in its own panel, "
        "one colour per back end in both. The budget mechanism (a cgroup memory cap, v1 or v2, or page-cache "
        "eviction) is in the records. Series marked [measured on an emulated SSD] (dash-dot) ran under a "
        "read-IOPS throttle (cgroup blkio (v1) or io.max (v2)) and are reported apart from the native ones."
    ),
}
FIGURES = Registry(descriptions=DESCRIPTIONS)

BACKEND_NAMES = {"memory": "memory (fully cached)", "mmap": "mmap (MADV_RANDOM)", "direct": "direct I/O",
                 "direct_prefetch": "direct I/O + prefetcher", "vm_swap": "virtual memory + swap",
                 "gds": "GDS (kvikio)"}
# The paper's own series names (Tables 4/5): its direct reads are GPUDirect Storage.
PAPER_NAMES = {"mmap": "mmap", "vm_swap": "virtual memory + swap", "direct": "ESPN (GDS)",
               "direct_prefetch": "ESPN (GDS + prefetcher)"}
EMU = " (emulated SSD)"


def _read(paths) -> pd.DataFrame:
    return records.read_all(paths)


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    if isinstance(v, (float, np.floating)):
        return str(int(v)) if float(v).is_integer() and abs(v) < 1e9 else f"{v:.3g}"
    return str(v)


def _table(df: pd.DataFrame, out_png) -> list[Path]:
    """Write a table beside a figure as CSV and Markdown (atomic)."""
    stem = Path(out_png).with_suffix("")
    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(_fmt(v) for v in r) + " |" for _, r in df.iterrows()]
    return [write_text(f"{stem}.csv", df.to_csv(index=False)), write_text(f"{stem}.md", "\n".join(lines) + "\n")]


def emulated_ssd_label(name: str, iops) -> str:
    """Rows run on the read-throttled disk (cgroup blkio v1 or io.max v2) were measured, on an emulated slower SSD."""
    cap = f", {int(iops):,} read IOPS" if iops is not None and iops == iops else ""
    return f"{name} [measured on an emulated SSD{cap}]"


def _with_series(df: pd.DataFrame) -> pd.DataFrame:
    """``series``: the back end, suffixed for rows run on the emulated slower SSD (read throttle), so
    emulated rows are never drawn or tabulated as native ones."""
    ssd = df["ssd"].fillna("native") if "ssd" in df else pd.Series("native", index=df.index)
    return df.assign(ssd=ssd, series=np.where(ssd == "emulated", df.backend + EMU, df.backend))


def _ssd_iops(df: pd.DataFrame):
    v = df.loc[df.ssd == "emulated", "ssd_read_iops"].dropna() if "ssd_read_iops" in df else []
    return float(v.iloc[0]) if len(v) else None


def _series_label(series: str, iops=None) -> str:
    if series.endswith(EMU):
        return emulated_ssd_label(BACKEND_NAMES.get(series[:-len(EMU)], series), iops)
    return BACKEND_NAMES.get(series, series)


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[(df.phase == "measured") & (df.status == "ok")]


def _mpl():
    """matplotlib and the harness's plotting helpers, imported when a figure is drawn: the CLI that
    registers these figures also starts the e2e worker processes, which never draw."""
    import matplotlib.pyplot as plt

    from ..core import plotting

    plotting.apply_style()
    return plt, plotting


@functools.lru_cache(maxsize=1)
def backend_colors() -> dict:
    """One colour per back end in every panel (gds, never run here, takes the palette's next colour)."""
    from ..core import plotting

    return {**plotting.colors(["direct", "direct_prefetch", "memory", "mmap", "vm_swap"]),
            "gds": plotting.colors([f"c{i}" for i in range(6)])["c5"]}


def _plain_log2(ax) -> None:
    """A log-2 x axis with plain numbers (1, 2, 4, ...) as tick labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def _plain_log_y(ax) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


@FIGURES.figure("fig1", records=("e2e",), title="end-to-end latency breakdown")
def fig1(inputs, out_png):
    plt, plotting = _mpl()
    df = _with_series(_read(inputs["e2e"]))
    m, iops = _ok(df), _ssd_iops(df)
    stages = ["encode_s", "ann_s", "prefetch_wait_s", "crit_read_s", "rerank_s"]
    g = m.groupby(["series", "budget"])[stages].mean().reset_index()
    g["label"] = [f"{_series_label(s, iops)}, budget {b}" for s, b in zip(g.series, g.budget)]
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.32 * max(len(g), 1)), layout="constrained")
    left = np.zeros(len(g))
    names = {"encode_s": "query encode", "ann_s": "ANN search", "prefetch_wait_s": "prefetch wait",
             "crit_read_s": "critical-path reads", "rerank_s": "re-rank (MaxSim)"}
    col = dict(zip(names.values(), [plotting.COLORBLIND[i] for i in (0, 2, 3, 1, 7)]))  # distinct hues
    for s in stages:
        ax.barh(g.label, g[s] * 1e3, left=left, label=names[s], color=col[names[s]])
        left += g[s].to_numpy() * 1e3
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlabel("mean latency per query (ms)")
    ax.set_ylabel("back end, budget = memory for embedding pages / table size")
    ax.set_title("Figure 1: end-to-end latency breakdown")
    plotting.legend_below(fig, ncol=5)
    caption = ("End-to-end latency breakdown per back end and memory budget (means over measured queries; "
               "cold page cache at the start of each run). The budget is the memory left for embedding pages as a "
               "fraction of the table; at this profile's small table the page cache warms within a run, so a larger "
               "budget need not be faster here (the effect the paper shows at 16.8 GB). Bars marked [measured on an emulated SSD] ran on "
               "the same disk under a read-IOPS throttle (cgroup blkio (v1) or io.max (v2)). Paper Figure 1 "
               "(ColBERTer, 18.8 GB index) is a plot without stated numbers, so no paper value is drawn.")
    return plotting.save(fig, out_png, caption) + _table(g.drop(columns="label"), out_png)


@FIGURES.figure("fig5", records=("quality",), title="recall@1000 and ANN time against nprobe")
def fig5(inputs, out_png):
    plt, plotting = _mpl()
    df = _read(inputs["quality"])
    d = df[df.figure == "fig5"]
    g = d.groupby("nprobe").agg(recall=("recall@1000", "first"), ann_ms=("ann_time_s", "median")).reset_index()
    g["ann_ms"] *= 1e3
    fig, (a1, a0, a2) = plt.subplots(1, 3, figsize=(12, 4), layout="constrained", sharey=False,
                                     gridspec_kw={"width_ratios": [1, 0.28, 1]})
    c = plotting.colors(["recall@1000", "ANN time"])
    a1.plot(g.nprobe, g.recall, marker="o", color=c["recall@1000"], label="recall@1000 (ours)")
    nlist = (df.attrs.get("provenance", {}).get("build", {}).get("index") or {}).get("nlist")
    a1.set(xlabel="nprobe", ylabel="recall@1000", ylim=(0, 1.02),
           title=f"ours: recall@1000 against nprobe" + (f" (nlist {nlist})" if nlist else ""))
    # the paper's value is at another scale (8.8M passages, nprobe 3000 of nlist 2^15): its own panel
    a0.plot([0], [PV.COLBERTER_R1000], **{**plotting.PAPER_STYLE,
            "label": "paper: ColBERTer R@1k 0.961 (Table 1, MS MARCO v1, 8.8M passages)"})
    a0.set(ylim=(0, 1.02), xlim=(-1, 1), title="paper", xticks=[0], xticklabels=["8.8M passages,\nnlist 2^15"])
    a0.tick_params(axis="x", labelsize="x-small")
    _plain_log2(a1)
    a2.plot(g.nprobe, g.ann_ms, marker="s", color=c["ANN time"], label="ANN time per query (ours, median)")
    _plain_log2(a2)
    a2.set(xlabel="nprobe", ylabel="ANN time per query (ms)", title="ANN time against nprobe")
    plotting.legend_below(fig, ncol=2)
    caption = ("Figure 5: recall@1000 of the CLS candidate list (ir_measures over the qrels) and median per-query "
               "ANN time against nprobe, ours" + (f" (IVF-Flat, nlist {nlist})" if nlist else "") + ". The paper's "
               "Figure 5 is a plot; its Table 1 R@1k for ColBERTer on the full MS MARCO v1 (8.8M passages, nprobe "
               "3000 of nlist 2^15) is in its own panel: another scale than ours, so not on our nprobe axis.")
    return plotting.save(fig, out_png, caption) + _table(g, out_png)


def _encoder_words(prov: dict) -> str:
    b = prov.get("build", {})
    enc, src = b.get("encoder", "?"), str(b.get("text_source") or b.get("dataset") or "?")
    what = {"hash": "a deterministic word-hash stand-in encoder (not a trained model)",
            "minilm": "all-MiniLM-L6-v2 with corpus-fitted projections to 128/32 dimensions",
            "colberter": "ColBERTer"}.get(enc, enc)
    text = (f"synthetic text ({src}), so the absolute MRR is not comparable with MS MARCO"
            if "synthetic" in src else f"the {src} collection")
    return f"Encoder: {what}; passages and queries: {text}."


@FIGURES.figure("fig6", records=("quality",), title="normalised MRR@10 against re-rank count")
def fig6(inputs, out_png):
    plt, plotting = _mpl()
    df = _read(inputs["quality"])
    d = df[df.figure == "fig6"].sort_values("rerank_n")
    c = plotting.colors(["MRR@10", "nDCG@10"])
    fig, ax = plt.subplots(figsize=(6, 4.2), layout="constrained")
    ax.plot(d.rerank_n, d["norm_mrr@10"], marker="o", color=c["MRR@10"], label="normalised MRR@10 (ours)")
    ax.plot(d.rerank_n, d["norm_ndcg@10"], marker="^", ls="--", color=c["nDCG@10"], label="normalised nDCG@10 (ours)")
    n, v = zip(*[(n, v) for _, n, v in PV.FIG6_POINTS])
    ax.plot([x * 1.12 for x in n], v, **plotting.PAPER_STYLE,   # just right of our point at the same n
            label="paper: ColBERTer, 99.3% at 64, 99.7% at 128 (section 4.4; drawn just right of n)")
    _plain_log2(ax)
    ticks = sorted(set(int(x) for x in d.rerank_n))
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.set(xlabel="re-rank count n", ylabel="metric / metric at n = K", title="Figure 6: partial re-ranking")
    plotting.legend_below(fig, ncol=1)
    caption = ("Figure 6: MRR@10 and nDCG@10 after MaxSim re-ranking of only the top n candidates (the rest in "
               "CLS order), normalised by re-ranking all K. Stars: the paper's ColBERTer values. "
               + _encoder_words(df.attrs["provenance"]))
    return plotting.save(fig, out_png, caption) + \
        _table(d[["rerank_n", "mrr@10", "ndcg@10", "norm_mrr@10", "norm_ndcg@10"]], out_png)


@FIGURES.figure("fig7", records=("hitrate",), title="prefetch hit rate against prefetch step")
def fig7(inputs, out_png):
    plt, plotting = _mpl()
    df = _read(inputs["hitrate"])
    if "corpus" not in df:
        df = df.assign(corpus="full index")
    g = df.groupby(["corpus", "nprobe", "rerank_n", "step"]).hit_rate.mean().reset_index()
    g["series"] = [f"ours: {c}, nprobe {e}, top {n}" for c, e, n in zip(g.corpus, g.nprobe, g.rerank_n)]
    col = plotting.colors(g.series)
    fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    for s, d in g.groupby("series", sort=False):
        ax.plot(d.step * 100, d.hit_rate * 100, marker="o" if "full" in s else "s", color=col[s], label=s,
                ls="-" if d.rerank_n.iloc[0] == g.rerank_n.max() else "--")
    pts = pd.DataFrame(PV.FIG7_POINTS, columns=["ds", "eta", "step", "hr"])
    marks = {("v1", 0): "*", ("v1", 1): "P", ("v2", 0): "o", ("v2", 1): "D"}
    for i, ((ds, eta), p) in enumerate(pts.groupby(["ds", "eta"], sort=True)):
        k = sorted(pts[pts.ds == ds].eta.unique()).index(eta)
        hollow = ({"markerfacecolor": "none", "markeredgewidth": 1.4, "markeredgecolor": plotting.PAPER_COLOR}
                  if ds == "v2" else {})
        ax.plot(p.step * 100 + (i - 1.5) * 0.6, p.hr * 100,
                **{**plotting.PAPER_STYLE, "marker": marks[(ds, k)], "markersize": 9, **hollow},
                label=f"paper: MS MARCO {ds}, nprobe {eta} (section 5.2)")
    ax.set(xlabel="prefetch step (% of nprobe)", ylabel="hit rate (%)", title="Figure 7: prefetch hit rate")
    plotting.legend_below(fig, ncol=2)
    caption = ("Figure 7: fraction of the final top-n candidates that the prefetcher had read after step x nprobe "
               "lists. Dark markers: values stated in the paper's section 5.2 (MS MARCO v1, 8.8M passages, filled; v2, "
               "138M, hollow; one marker per nprobe, set a little apart where they coincide). Where the table is grown with synthetic filler records, the 'real passages only' curves "
               "use an index of the collection's passages alone (same list size, same fraction of lists probed).")
    return plotting.save(fig, out_png, caption) + _table(g.drop(columns="series"), out_png)


def _tables45_ours(ax, piv, iops):
    from ..core import plotting

    budgets = [c for c in piv.columns if c != "unlimited"]
    drawn = False
    emu = [s for s in piv.index if s.endswith(EMU) and not piv.loc[s, budgets].isna().all()]
    for s in piv.index:
        if s == "memory" or piv.loc[s, budgets].isna().all():
            continue
        kind = s[:-len(EMU)] if s.endswith(EMU) else s
        n = int(piv.loc[s, budgets].notna().sum())
        dx = (emu.index(s) - (len(emu) - 1) / 2) * 0.02 if s in emu else 0.0   # emulated points side by side
        ax.plot([float(x) + dx for x in budgets], piv.loc[s, budgets], marker="D" if s.endswith(EMU) else "o",
                color=backend_colors().get(kind), ms=7,
                ls="none" if n == 1 else ("-." if s.endswith(EMU) else "-"), label=_series_label(s, iops))
        drawn = True
    if "unlimited" in piv.columns and "memory" in piv.index:
        ax.axhline(piv.loc["memory", "unlimited"], color=backend_colors()["memory"], ls=":",
                   label=BACKEND_NAMES["memory"])
        drawn = True
    if not drawn:
        plotting.not_run(ax, "no end-to-end run finished (see the table's note column)")
        return
    ax.set(xlabel="memory for embedding pages / table size", ylabel="end-to-end latency (ms, median of runs)")


def _tables45_paper(ax, table: int = 4):
    """The paper's Table 4 (MS MARCO v1: memory as the fraction of the BOW table left after the ANN index)
    or Table 5 (v2: the memory limit in GB, as the paper gives it; virtual memory + swap ran out of memory)."""
    from ..core import plotting

    if table == 4:
        x = [g / PV.TABLE4_TABLE_GB for g in (np.array(PV.TABLE4_MEMORY_GB) - PV.TABLE4_ANN_GB)]
        values, xlabel = PV.TABLE4_MS, "(memory limit - ANN index) / BOW table, MS MARCO v1"
    else:
        x, values, xlabel = PV.TABLE5_MEMORY_GB, PV.TABLE5_MS, "memory limit (GB), MS MARCO v2"
    for b, v in values.items():
        if all(y is None for y in v):
            ax.text(0.02, 0.02, f"{PAPER_NAMES[b]}: out of memory at every limit", transform=ax.transAxes,
                    fontsize="x-small", color="0.3")
            continue
        ax.plot(x, [np.nan if y is None else y for y in v], **{**plotting.PAPER_STYLE, "color": backend_colors()[b],
                "markeredgecolor": "k", "linestyle": "--"}, label=f"paper: {PAPER_NAMES[b]}")
    ax.set(xlabel=xlabel, ylabel="latency (ms)")


@FIGURES.figure("tables45", records=("e2e",), title="end-to-end latency per back end and memory budget")
def tables45(inputs, out_png):
    plt, plotting = _mpl()
    df = _with_series(_read(inputs["e2e"]))
    iops = _ssd_iops(df)
    per = (_ok(df).groupby(["series", "budget", "repeat"]).total_s.mean().groupby(["series", "budget"])
           .agg(["median", "min", "max"]).reset_index())
    piv = per.pivot(index="series", columns="budget", values="median") * 1e3
    nr = df[df.status != "ok"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), layout="constrained")
    _tables45_ours(axes[0], piv, iops)
    emu_nr = nr[(nr.ssd == "emulated") & ~nr.series.isin(piv.index)]
    why = str(emu_nr.reason.iloc[0]).removeprefix("emulated SSD: ") if len(emu_nr) else ""
    axes[0].set_title(f"ours: {_scale(df)}" + (f"\nemulated SSD not run: {why}" if why else ""))
    _tables45_paper(axes[1], 4)
    axes[1].set_title("paper, Table 4: 16.8 GB BOW table, 8.8M passages", fontsize="medium")
    _tables45_paper(axes[2], 5)
    axes[2].set_title("paper, Table 5: 255.4 GB BOW table, MS MARCO v2", fontsize="medium")
    plotting.legend_below(fig, ncol=3)
    caption = ("Tables 4/5: end-to-end query latency per back end and memory budget (median of per-run means; "
               "spread in the CSV). Middle: the paper's Table 4 (its direct reads are GPUDirect Storage, GDS) with "
               "the memory limit expressed as the fraction of the BOW table left after the 4.3 GB ANN index; right: "
               "its Table 5 (MS MARCO v2) against the memory limit in GB as the paper gives it (the v2 ANN index "
               "size is not stated, so no fraction); one colour per back end in every panel. Where our mmap gets "
               "no faster with more memory, the page cache of this small table is already warm within a run "
               "(the table is evicted only before each pass), unlike the paper's 16.8 GB table. Rows not run on this machine (e.g. virtual memory + swap "
               "without swap) are blank with the reason in the table. Series marked [measured on an emulated SSD] "
               "(diamonds, set side by side where they coincide) ran on the same disk under a read-IOPS throttle "
               "(cgroup blkio (v1) or io.max (v2)).")
    return plotting.save(fig, out_png, caption) + _table(_tables45_table(piv, nr, iops), out_png)


def _scale(df: pd.DataFrame) -> str:
    b = df.attrs.get("provenance", {}).get("build", {})
    if not b:
        return "this profile"
    return f"{b.get('table_bytes', 0) / 1e6:.0f} MB table, {b.get('n_docs', 0):,} records"


def _tables45_table(piv: pd.DataFrame, nr: pd.DataFrame, iops) -> pd.DataFrame:
    piv = piv.copy()
    ran = set(piv.dropna(how="all").index)
    for _, r in nr.iterrows():
        piv.loc[r.series, r.budget] = np.nan
    t = piv.reset_index()
    t.columns = [str(c) for c in t.columns]
    reasons = nr.groupby("series").reason.first().to_dict()
    t["note"] = t.series.map(lambda s: reasons.get(s, ""))

    def label(s):
        if s in ran or not s.endswith(EMU):
            return _series_label(s, iops)
        return f"{BACKEND_NAMES.get(s[:-len(EMU)], s)} [emulated SSD: not run]"

    t["series"] = t.series.map(label)
    t = t.rename(columns={"series": "backend"})
    paper = [{"backend": f"paper Table 4: {PAPER_NAMES[b]}", **{f"{g} GB": v for g, v in zip(PV.TABLE4_MEMORY_GB, vals)}}
             for b, vals in PV.TABLE4_MS.items()]
    paper += [{"backend": f"paper Table 5: {PAPER_NAMES[b]}", **{f"{g} GB": v for g, v in zip(PV.TABLE5_MEMORY_GB, vals)}}
              for b, vals in PV.TABLE5_MS.items()]
    return pd.concat([t, pd.DataFrame(paper)], ignore_index=True)


def _batch_label(meth: str) -> str:
    if meth == ESPN_BATCH:
        return f"{meth} [measured reads; prefetch budget emulated by a sleep]"
    return meth


@FIGURES.figure("fig8_9", records=("batch",), title="critical-path access latency against batch size")
def fig8_9(inputs, out_png):
    plt, plotting = _mpl()
    df = _read(inputs["batch"])
    m = df[df.phase == "measured"]
    g = m.groupby(["rerank", "method", "batch"]).access_s.agg(
        median="median", q1=lambda x: x.quantile(0.25), q3=lambda x: x.quantile(0.75), n="size").reset_index()
    col = plotting.colors(g.method)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), layout="constrained", sharex="col")
    paper_thr = {"exact": PV.BATCH_THRESHOLD_EXACT, "partial": PV.BATCH_THRESHOLD_PARTIAL}
    for j, (mode, title) in enumerate((("exact", "Figure 8: exact (top K)"), ("partial", "Figure 9: partial re-ranking"))):
        d = g[g.rerank == mode]
        top, bot = axes[0, j], axes[1, j]
        if d.empty:
            plotting.not_run(top, f"no {mode} batch rows")
            plotting.not_run(bot, f"no {mode} batch rows")
            continue
        mem = d[d.method == "memory"].set_index("batch")["median"]
        for meth, dd in d.groupby("method"):
            top.errorbar(dd.batch, dd["median"] * 1e3, yerr=[(dd["median"] - dd.q1) * 1e3, (dd.q3 - dd["median"]) * 1e3],
                         marker="o", capsize=3, color=col[meth], label=_batch_label(meth))
            if meth != "memory":
                bot.plot(dd.batch, dd["median"].to_numpy() / mem.reindex(dd.batch).to_numpy(), marker="o", color=col[meth])
        n = int(m[m.rerank == mode].rerank_n.iloc[0])
        budget = m.prefetch_budget_s.iloc[0] * 1e3
        _plain_log2(top)
        top.set(yscale="log", ylabel="critical-path access (ms)",
                title=f"{title}, n = {n}; prefetch budget {budget:.2f} ms")
        bot.axhline(1.0, color="0.5", lw=0.8)
        bot.plot([paper_thr[mode]], [1.0], **plotting.PAPER_STYLE,
                 label="paper: ESPN on par with DRAM up to batch 12 (exact) / 192 (top 64)")
        if mode == "exact":
            bot.axhline(PV.GDS_VS_DRAM_ACCESS, color=plotting.PAPER_COLOR, ls="--", lw=1,
                        label="paper: GDS 7.2x DRAM access latency (exact, Figure 8)")
        bot.set(xlabel="query batch size", ylabel="access latency / memory's")
        _plain_log_y(bot)
        _plain_log2(bot)
    plotting.legend_below(fig, ncol=2)
    caption = ("Figures 8/9: critical-path embedding access latency against batch size (median of "
               f"{int(g.n.max()) if len(g) else 0} measured repeats, bars: interquartile range), and below as a ratio "
               "to memory, the scale-free form in which the paper's values are drawn (GDS 7.2x DRAM; ESPN on par "
               f"with DRAM up to batch {PV.BATCH_THRESHOLD_EXACT} exact and {PV.BATCH_THRESHOLD_PARTIAL} top 64, "
               "MS MARCO v1, PCIe 3.0 SSD). ESPN's reads overlap a constant prefetch budget (equation 2, measured) "
               "emulated by a sleep, as the paper simulates batches (section 5.4); memory and direct are measured "
               "reads, our direct reads standing in for GDS.")
    return plotting.save(fig, out_png, caption) + _table(g, out_png)


@FIGURES.figure("fig10", records=("batch",), title="modelled batch latency and throughput")
def fig10(inputs, out_png):
    plt, plotting = _mpl()
    df = _read(inputs["batch"])
    m = df[(df.phase == "measured") & (df.rerank == "exact")]
    g = m.groupby(["method", "batch"])[["latency_model_s", "throughput_model_qps"]].median().reset_index()
    col = plotting.colors(g.method)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
    for meth, d in g.groupby("method"):
        lab = plotting.label_source(_batch_label(meth).split(" [")[0], "modelled")
        axes[0].plot(d.batch, d.latency_model_s * 1e3, marker="o", color=col[meth], label=lab)
        axes[1].plot(d.batch, d.throughput_model_qps, marker="o", color=col[meth], label=lab)
    for ax, yl in zip(axes, ("batch latency (ms)", "throughput (queries/s)")):
        _plain_log2(ax)
        ax.set(xlabel="query batch size", ylabel=yl)
        ax.axvline(PV.BATCH_THRESHOLD_EXACT, color=plotting.PAPER_COLOR, ls=":", lw=1)
    axes[0].set_ylim(bottom=0)
    axes[0].plot([PV.BATCH_THRESHOLD_EXACT], [0], **plotting.PAPER_STYLE, clip_on=False,
                 label=f"paper: ESPN competitive with DRAM up to batch {PV.BATCH_THRESHOLD_EXACT} (dotted line)")
    axes[0].set_title("Figure 10: batch query latency")
    axes[1].set_title("Figure 10: throughput")
    plotting.legend_below(fig, ncol=2)
    caption = (f"Figure 10 (exact re-ranking): batch query latency and throughput, modelled as the paper does from "
               f"measured parts: single-query ANN time + encode + critical-path access + MaxSim for the batch "
               f"(medians of {int(m.groupby(['method', 'batch']).size().max()) if len(m) else 0} repeats). The "
               f"dotted line: the paper's batch {PV.BATCH_THRESHOLD_EXACT} (MS MARCO v1, PCIe 3.0 SSD).")
    return plotting.save(fig, out_png, caption) + _table(g, out_png)


@FIGURES.figure("eq4", records=("batch", "iops"), title="equation 4: query batch threshold")
def eq4(inputs, out_png):
    plt, plotting = _mpl()
    t = eq4_table(_read(inputs["batch"]), _read(inputs["iops"]))
    fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    if t.empty:
        plotting.not_run(ax, "no successful IOPS measurement to take the bandwidth from")
    else:
        x = np.arange(len(t))
        c = plotting.colors(["equation 4 (ours)", "observed knee (ours)"])
        ax.plot(x - 0.1, t.threshold_eq4, "o", color=c["equation 4 (ours)"],
                label=plotting.label_source("equation 4 from our bandwidth and budget", "modelled"))
        knee = t.observed_knee_batch.astype(float)
        low = t.get("min_batch_run", pd.Series([1] * len(t))).astype(float).to_numpy()
        cens = knee.notna().to_numpy() & (knee.to_numpy() <= low)   # already over at the smallest batch run
        ok = knee.notna().to_numpy() & ~cens
        if ok.any():
            ax.plot(x[ok], knee[ok], "s", color=c["observed knee (ours)"],
                    label="observed knee: first batch with ESPN > 1.5x memory (ours)")
        if cens.any():
            ax.plot(x[cens], knee[cens], "v", ms=9, mfc="none", color=c["observed knee (ours)"],
                    label="observed knee at or below the smallest batch run (censored: ≤ this)")
        for xi, r in zip(x, t.itertuples()):
            if r.observed_knee_batch is None or r.observed_knee_batch != r.observed_knee_batch:
                ax.annotate(f"no knee up to\nbatch {r.max_batch_run}", (xi, r.max_batch_run), fontsize=7,
                            ha="center", va="bottom", color="0.3")
        ax.plot(x + 0.1, t.paper_threshold, **plotting.PAPER_STYLE,
                label="paper: 12 (exact), 192 (top 64); PCIe 3.0 SSD, 28 ms budget")
        ax.set_xticks(x, [f"{r.rerank}\n{r.bandwidth_source}" for r in t.itertuples()], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("query batch threshold")
    ax.set_title("Equation 4: batch threshold = BW x prefetch budget / data per query")
    plotting.legend_below(fig, ncol=1)
    fio = "and from fio " if (not t.empty and t.bandwidth_source.astype(str).str.contains("fio").any()) else ""
    caption = (f"Equation 4: BW_SSD x PrefetchBudget / data per query, with BW from our reader {fio}at the "
               "highest queue depth" + ("" if fio else " (fio did not run here: see the iops figure)") +
               " and the prefetch budget measured in the batch step, next to the first batch "
               "size where ESPN's critical access exceeds 1.5x memory's (a hollow triangle: it already did at the "
               "smallest batch run, so the knee is at most that). Stars: the paper's thresholds (12 exact, "
               "192 top 64), which follow from its SSD and its 28 ms budget at 8.8M passages, not from ours.")
    return plotting.save(fig, out_png, caption) + _table(t, out_png)


@FIGURES.figure("iops", records=("iops",), title="our O_DIRECT reader against fio")
def iops(inputs, out_png):
    plt, plotting = _mpl()
    df = _read(inputs["iops"])
    g = df.groupby(["tool", "engine", "qd", "source", "status"], dropna=False).iops.median().reset_index()
    g = g.sort_values(["qd", "tool", "engine"]).reset_index(drop=True)
    labels = [f"{r.tool} ({r.engine}), QD {r.qd}" for r in g.itertuples()]
    col = plotting.colors(g.tool)
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.45 * max(len(g), 1)), layout="constrained")
    ax.barh(labels, g.iops.fillna(0), color=[col[t] for t in g.tool])
    why = df.groupby(["tool", "engine", "qd"], dropna=False)["reason"].first() if "reason" in df else None
    for i, r in enumerate(g.itertuples()):
        if r.status != "ok":
            reason = why.get((r.tool, r.engine, r.qd)) if why is not None else None
            text = reason if isinstance(reason, str) and reason else r.status
            ax.text(0, i, f"  not run: {text}", va="center", fontsize=8, color="0.3")
    ax.invert_yaxis()
    ax.set_xlabel("4 KiB random-read IOPS (O_DIRECT, median of repeats)")
    ax.set_title("our reader against fio on the embedding table")
    caption = ("Our O_DIRECT readers (thread pool of preadv; Linux native AIO) against fio on the same file in the "
               "same job, 4 KiB random reads; median of repeats. A row marked 'not run' says why (e.g. fio not installed).")
    return plotting.save(fig, out_png, caption) + _table(g, out_png)

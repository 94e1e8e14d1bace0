"""ESPN figures and tables, drawn from records only (paper values beside ours, labelled 'paper')."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..core import plotting, records
from ..core.atomic import write_text
from . import paper_values as PV

BACKEND_NAMES = {"memory": "memory (fully cached)", "mmap": "mmap (MADV_RANDOM)", "direct": "direct I/O",
                 "direct_prefetch": "direct I/O + prefetcher", "vm_swap": "virtual memory + swap",
                 "gds": "GDS (kvikio)"}


def _read(paths):
    return pd.concat([records.read(p) for p in paths], ignore_index=True)


def _table(df: pd.DataFrame, out_png: str) -> None:
    """Write a table beside a figure as CSV and Markdown (atomic)."""
    stem = Path(out_png).with_suffix("")
    write_text(f"{stem}.csv", df.to_csv(index=False))
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    def fmt(v):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return ""
        if isinstance(v, (float, np.floating)):
            return str(int(v)) if float(v).is_integer() and abs(v) < 1e9 else f"{v:.3g}"
        return str(v)

    for _, r in df.iterrows():
        lines.append("| " + " | ".join(fmt(v) for v in r) + " |")
    write_text(f"{stem}.md", "\n".join(lines) + "\n")


def _e2e_means(df):
    m = df[(df.phase == "measured") & (df.status == "ok")]
    return m


EMU = " (emulated SSD)"


def _with_series(df):
    """``series``: the back end, suffixed for rows run on the emulated slower SSD (blkio throttle), so
    emulated rows are never drawn or tabulated as native ones."""
    ssd = df["ssd"].fillna("native") if "ssd" in df else pd.Series("native", index=df.index)
    return df.assign(ssd=ssd, series=np.where(ssd == "emulated", df.backend + EMU, df.backend))


def _series_label(series: str) -> str:
    if series.endswith(EMU):
        return plotting.label_source(BACKEND_NAMES.get(series[:-len(EMU)], series), "emulated")
    return BACKEND_NAMES.get(series, series)


def fig1(paths, out):
    m = _with_series(_e2e_means(_read(paths)))
    stages = ["encode_s", "ann_s", "prefetch_wait_s", "crit_read_s", "rerank_s"]
    g = m.groupby(["series", "budget"])[stages].mean().reset_index()
    g["label"] = g.series.map(_series_label) + "\n@" + g.budget
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(g)), 4))
    bottom = np.zeros(len(g))
    for s in stages:
        ax.bar(g.label, g[s] * 1e3, bottom=bottom, label=s[:-2].replace("_", " "))
        bottom += g[s].to_numpy() * 1e3
    ax.set_ylabel("mean latency per query (ms)")
    ax.set_xlabel("back end @ memory for embedding pages (fraction of the table)")
    ax.tick_params(axis="x", rotation=60, labelsize=7)
    ax.legend(fontsize=8)
    ax.set_title("Figure 1: end-to-end latency breakdown")
    plotting.save(fig, out, "End-to-end latency breakdown per back end and memory budget (means over measured "
                  "queries; cold page cache before each run). Paper Figure 1 (ColBERTer, 18.8 GB index) is a "
                  "plot without stated numbers.")
    _table(g.drop(columns="label"), out)


def fig5(paths, out):
    df = _read(paths)
    d = df[df.figure == "fig5"]
    g = d.groupby("nprobe").agg(recall=("recall@1000", "first"), ann_ms=("ann_time_s", "median")).reset_index()
    g["ann_ms"] *= 1e3
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot(g.nprobe, g.recall, marker="o", label="recall@1000")
    ax.axhline(PV.COLBERTER_R1000, ls=":", color="grey",
               label=plotting.label_source("ColBERTer R@1k, Table 1", "paper"))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("nprobe")
    ax.set_ylabel("recall@1000")
    ax2 = ax.twinx()
    ax2.plot(g.nprobe, g.ann_ms, marker="s", color="C3", label="ANN time / query (ms)")
    ax2.set_ylabel("ANN time per query (ms)")
    ax2.grid(False)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="lower right")
    ax.set_title("Figure 5: recall@1000 vs nprobe")
    plotting.save(fig, out, "Recall@1000 of the CLS candidate list (ir_measures over the qrels) and median "
                  "per-query ANN time vs nprobe. The paper's Figure 5 is a plot; its Table 1 R@1k for "
                  "ColBERTer is shown for reference.")
    _table(g, out)


def fig6(paths, out):
    df = _read(paths)
    d = df[df.figure == "fig6"].sort_values("rerank_n")
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot(d.rerank_n, d["norm_mrr@10"], marker="o", label="normalised MRR@10 (ours)")
    ax.plot(d.rerank_n, d["norm_ndcg@10"], marker="^", ls="--", label="normalised nDCG@10 (ours)")
    for name, n, v in PV.FIG6_POINTS:
        ax.scatter([n], [v], marker="x", color="k", zorder=5)
    ax.scatter([], [], marker="x", color="k", label=plotting.label_source("ColBERTer (section 4.4)", "paper"))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("re-rank count n")
    ax.set_ylabel("metric / metric at n = K")
    ax.legend(fontsize=8)
    ax.set_title("Figure 6: normalised MRR@10 vs re-rank count")
    plotting.save(fig, out, "MRR@10 and nDCG@10 after MaxSim re-ranking of only the top n candidates (the rest "
                  "in CLS order), normalised by re-ranking all K. Crosses: the paper's ColBERTer values.")
    _table(d[["rerank_n", "mrr@10", "ndcg@10", "norm_mrr@10", "norm_ndcg@10"]], out)


def fig7(paths, out):
    df = _read(paths)
    if "corpus" not in df:
        df = df.assign(corpus="full index")
    K = df.rerank_n.max()
    g = df.groupby(["corpus", "nprobe", "rerank_n", "step"]).hit_rate.mean().reset_index()
    fig, ax = plt.subplots(figsize=(5.5, 4))
    several = g.corpus.nunique() > 1
    for (corpus, eta, n), d in g.groupby(["corpus", "nprobe", "rerank_n"]):
        ax.plot(d.step * 100, d.hit_rate * 100, marker="o" if corpus == "full index" else "s",
                ls="-" if n == K else "--", alpha=1.0 if corpus == "full index" else 0.7,
                label=f"ours, nprobe {eta}, top {n}" + (f" ({corpus})" if several else ""))
    for (ds, eta), pts in pd.DataFrame(PV.FIG7_POINTS, columns=["ds", "eta", "step", "hr"]).groupby(["ds", "eta"]):
        ax.scatter(pts.step * 100, pts.hr * 100, marker="x",
                   label=plotting.label_source(f"{ds} nprobe {eta}", "paper"))
    ax.set_xlabel("prefetch step (% of nprobe)")
    ax.set_ylabel("hit rate (%)")
    ax.legend(fontsize=7)
    ax.set_title("Figure 7: prefetch hit rate vs prefetch step")
    plotting.save(fig, out, "Fraction of the final top-n candidates that the prefetcher had read after "
                  "step x nprobe lists. Crosses: values stated in the paper's section 5.2. Where the table is "
                  "grown with synthetic filler records, the 'real passages only' curves use an index of the "
                  "collection's passages alone (same list size, same fraction of lists probed).")
    _table(g, out)


def tables45(paths, out):
    df = _with_series(_read(paths))
    m = _e2e_means(df)
    per = (m.groupby(["series", "budget", "repeat"]).total_s.mean().groupby(["series", "budget"])
           .agg(["median", "min", "max"]).reset_index())
    piv = per.pivot(index="series", columns="budget", values="median") * 1e3
    nr = df[df.status != "ok"]
    for _, r in nr.iterrows():
        piv.loc[r.series, r.budget] = np.nan
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    budgets = [c for c in piv.columns if c != "unlimited"]
    for b in piv.index:
        if b == "memory" or piv.loc[b, budgets].isna().all():
            continue
        ax.plot([float(x) for x in budgets], piv.loc[b, budgets], marker="o", label=_series_label(b),
                ls="-." if b.endswith(EMU) else "-")
    if "unlimited" in piv.columns and "memory" in piv.index:
        ax.axhline(piv.loc["memory", "unlimited"], color="k", ls=":", label=BACKEND_NAMES["memory"])
    ax.set_xlabel("memory for embedding pages / table size")
    ax.set_ylabel("end-to-end latency (ms, median of runs)")
    ax.set_title("ours")
    ax.legend(fontsize=8)
    ax = axes[1]
    frac = [g / PV.TABLE4_TABLE_GB for g in (np.array(PV.TABLE4_MEMORY_GB) - PV.TABLE4_ANN_GB)]
    for b, v in PV.TABLE4_MS.items():
        ax.plot(frac, v, marker="x", ls="--", label=plotting.label_source(BACKEND_NAMES[b], "paper"))
    ax.set_xlabel("(memory limit - ANN index) / BOW table, MS MARCO v1")
    ax.set_ylabel("latency (ms)")
    ax.set_title("paper, Table 4")
    ax.legend(fontsize=7)
    plotting.save(fig, out, "Tables 4/5: end-to-end query latency per back end and memory budget (median of "
                  "per-run means; spread in the CSV). Right: the paper's Table 4 with the memory limit "
                  "expressed as the fraction of the BOW table left after the 4.3 GB ANN index. "
                  "Rows not run on this machine (e.g. virtual memory + swap without swap) are blank. Rows "
                  "marked [emulated] ran on an emulated slower SSD (cgroup v1 blkio read-IOPS throttle).")
    t = piv.reset_index()
    t.columns = [str(c) for c in t.columns]
    reasons = nr.groupby("series").reason.first().to_dict()
    t["note"] = t.series.map(lambda b: reasons.get(b, ""))
    emu_iops = df.loc[df.ssd == "emulated", "ssd_read_iops"].dropna() if "ssd_read_iops" in df else []
    if len(emu_iops):
        mask = t.series.str.endswith(EMU)
        t.loc[mask, "note"] = t.loc[mask, "note"].map(lambda x: f"{x}; " if x else "") + \
            f"emulated SSD: blkio {int(emu_iops.iloc[0]):,} read IOPS"
    t["series"] = t.series.map(_series_label)
    t = t.rename(columns={"series": "backend"})
    paper = pd.DataFrame([{"backend": f"paper Table 4: {b}", **{f"{g} GB": v for g, v in zip(PV.TABLE4_MEMORY_GB, vals)}}
                          for b, vals in PV.TABLE4_MS.items()] +
                         [{"backend": f"paper Table 5: {b}", **{f"{g} GB": v for g, v in zip(PV.TABLE5_MEMORY_GB, vals)}}
                          for b, vals in PV.TABLE5_MS.items()])
    _table(pd.concat([t, paper], ignore_index=True), out)


def fig8_9(paths, out):
    df = _read(paths)
    m = df[df.phase == "measured"]
    g = m.groupby(["rerank", "method", "batch", "source"]).access_s.median().reset_index()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, (mode, title) in zip(axes, (("exact", "Figure 8: exact (top K)"),
                                        ("partial", "Figure 9: partial re-ranking"))):
        d = g[g.rerank == mode]
        for (meth, src), dd in d.groupby(["method", "source"]):
            ax.plot(dd.batch, dd.access_s * 1e3, marker="o", label=plotting.label_source(meth, src))
        budget = m.prefetch_budget_s.iloc[0] * 1e3
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("query batch size")
        ax.set_ylabel("critical-path embedding access (ms)")
        n = int(m[m.rerank == mode].rerank_n.iloc[0])
        ax.set_title(f"{title}, n = {n}; budget {budget:.2f} ms")
        ax.legend(fontsize=7)
    plotting.save(fig, out, "Critical-path embedding access latency vs batch size. ESPN's curve overlaps a "
                  "constant prefetch budget (equation 2, measured) emulated by a sleep, as the paper simulates "
                  "batches (section 5.4); memory and direct are measured reads. Paper: GDS 7.2x DRAM "
                  f"(exact); ESPN on par with DRAM up to batch {PV.BATCH_THRESHOLD_EXACT} (exact) and "
                  f"{PV.BATCH_THRESHOLD_PARTIAL} (top 64).")
    _table(g, out)


def fig10(paths, out):
    df = _read(paths)
    m = df[(df.phase == "measured") & (df.rerank == "exact")]
    g = m.groupby(["method", "batch"])[["latency_model_s", "throughput_model_qps"]].median().reset_index()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for meth, d in g.groupby("method"):
        axes[0].plot(d.batch, d.latency_model_s * 1e3, marker="o", label=plotting.label_source(meth, "modelled"))
        axes[1].plot(d.batch, d.throughput_model_qps, marker="o", label=plotting.label_source(meth, "modelled"))
    for ax, yl in zip(axes, ("batch latency (ms)", "throughput (queries/s)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("query batch size")
        ax.set_ylabel(yl)
        ax.legend(fontsize=7)
    axes[0].set_title("Figure 10: batch query latency")
    axes[1].set_title("Figure 10: throughput")
    plotting.save(fig, out, "Batch query latency and throughput, modelled as the paper does: single-query ANN "
                  "time + encode + measured critical-path access + measured MaxSim for the batch.")
    _table(g, out)


def eq4(paths, out):
    b = _read([p for p in paths if "batch" in Path(p).name])
    io = _read([p for p in paths if "iops" in Path(p).name])
    ok = io[io.status == "ok"]
    m = b[b.phase == "measured"]
    budget = float(m.prefetch_budget_s.iloc[0])
    rows = []
    for tool in ("espn-reader", "fio"):
        d = ok[(ok.tool == tool) & ((ok.engine != "aio") if tool == "espn-reader" else True)]
        if not len(d):
            continue
        qd = d.qd.max()
        bw = float(d[d.qd == qd].iops.median()) * 4096
        for mode, dd in m.groupby("rerank"):
            n = int(dd.rerank_n.iloc[0])
            # data per query: n records of the table's mean record size (build metadata)
            rec = float(b.attrs["provenance"]["build"]["mean_io_size"])
            thr = bw * budget / (n * rec)
            g = dd.groupby(["method", "batch"]).access_s.median().unstack("method")
            mem = g.get("memory")
            esp = g.get("ESPN (direct + prefetch)")
            knee = None
            if mem is not None and esp is not None:
                over = g.index[(esp > 1.5 * mem) & (esp - mem > 1e-4)]
                knee = int(over.min()) if len(over) else None
            rows.append({"rerank": mode, "n": n, "bandwidth_source": f"{tool} QD{qd}", "bw_MBps": bw / 1e6,
                         "prefetch_budget_ms": budget * 1e3, "data_per_query_KB": n * rec / 1e3,
                         "threshold_eq4": thr, "observed_knee_batch": knee,
                         "paper_threshold": PV.BATCH_THRESHOLD_EXACT if mode == "exact" else PV.BATCH_THRESHOLD_PARTIAL})
    t = pd.DataFrame(rows)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    x = np.arange(len(t))
    ax.bar(x - 0.2, t.threshold_eq4, 0.4, label=plotting.label_source("equation 4", "modelled"))
    ax.bar(x + 0.2, t.observed_knee_batch.fillna(0).astype(float), 0.4, label="observed knee (ESPN > 1.5x memory)")
    ax.set_xticks(x, [f"{r.rerank} / {r.bandwidth_source}" for r in t.itertuples()], fontsize=7)
    ax.set_ylabel("query batch threshold")
    ax.legend(fontsize=7)
    ax.set_title("Equation 4: batch threshold")
    plotting.save(fig, out, "Equation 4: BW_SSD x PrefetchBudget / data per query, with BW from our reader and "
                  "from fio at the highest queue depth, next to the first batch size where ESPN's critical "
                  "access exceeds 1.5x memory (0: none in range). Paper: 12 (exact), 192 (top 64).")
    _table(t, out)


def iops(paths, out):
    df = _read(paths)
    g = df.groupby(["tool", "engine", "qd", "source", "status"]).iops.median().reset_index()
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    labels = [f"{r.tool}\n{r.engine} QD{r.qd}" for r in g.itertuples()]
    ax.bar(labels, g.iops.fillna(0))
    ax.set_ylabel("4 KiB random-read IOPS (O_DIRECT)")
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title("reader vs fio on the embedding table")
    plotting.save(fig, out, "Our O_DIRECT thread-pool reader vs fio (same file, same run), 4 KiB random reads; "
                  "median of repeats. A fio bar at 0 was not run (see the CSV's status).")
    _table(g, out)


DRAW = {"fig1": fig1, "fig5": fig5, "fig6": fig6, "fig7": fig7, "tables45": tables45, "fig8_9": fig8_9,
        "fig10": fig10, "eq4": eq4, "iops": iops}


def draw(kind, paths, out):
    plotting.apply_style()
    DRAW[kind](paths, out)

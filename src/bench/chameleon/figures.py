"""Figures and tables of the Chameleon study, drawn from records only (paper values beside ours).

Figure 7 / 8 (queue), Figure 9 (latency violins), throughput, Table 5 (energy), Figures 10 / 11 (RALM),
Figure 12 (accelerator ratio), the FPGA model against the authors' points, the scan target, the memory
nodes, and the targets summary table. Modelled series are labelled through ``plotting.label_source``;
configurations that did not run are named in the figure as "not run".
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ..core import plotting, records
from ..core.atomic import atomic_path, write_text
from . import paper_values


def _read(paths: Sequence[str | Path]) -> tuple[pd.DataFrame, dict]:
    frames = [records.read(p) for p in paths]
    prov = frames[0].attrs.get("provenance", {})
    return pd.concat(frames, ignore_index=True), prov


def _not_run_text(df: pd.DataFrame, col: str = "config") -> str:
    nr = sorted(df.loc[df.source == "not_run", col].astype(str).unique()) if "source" in df else []
    return f"not run: {', '.join(nr)} (no CUDA on this machine)" if nr else ""


def _label(name: str, source: str) -> str:
    return plotting.label_source(name, source if source in plotting.SOURCE_LABELS else "measured")


def _where(prov: dict) -> str:
    return f"profile ``{prov.get('profile')}``, {prov.get('cpu_model')}, {prov.get('cpu_cores')} cores"


# --------------------------------------------------------------------------- Figures 7, 8
def fig7(paths, out_png):
    plotting.apply_style()
    df, prov = _read(paths)
    d = df[df.figure == "fig7"]
    nq = int(d.num_queues.iloc[0])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(d.k, d.p, color="tab:red", label=_label("p(k)", "modelled"))
    ax2 = ax.twinx()
    ax2.plot(d.k, d.P, color="tab:blue", label=_label("P(k)", "modelled"))
    ax.set(xlim=(-0.5, 40), xlabel=f"k (of the top {int(d.k.max())} results in one of {nq} queues)",
           ylabel="p(k)")
    ax2.set(ylabel="P(k)", ylim=(0, 1.02))
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="center right")
    cap = (f"Figure 7 (reproduced, analytic): the binomial probability p(k) that one of {nq} level-one queues "
           f"holds k of the K={int(d.k.max())} results and its cumulative P(k). Modelled, not measured; "
           f"{_where(prov)}.")
    return plotting.save(fig, out_png, cap)


def fig8(paths, out_png):
    plotting.apply_style()
    df, prov = _read(paths)
    d = df[df.figure == "fig8"].sort_values("units")
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.plot(d.units, d.analytic_one_queue_per_unit, "o-",
            label=_label("analytic, one queue per unit (authors' convention)", "modelled"))
    ax.plot(d.units, d.analytic_two_queues_per_unit, "s--", label=_label("analytic, two L1 queues per unit", "modelled"))
    ax.plot(d.units, d.simulated_iid, "^-", label=_label("simulated, i.i.d. distances", "emulated"))
    if "simulated_real" in d:
        ax.plot(d.units, d.simulated_real, "v-", label=_label("simulated, our PQ distances", "emulated"))
    a = d.dropna(subset=["authors"])
    ax.scatter(a.units, a.authors, s=90, marker="*", color="k", zorder=5, label=_label("authors' L1 lengths", "paper"))
    for _, r in a.iterrows():
        ax.annotate(f"m={int(r.m)}", (r.units, r.authors), textcoords="offset points", xytext=(5, 5))
    ax.set_xscale("log", base=2)
    ax.set(xlabel="PQ decoding units (2 L1 queues each)", ylabel="L1 length for 99% identical top-K")
    ax.legend(fontsize=8)
    cap = (f"Figure 8 (reproduced): L1 queue length needed so that 99% of queries return exactly the top-K, "
           f"against the number of decoding units (4 channels x 64 B / m). Analytic = binomial model "
           f"P(L)^queues >= 0.99; simulated = the queue hierarchy run on i.i.d. distances and on our "
           f"index's PQ distances in scan order (emulated, not hardware). Stars: the authors' lengths "
           f"10/15/23/38 for m = 8/16/32/64. {_where(prov)}.")
    return plotting.save(fig, out_png, cap)


# --------------------------------------------------------------------------- Figure 9, throughput
def fig9(paths, out_png):
    plotting.apply_style()
    df, prov = _read(paths)
    lat = df[df.phase == "latency"].copy()
    lat["label"] = [_label(c, s) for c, s in zip(lat.config, lat.source)]
    pl = paper_values.latency()
    dsets = list(dict.fromkeys(lat.dataset))
    fig, axes = plt.subplots(len(dsets), 1, figsize=(11, 3.2 * len(dsets)), squeeze=False)
    for ax, ds in zip(axes[:, 0], dsets):
        g = lat[lat.dataset == ds]
        order = sorted(g.batch_size.unique())
        sns.violinplot(g, x="batch_size", y="latency_ms", hue="label", order=order, ax=ax, cut=0,
                       density_norm="width", inner="point", linewidth=0.6)
        ax.set_yscale("log")
        pds = paper_values.paper_dataset(ds)
        p = pl[(pl.dataset == pds)]
        marks = {"8CPU": "X", "16CPU": "s", "1FPGA-8CPU": "P", "1FPGA-1GPU": "D", "2FPGA-8CPU": "P",
                 "2FPGA-1GPU": "D"}
        for arch, mk in marks.items():
            pa = p[p.arch == arch]
            if pa.empty:
                continue
            xs = [order.index(b) for b in pa.batch_size if b in order]
            ys = [v for b, v in zip(pa.batch_size, pa.median_ms) if b in order]
            ax.scatter(xs, ys, marker=mk, s=45, color="k", zorder=6,
                       label=plotting.label_source(f"{arch} median", "paper"))
        ax.set(title=f"{ds} (paper: {pds})", xlabel="batch size", ylabel="latency per batch (ms)")
        ax.legend(fontsize=7, ncol=2, loc="upper left")
    fig.tight_layout()
    nr = _not_run_text(df)
    cap = (f"Figure 9 (reproduced): vector-search latency per batch, distribution over timed batches "
           f"(violins; dots = batches), per dataset, batch size and configuration; black markers = the "
           f"authors' medians on their 1B-vector datasets (8 or 16 CPU cores, FPGA nodes). fpga-* are "
           f"modelled (measured index scan + node model). {nr}. {_where(prov)}; our datasets are the "
           f"profile's scale, so absolute values differ from the paper's.")
    return plotting.save(fig, out_png, cap)


def throughput(paths, out_png):
    plotting.apply_style()
    df, prov = _read(paths)
    t = df[df.phase == "throughput"].groupby(["dataset", "config", "source"])["qps"].median().reset_index()
    t["label"] = [_label(c, s) for c, s in zip(t.config, t.source)]
    t["who"] = "ours"
    pt = paper_values.throughput()
    inv = {v[0]: k for k, v in paper_values.DATASET_MAP.items()}
    pt = pt[pt.dataset.isin(inv)].copy()
    pt["dataset"] = pt.dataset.map(inv)
    pt = pt[pt.dataset.isin(t.dataset)]
    pt["label"] = [plotting.label_source(a, "paper") for a in pt.arch]
    both = pd.concat([t[["dataset", "label", "qps"]], pt.rename(columns={"median_qps": "qps"})[["dataset", "label", "qps"]]])
    fig, ax = plt.subplots(figsize=(12, 4.5))
    sns.barplot(both, x="dataset", y="qps", hue="label", ax=ax)
    ax.set_yscale("log")
    ax.set(ylabel="queries/s (median)")
    ax.legend(fontsize=7, ncol=3)
    cap = (f"Vector-search throughput (queries/s, all queries in one batch, median of runs) per configuration; "
           f"the authors' values (1B vectors, 10,000-query batches) labelled paper. Their '8CPU-1GPU' ran "
           f"CPU-only (defect noted in the original code). {_not_run_text(df)}. {_where(prov)}.")
    return plotting.save(fig, out_png, cap)


# --------------------------------------------------------------------------- Table 5
def table5(paths, out_png):
    plotting.apply_style()
    df, prov = _read(paths)
    df = df[df.source != "not_run"]
    tab = df.pivot_table(index=["dataset", "config"], columns="batch_size", values=["energy_mj", "paper_energy_mj"])
    with atomic_path(Path(out_png).with_suffix(".csv")) as tmp:
        tab.to_csv(tmp)
    long = pd.concat([df.assign(who=[_label(f"ours {c}", s) for c, s in zip(df.config, df.source)], mj=df.energy_mj),
                      df.assign(who=[plotting.label_source(f"{s}", "paper") for s in df.system], mj=df.paper_energy_mj)])
    g = sns.catplot(long, x="batch_size", y="mj", hue="who", col="dataset", kind="bar", height=3.2, aspect=1.0,
                    col_wrap=4)
    g.set(yscale="log", ylabel="energy per query (mJ)")
    counters = prov.get("power_counters", {})
    srcs = ", ".join(sorted(df.source.unique()))
    cap = (f"Table 5 (reproduced): energy per query (mJ) at batch 1/4/16, ours beside the paper's "
           f"(CSV beside this figure). Ours are measured where a power counter was readable, else MODELLED "
           f"(the power implied by the paper's Table 5 and latency medians, times our measured cpu or modelled "
           f"fpga latency); here: {srcs} (RAPL: {counters.get('rapl')}, NVML: {counters.get('nvml')}). "
           f"{_where(prov)}.")
    return plotting.save(g.figure, out_png, cap)


# --------------------------------------------------------------------------- Figures 10, 11, 12
def fig10(paths, out_png):
    plotting.apply_style()
    df, prov = _read(paths)
    d = df[(df.source != "not_run") & (df.batch_size == 1) & (df.rep == 0)].copy()
    d["label"] = [_label(c, s) for c, s in zip(d.config, d.source)]
    d["step_ms"] = d.step_s * 1e3
    d["panel"] = d.model + " / interval " + d.interval.astype(str)
    g = sns.relplot(d, x="step", y="step_ms", hue="label", col="panel", col_wrap=3, kind="line", height=2.8,
                    aspect=1.3, facet_kws={"sharey": False})
    g.set(yscale="log", ylabel="latency per step (ms)")
    pr = paper_values.ralm()
    pr = pr[(pr.batch_size == 1)]
    cap = (f"Figure 10 (reproduced): RALM per-token-step latency over generation steps (batch 1), per model "
           f"and retrieval interval; 'none' = inference only, fpga-* modelled. Paper medians at batch 1 for "
           f"comparison: " + "; ".join(f"{r.model} {r.arch} int {r.retrieval_interval}: {r.median_step_ms:.1f} ms"
                                       for r in pr.head(12).itertuples())
           + f". Models are scaled by the profile (layers {sorted(d.layers.unique())}). {_not_run_text(df)}. "
             f"{_where(prov)}.")
    return plotting.save(g.figure, out_png, cap)


def _tokens_per_s(df: pd.DataFrame) -> pd.DataFrame:
    d = df[(df.source != "not_run") & (df.step >= 0)]
    per_rep = d.groupby(["model", "config", "source", "interval", "batch_size", "rep"]).agg(
        total_s=("step_s", "sum"), steps=("step", "count")).reset_index()
    per_rep["tokens_per_s"] = per_rep.steps * per_rep.batch_size / per_rep.total_s
    return per_rep.groupby(["model", "config", "source", "interval", "batch_size"])["tokens_per_s"].median().reset_index()


def fig11(paths, out_png):
    plotting.apply_style()
    df, prov = _read(paths)
    t = _tokens_per_s(df)
    t = t[t.batch_size == t.groupby("model").batch_size.transform("max")]
    t["label"] = [_label(c, s) for c, s in zip(t.config, t.source)]
    t["x"] = t.model + "\nint " + t.interval.astype(str)
    fig, ax = plt.subplots(figsize=(12, 4.2))
    sns.barplot(t, x="x", y="tokens_per_s", hue="label", ax=ax)
    pr = paper_values.ralm()
    cap = (f"Figure 11 (reproduced): RALM throughput (tokens/s) at the profile's throughput batch, by model and "
           f"retrieval interval; fpga-* modelled. Paper (RTX 3090 + CPU/FPGA retrieval, full-size models) "
           f"ranges {pr.median_tokens_per_s.min():.1f}-{pr.median_tokens_per_s.max():.0f} tokens/s. "
           f"{_not_run_text(df)}. {_where(prov)}.")
    ax.set(xlabel="", ylabel="tokens/s (median)")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    return plotting.save(fig, out_png, cap)


def fig12(ralm_paths, search_paths, out_png):
    """GPUs per memory node = vector-search queries/s of one node / queries/s one LM GPU demands."""
    plotting.apply_style()
    df, prov = _read(ralm_paths)
    t = _tokens_per_s(df)
    lm = t[(t.config == "none")]
    lm = lm[lm.batch_size == lm.groupby("model").batch_size.transform("max")]
    s, _ = _read(search_paths)
    qps = s[s.phase == "throughput"].groupby(["dataset", "config", "source"])["qps"].median().reset_index()
    rp = prov.get("config", {}).get("ralm", {})
    ds_of = rp.get("datasets", {"S": "syn-512", "L": "syn-1024"})
    rows = []
    for _, r in lm.iterrows():
        size = "S" if r.model.endswith("-S") else "L"
        demand = r.tokens_per_s / r.interval
        for _, q in qps[qps.dataset == ds_of[size]].iterrows():
            rows.append({"model": r.model, "interval": r.interval, "search": q.config, "source": q.source,
                         "who": "ours", "ratio": q.qps / demand})
    # The paper's ratio from its archived throughputs.
    pt, pr = paper_values.throughput(), paper_values.ralm()
    pio = pr[pr["mode"] == "inference_only"]
    pio = pio[pio.batch_size == pio.groupby("model").batch_size.transform("max")]  # the throughput batch
    for _, r in pio.iterrows():
        pds = "RALM-S1000M" if r.model.endswith("-S") else "RALM-L1000M"
        f = pt[(pt.dataset == pds) & (pt.n_fpga > 0)]
        if f.empty:
            continue
        rows.append({"model": r.model, "interval": r.retrieval_interval, "search": f.arch.iloc[0], "source": "paper",
                     "who": "paper", "ratio": float(f.median_qps.max()) / (r.median_tokens_per_s / r.retrieval_interval)})
    d = pd.DataFrame(rows)
    d["label"] = [_label(c, s) if s != "paper" else plotting.label_source(c, "paper") for c, s in zip(d.search, d.source)]
    d["x"] = d.model + "\nint " + d.interval.astype(int).astype(str)
    fig, ax = plt.subplots(figsize=(12, 4.2))
    sns.barplot(d, x="x", y="ratio", hue="label", ax=ax)
    ax.set_yscale("log")
    ax.axhline(1, color="grey", lw=0.8)
    ax.set(xlabel="", ylabel="GPUs per memory node")
    ax.legend(fontsize=7, ncol=2)
    with atomic_path(Path(out_png).with_suffix(".csv")) as tmp:
        d.to_csv(tmp, index=False)
    cap = (f"Figure 12 (reproduced): accelerator ratio = queries/s one vector-search node sustains / queries/s "
           f"one LM engine demands (its tokens/s divided by the retrieval interval), from our measured (LM, "
           f"cpu search) and modelled (fpga search) throughputs, beside the ratio computed from the authors' "
           f"archived throughputs (paper range 0.2-442). {_where(prov)}.")
    return plotting.save(fig, out_png, cap)


# --------------------------------------------------------------------------- model, scan, nodes
def _m16_note(df: pd.DataFrame) -> str:
    if "paper_slope_ms_per_query" not in df:
        return ""
    g = df[(df.kind == "latency_ms") & (df.m == 16)].dropna(subset=["paper_slope_ms_per_query"])
    if g.empty:
        return ""
    ratio = g.paper_throughput_ms_per_query / g.paper_slope_ms_per_query
    return (f"; in the authors' m=16 (SIFT/Deep) latency points each extra query adds "
            f"{g.paper_slope_ms_per_query.min():.2f}-{g.paper_slope_ms_per_query.max():.2f} ms, below the node's scan "
            f"floor ({g.scan_floor_ms_per_query.iloc[0]:.3f} ms) and {ratio.min():.1f}-{ratio.max():.1f}x below their "
            f"own throughput's ms per query, so no model consistent with their throughput fits them (targets table)")


def model(paths, out_png):
    plotting.apply_style()
    df, prov = _read(paths)
    fig, ax = plt.subplots(figsize=(6.4, 5.4))
    df = df.copy()
    df["group"] = df.kind
    lat = df.kind.str.startswith("latency")
    if "arch" in df:
        df.loc[lat, "group"] = (df.kind[lat] + ", m=" + df.m[lat].astype(int).astype(str) + ", "
                                + np.where(df.arch[lat].str.endswith("GPU"), "FPGA-GPU", "FPGA-CPU"))
    for (group, cal), g in df.groupby(["group", "calibration"]):
        ax.scatter(g.paper, g.model, label=_label(f"{group}{' (calibration point)' if cal else ''}", "modelled"),
                   marker="*" if cal else "o", s=90 if cal else 24, alpha=0.85)
    lim = [min(df.paper.min(), df.model.min()) * 0.7, max(df.paper.max(), df.model.max()) * 1.4]
    ax.plot(lim, lim, color="grey", lw=0.8)
    ax.fill_between(lim, [v * 0.8 for v in lim], [v * 1.2 for v in lim], color="grey", alpha=0.15, label="±20%")
    ax.set(xscale="log", yscale="log", xlim=lim, ylim=lim, xlabel="authors' measurement (paper)",
           ylabel="our performance model (modelled)")
    ax.legend(fontsize=6)
    with atomic_path(Path(out_png).with_suffix(".csv")) as tmp:
        df.to_csv(tmp, index=False)
    per = df.list_overhead_cycles_per_subspace.iloc[0]
    val = df[~df.calibration]
    ok = int((val.rel_error.abs() <= 0.2).sum())
    host = ""
    if "host_fixed_ms" in df:
        host = (f"; per-batch fixed cost {df.host_fixed_ms.iloc[0]:.3f} ms and CPU centroid bandwidth "
                f"{df.cpu_centroid_gbps.iloc[0]:.1f} GB/s from the authors' RALM-S1000M batch-1 latencies "
                f"(FPGA-GPU, FPGA-CPU)")
    cap = (f"ChamVS performance model (modelled) against the authors' archived FPGA measurements. Calibrated on "
           f"the points drawn as stars: the SIFT m=32 build (10,000 queries in 12.69 s at 117 MHz: {per:.1f} "
           f"overhead cycles per list per sub-space){host}. Throughput = 10,000-query batch, node time only; "
           f"latency = end to end per batch (fixed cost + index scan on CPU/GPU + network + B x the node's "
           f"pipelined per-query time), every batch size 1-128. {ok}/{len(val)} uncalibrated points within ±20%"
           f"{_m16_note(df)}. Table beside this figure. {_where(prov)}.")
    return plotting.save(fig, out_png, cap)


def scan(paths, out_png):
    plotting.apply_style()
    df, prov = _read(paths)
    d = df[df.source == "measured"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
    sns.barplot(d, x="dataset", y="seconds", hue="impl", ax=a1, estimator=np.median, errorbar=("pi", 100))
    a1.set(ylabel="scan time (s, median, min-max)")
    sns.barplot(d, x="dataset", y="gbps_per_core", hue="impl", ax=a2, estimator=np.median)
    a2.axhspan(1.0, 1.2, color="grey", alpha=0.2, label=plotting.label_source("faiss 1.0-1.2 GB/s/core", "paper"))
    a2.set(ylabel="PQ-code GB/s per core")
    a2.legend(fontsize=8)
    cap = (f"PQ scan of the same probed lists: faiss search_preassigned vs the project's torch kernel (lookup "
           f"tables, gather-sum, top-K) on {int(d.threads.iloc[0])} thread(s); GB/s counts m-byte PQ codes. "
           f"The paper quotes about 1.0-1.2 GB/s per core for faiss. {_not_run_text(df, 'device')}. {_where(prov)}.")
    return plotting.save(fig, out_png, cap)


def nodes(paths, out_png):
    plotting.apply_style()
    df, prov = _read(paths)
    d = df[df.phase == "latency"].melt(id_vars=["batch_size"], value_vars=["wall_ms", "node_max_ms", "overhead_ms",
                                                                           "single_process_ms"])
    fig, ax = plt.subplots(figsize=(7, 4))
    sns.lineplot(d, x="batch_size", y="value", hue="variable", marker="o", ax=ax, estimator="median",
                 errorbar=("pi", 50))
    ax.set(xscale="log", yscale="log", xlabel="batch size", ylabel="ms per batch (median, IQR)")
    checks = prov.get("checks", [])
    cap = (f"Disaggregated memory nodes: {int(df.n_nodes.iloc[0])} node processes over TCP; coordinator wall time, "
           f"slowest node's scan, coordinator overhead (wall - slowest node) and the single-process scan of the "
           f"same batch. Checks: " + "; ".join(f"{c['check']}: {'pass' if c['passed'] else 'FAIL'}" for c in checks)
           + f". {_where(prov)}.")
    return plotting.save(fig, out_png, cap)


# --------------------------------------------------------------------------- targets
def _model_target(md: pd.DataFrame, val: pd.DataFrame) -> dict:
    """The model target over every archived FPGA point except the calibration ones (named)."""
    cal = "; ".join(md[md.calibration].point)
    thr, lat = val[val.kind == "qps"], val[val.kind != "qps"]
    ok = val.rel_error.abs() <= 0.2

    def frac(d):
        return f"{int((d.rel_error.abs() <= 0.2).sum())}/{len(d)}"

    by = "; ".join(f"{ds} {arch}: {frac(g)}" for (ds, arch), g in lat.groupby(["dataset", "arch"]))
    return {"target": f"performance model within 20% of the authors' measurements on points it was not calibrated "
                      f"on: all {len(thr)} FPGA throughput points and all {len(lat)} FPGA latency medians (every "
                      f"batch size, end to end), i.e. every archived FPGA point except the calibration points ({cal})",
            "measured": f"{int(ok.sum())}/{len(val)} within 20%. Throughput {frac(thr)} "
                        f"({thr.rel_error.min() * 100:+.1f}%..{thr.rel_error.max() * 100:+.1f}%); latency {frac(lat)} "
                        f"(median |error| {lat.rel_error.abs().median() * 100:.1f}%, max "
                        f"{lat.rel_error.abs().max() * 100:.1f}%); latency by configuration: {by}",
            "passed": bool(ok.all())}


def _latency_breakdown(val: pd.DataFrame) -> list[dict]:
    """Information rows: the latency error by PQ size, and the archived points' own consistency."""
    lat = val[val.kind != "qps"]
    if "paper_slope_ms_per_query" not in lat:
        return []
    rows = []
    for label, g in (("m=32/64 builds (RALM-S/L)", lat[lat.m >= 32]), ("m=16 build (SIFT/Deep)", lat[lat.m == 16])):
        if len(g):
            rows.append({"target": f"(information, a subset of the row above) model vs the authors' latency points, "
                                   f"{label}",
                         "measured": f"{int((g.rel_error.abs() <= 0.2).sum())}/{len(g)} within 20%, median "
                                     f"|error| {g.rel_error.abs().median() * 100:.1f}%, max "
                                     f"{g.rel_error.abs().max() * 100:.1f}%",
                         "passed": None})
    cfg = lat.groupby(["dataset", "arch"]).agg(slope=("paper_slope_ms_per_query", "first"),
                                               thr=("paper_throughput_ms_per_query", "first"),
                                               floor=("scan_floor_ms_per_query", "first"),
                                               svc=("model_service_ms_per_query", "first")).dropna(subset=["slope"])
    rows.append({"target": "(evidence) the authors' own points, ms per query: latency slope (batch 16 -> 128) vs "
                           "throughput (10,000-query batch) vs the node's scan floor (codes / (units x clock), no "
                           "overhead) vs the model's per-query time",
                 "measured": "; ".join(f"{ds} {arch}: slope {r.slope:.3f}, throughput "
                                       f"{'n/a' if pd.isna(r.thr) else f'{r.thr:.3f}'}, floor {r.floor:.3f}, model "
                                       f"{r.svc:.3f}" for (ds, arch), r in cfg.iterrows()),
                 "passed": None})
    return rows


def targets(scan_paths, model_path, queue_path, nodes_path, out_csv):
    sc, _ = _read(scan_paths)
    sc = sc[(sc.source == "measured") & (sc.device == "cpu")]
    ratio = sc[sc.impl == "torch"].groupby("dataset")["pair_ratio_torch_over_faiss"].median()
    gb = sc[sc.impl == "faiss"].groupby("dataset")["gbps_per_core"].median()
    gbt = sc[sc.impl == "torch"].groupby("dataset")["gbps_per_core"].median()
    ov = sc[sc.impl == "torch"].groupby("dataset")["overlap_mean"].first()
    md, _ = _read([model_path])
    val = md[~md.calibration]
    thr = val[val.kind == "qps"]
    q, _ = _read([queue_path])
    f8 = q[q.figure == "fig8"].dropna(subset=["authors"])
    nd = records.read_provenance(nodes_path).get("checks", [])
    rows = [
        {"target": "torch PQ scan on CPU within 2x of faiss's scan time (same lists)",
         "measured": "; ".join(f"{d}: {r:.2f}x" for d, r in ratio.items()) + " (median of alternating pairs)",
         "passed": bool((ratio <= 2).all())},
        {"target": "CPU PQ-scan throughput, GB/s per core (paper: about 1.0-1.2)",
         "measured": "; ".join(f"{d}: faiss {gb[d]:.2f}, torch {gbt[d]:.2f}" for d in gb.index),
         "passed": None},
        {"target": "torch scan top-100 identical to faiss (>= 99%)",
         "measured": "; ".join(f"{d}: {v * 100:.2f}%" for d, v in ov.items()), "passed": bool((ov >= 0.99).all())},
        _model_target(md, val),
        {"target": "performance model within 20% of the authors' throughput points not used for calibration",
         "measured": "; ".join(f"{r.point}: {r.rel_error * 100:+.1f}%" for r in thr.itertuples()),
         "passed": bool((thr.rel_error.abs() <= 0.2).all())},
        *_latency_breakdown(val),
        {"target": "binomial model reproduces the authors' L1 lengths 10/15/23/38",
         "measured": ", ".join(f"m={int(r.m)}: {int(r.analytic_one_queue_per_unit)} (authors {int(r.authors)})"
                               for r in f8.itertuples()),
         "passed": bool((f8.analytic_one_queue_per_unit == f8.authors).all())},
    ]
    if "identical_real_at_authors" in f8:
        rows.append({"target": "approximate queue at the authors' lengths: >= 99% identical top-K (simulated)",
                     "measured": ", ".join(f"m={int(r.m)}: {r.identical_real_at_authors * 100:.1f}%" for r in f8.itertuples()),
                     "passed": bool((f8.identical_real_at_authors >= 0.99).all())})
    rows.append({"target": "approximate queue, i.i.d. distances at the analytic length: >= 99% identical",
                 "measured": ", ".join(f"m={int(r.m)}: {r.identical_iid_at_analytic * 100:.1f}%" for r in f8.itertuples()),
                 "passed": bool((f8.identical_iid_at_analytic >= 0.99).all())})
    for c in nd:
        rows.append({"target": f"memory nodes: {c['check']}", "measured": c["detail"], "passed": bool(c["passed"])})
    df = pd.DataFrame(rows)
    df["passed"] = df.passed.map({True: "pass", False: "FAIL", None: "report"})
    with atomic_path(out_csv) as tmp:
        df.to_csv(tmp, index=False)
    md = ["| target | measured | result |", "|---|---|---|"]
    md += [f"| {r.target} | {r.measured} | {r.passed} |" for r in df.itertuples()]
    write_text(Path(out_csv).with_suffix(".md"), "\n".join(md) + "\n")
    return df

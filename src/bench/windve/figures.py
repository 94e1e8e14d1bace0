"""WindVE's figures, drawn from the ``profile`` and ``serving`` records only: Tables I-III, Figures 4-6,
and beyond the paper the open-loop load, CPU utilisation and deployment cost, and the service checks.
The accelerator is whatever the records say ran (:mod:`.labels`): the CUDA GPU, measured, labelled by its
name; or the emulated accelerator, every series of it labelled so and the captions saying EMULATED. The
paper's values are drawn in the paper style beside ours, in their own panel when the scale differs."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bench.core import plotting, records
from bench.core.figures import Registry

from . import labels
from . import paper_values as PV
from .claims import gains

FIGURES = Registry()
JINA_STYLE = {**plotting.PAPER_STYLE, "marker": "P", "markersize": 9}


def _read(inputs: dict[str, list[Path]], kind: str) -> pd.DataFrame:
    return records.read_all(inputs[kind])


def _rank(slo: float, slos) -> int:
    """Our SLOs stand for the paper's by rank: the tightest for 1 s, the next for 2 s."""
    return 1 + sorted(set(slos)).index(slo)


def _acc_label(pair: str, prof: pd.DataFrame) -> str:
    return labels.acc_label(pair, labels.source(prof), labels.name(prof))


def _acc(prof: pd.DataFrame | None, serv: pd.DataFrame | None = None) -> tuple[str, str]:
    """(source, caption sentence) of the accelerator in these records."""
    src = labels.source(*(d for d in (serv, prof) if d is not None))
    return src, labels.phrase(src, labels.name(prof) if prof is not None else "")


def _start(ncols: int, nrows: int = 1, w: float = 4.2, h: float = 3.4):
    plotting.apply_style()
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows + 0.8), layout="constrained", squeeze=False)
    return fig, axes.ravel()


def _slos(slos) -> str:
    """SLOs for a caption, as plain numbers (never a numpy repr)."""
    return "[" + ", ".join(f"{float(s):g}" for s in slos) + "]"


def _admission(df: pd.DataFrame) -> str:
    """How the service admitted requests in these rows (deadline admission for the overload and open loop)."""
    if "admission" in df and df["admission"].notna().any():
        adm = str(df["admission"].dropna().iloc[0])
        return ("depth (Algorithm 1) and predicted completion within the SLO" if adm == "depth+deadline"
                else "depth only (Algorithm 1)")
    return "depth only (Algorithm 1)"


def _maxconc(df: pd.DataFrame) -> pd.DataFrame:
    return df[df.kind == "maxconc"].copy()


def _predicted(prof: pd.DataFrame) -> pd.DataFrame:
    """Regression-predicted gain C_CPU / C_acc per pair and SLO (measured profiles, not fine-tuned)."""
    d = prof[(prof.kind == "depth") & (prof.experiment == "base") & (prof.method == "regression")]
    rows = []
    for (pair, slo), g in d[d.device != "cpu"].groupby(["pair", "slo_s"]):
        cpu = d[(d.device == "cpu") & (d.slo_s == slo)].depth.max()
        rows.append({"pair": pair, "slo_s": slo, "gain": cpu / g.depth.max() if g.depth.max() else np.nan})
    return pd.DataFrame(rows, columns=["pair", "slo_s", "gain"])


@FIGURES.figure("tables_1_2", records=("serving", "profile"),
                title="Tables I/II: max concurrency without and with CPU offload")
def tables_1_2(inputs, out_png):
    serv, prof = _read(inputs, "serving"), _read(inputs, "profile")
    gt, pred = gains(serv), _predicted(prof)
    src, acc_words = _acc(prof, serv)
    done = set(zip(gt.pair, gt.slo_s)) if not gt.empty else set()
    extra = pred[[(p, s) not in done for p, s in zip(pred.pair, pred.slo_s)]]
    fig, (a, b) = _start(2, w=5.2)
    if gt.empty:
        plotting.not_run(a, "no max-concurrency rows")
        plotting.not_run(b, "no max-concurrency rows")
        return plotting.save(fig, out_png, "Tables I/II: not run.")
    slos = sorted(gt.slo_s.unique())
    labels = [f"{p}\nSLO {s:g} s" for p, s in zip(gt.pair, gt.slo_s)]
    x = np.arange(len(gt))
    col = plotting.colors(["accelerator only", "accelerator (with offload)", "CPU offload", "ours: gain with offload"])
    a.bar(x - 0.2, gt.acc_only, 0.38, color=col["accelerator only"], label=plotting.label_source("accelerator only", src))
    a.bar(x + 0.2, gt.acc_part, 0.38, color=col["accelerator (with offload)"],
          label=plotting.label_source("accelerator (with offload)", src))
    a.bar(x + 0.2, gt.cpu_part, 0.38, bottom=gt.acc_part, color=col["CPU offload"], label="CPU offload (measured)")
    a.set(xticks=x, xticklabels=labels, ylabel="max concurrency (queries)", title="(a) ours: MiniLM, 75-token queries")
    err = np.array([gt.gain - gt.gain_low, gt.gain_high - gt.gain]).clip(min=0) * 100
    gcol = col["ours: gain with offload"]
    b.bar(x, gt.gain * 100, 0.5, yerr=err, color=gcol, ecolor="0.3", capsize=3, label="ours: gain with offload")
    b.axhline(0, color="0.5", lw=0.8)
    xe = np.arange(len(gt), len(gt) + len(extra))
    b.bar(xe, extra.gain * 100, 0.5, fill=False, edgecolor=gcol, hatch="//",
          label="ours: regression-predicted (not fine-tuned here)")
    labels = labels + [f"{p}\nSLO {s:g} s" for p, s in zip(extra.pair, extra.slo_s)]
    x = np.arange(len(labels))
    gt = pd.concat([gt, extra], ignore_index=True)
    for i, r in gt.iterrows():
        key = (r.pair, _rank(r.slo_s, slos))
        b.plot(i - 0.12, PV.TABLE_I_GAIN[key] * 100, **{**plotting.PAPER_STYLE, "label": "paper Table I (bge)"})
        b.plot(i + 0.12, PV.TABLE_II_GAIN[key] * 100, **{**JINA_STYLE, "label": "paper Table II (jina)"})
    b.set(xticks=x, xticklabels=labels, ylabel="concurrency gain (%)", title="(b) gain from offload: ours vs paper")
    plotting.legend_below(fig, ncol=3)
    cap = ("Tables I/II. (a) Fine-tuned max concurrency (closed loop, all queries of a round within the SLO) with the "
           f"accelerator alone and with CPU offload (Algorithm 1). {acc_words} The CPU instance is measured. "
           f"Our SLOs {_slos(slos)} s stand "
           "for the paper's 1 s and 2 s. (b) Gain (offload / accelerator only - 1), error bars from the rounds "
           "(every round met .. any round met); hatched: pairs not fine-tuned in this profile, gain C_CPU/C_acc predicted "
           "by the regression on measured profiles; paper values (bge Table I, jina Table II) drawn as markers.")
    return plotting.save(fig, out_png, cap)


def _depth_rows(prof: pd.DataFrame, serv: pd.DataFrame | None) -> pd.DataFrame:
    d = prof[(prof.kind == "depth") & (prof.experiment == "base")].copy()
    d["dev"] = np.where(d.device == "cpu", "cpu", "accelerator")
    out = [d[["pair", "dev", "device", "slo_s", "method", "depth", "runs"]]]
    if serv is not None:
        mc = _maxconc(serv)
        mc = mc[mc.config == "offload"]
        for r in mc.itertuples():
            acc = getattr(r, "accelerator", "emulated")
            acc = acc if isinstance(acc, str) and acc else "emulated"
            for dev, col in (("accelerator", "depth_acc"), ("cpu", "depth_cpu")):
                if not hasattr(r, col) and col == "depth_acc":
                    col = "depth_emulated"   # records written before the accelerator was named
                out.append(pd.DataFrame([{"pair": r.pair, "dev": dev, "device": "cpu" if dev == "cpu" else acc,
                                          "slo_s": r.slo_s, "method": "fine-tuned", "depth": getattr(r, col), "runs": r.runs}]))
    return pd.concat(out, ignore_index=True)


@FIGURES.figure("table_3", records=("profile", "serving"), title="Table III: queue depth by regression, stress test, fine-tuning")
def table_3(inputs, out_png):
    prof, serv = _read(inputs, "profile"), _read(inputs, "serving")
    dr = _depth_rows(prof, serv)
    src, acc_words = _acc(prof, serv)
    slos = sorted(dr.slo_s.unique())
    pairs = [p for p in dr.pair.unique() if p]
    cpu = dr[dr.dev == "cpu"].copy()
    # the CPU is one measured device for every pair: its regression/stress rows carry pair "" -> per pair
    cpu = pd.concat([cpu[cpu.pair != ""]] + [cpu[cpu.pair == ""].assign(pair=p) for p in pairs], ignore_index=True)
    dr = pd.concat([dr[dr.dev == "accelerator"], cpu], ignore_index=True)
    keys = [(p, dev, s) for p in pairs for dev in ("accelerator", "cpu") for s in slos]
    methods = ["regression", "stress", "fine-tuned"]
    col = plotting.colors(methods)
    fig, (a, b, c) = _start(3, w=5.0)
    x = np.arange(len(keys))
    labels = [f"{'acc' if dev == 'accelerator' else 'CPU'} {p.split('-')[0]}\n{s:g} s" for p, dev, s in keys]
    for j, m in enumerate(methods):
        vals = [dr[(dr.pair == p) & (dr.dev == dev) & (dr.slo_s == s) & (dr.method == m)].depth.max() for p, dev, s in keys]
        a.bar(x + (j - 1) * 0.27, vals, 0.27, color=col[m], label=m)
        pv = [PV.TABLE_III[(p, dev, _rank(s, slos))][m] for p, dev, s in keys]
        ours_ratio = [v / st if st else np.nan for v, st in zip(vals, [dr[(dr.pair == p) & (dr.dev == dev) & (dr.slo_s == s)
                                                                          & (dr.method == "stress")].depth.max() for p, dev, s in keys])]
        paper_ratio = [v / PV.TABLE_III[(p, dev, _rank(s, slos))]["stress"] for v, (p, dev, s) in zip(pv, keys)]
        if m != "stress":
            off = -0.2 if m == "regression" else 0.2
            b.bar(x + off, ours_ratio, 0.38, color=col[m])
            b.plot(x + off, paper_ratio, **{**plotting.PAPER_STYLE, "label": "paper (Table III)"})
    b.axhline(1, color="0.5", lw=0.8)
    for j, m in enumerate(("regression", "stress")):
        runs = [dr[(dr.pair == p) & (dr.dev == dev) & (dr.slo_s == s) & (dr.method == m)].runs.max() for p, dev, s in keys]
        c.bar(x + (j - 0.5) * 0.4, runs, 0.4, color=col[m])
    a.set(xticks=x, xticklabels=labels, ylabel="queue depth (queries)", title="(a) ours: depth per device and SLO")
    b.set(xticks=x, xticklabels=labels, ylabel="depth / stress-test depth", title="(b) against the stress test")
    c.set(xticks=x, xticklabels=labels, ylabel="profiling runs (levels measured)", title="(c) runs each method needed")
    for ax in (a, b, c):
        ax.tick_params(axis="x", labelsize="x-small")
    plotting.legend_below(fig, ncol=4)
    cap = ("Table III. Queue depths per device and SLO from the linear regression (equation 12 fitted to a few "
           "closed-loop levels), from the stress test (steps of 8 until the SLO fails) and fine-tuned with both "
           f"devices running (serving step). {acc_words} The accelerator ('acc') is labelled by the pair it stands "
           "for; the CPU is measured (one CPU here stands for both pairs' CPUs). (b) Ours as a ratio to our "
           "stress test, paper's ratio to its stress test as markers. (c) Profiling runs (concurrency levels "
           "measured) each method needed.")
    return plotting.save(fig, out_png, cap)


@FIGURES.figure("fig4", records=("profile",), title="Figure 4: latency against concurrency, fits and stress tests")
def fig4(inputs, out_png):
    df = _read(inputs, "profile")
    base = df[df.experiment == "base"]
    rounds = base[(base.kind == "round") & (base.phase == "measured")]
    fits = base[base.kind == "fit"]
    acc = labels.device(df)
    src, acc_words = _acc(df)
    devs = [("cpu", "")] + [(acc, p) for p in fits[fits.device == acc].pair.unique()]
    fig, axes = _start(len(devs) + 1, w=3.9)
    slos = sorted(df[df.kind == "depth"].slo_s.unique())
    col = plotting.colors(["profiled levels", "stress test", "fit"])
    for ax, (dev, pair) in zip(axes, devs):
        r = rounds[(rounds.device == dev) & (rounds.pair == pair)]
        for purpose, mk in (("profile", "o"), ("stress", "^")):
            g = r[r.purpose == purpose].groupby("concurrency").latency_max_s.median()
            ax.plot(g.index, g.values, mk, color=col["profiled levels" if purpose == "profile" else "stress test"],
                    label="profiled levels" if purpose == "profile" else "stress test")
        f = fits[(fits.device == dev) & (fits.pair == pair)].iloc[0]
        cmax = max(r.concurrency.max(), 1)
        cs = np.linspace(0, cmax, 50)
        ax.plot(cs, f.alpha * cs + f.beta, "-", color=col["fit"], label="fit t = αC + β")
        for s in slos:
            ax.axhline(s, ls=":", color="0.4", lw=0.8)
        name = "CPU instance (measured)" if dev == "cpu" else _acc_label(pair, df)
        ax.set(xlabel="concurrency C", ylabel="latency of the round's slowest query (s)",
               title=f"{name}\nα={f.alpha * 1e3:.1f} ms, β={f.beta * 1e3:.0f} ms, R²={f.r2:.3f}")
        ax.title.set_fontsize("small")
    ax = axes[len(devs)]
    cpu = fits[(fits.device == "cpu")].iloc[0]
    x = np.arange(len(devs) - 1)
    for i, (_, pair) in enumerate(devs[1:]):
        f = fits[(fits.device == acc) & (fits.pair == pair)].iloc[0]
        ax.bar(i - 0.2, f.alpha / cpu.alpha, 0.38, color=col["fit"], label=plotting.label_source("ours α_acc/α_CPU", src))
        ax.bar(i + 0.2, f.beta / cpu.beta if cpu.beta else np.nan, 0.38, color=col["stress test"],
               label=plotting.label_source("ours β_acc/β_CPU", src))
        ax.plot(i - 0.2, PV.ALPHA_RATIO[pair], **{**plotting.PAPER_STYLE, "label": "paper (Fig. 4, Sec. V-B)"})
        ax.plot(i + 0.2, PV.BETA[pair]["accelerator"] / PV.BETA[pair]["cpu"], **plotting.PAPER_STYLE)
    ax.set(xticks=x, xticklabels=[p for _, p in devs[1:]], ylabel="accelerator / CPU", title="fit coefficients, ratio")
    plotting.legend_below(fig, ncol=4)
    cap = ("Figure 4. Closed-loop latency (median over rounds of each round's slowest query) against concurrency per "
           "device, the linear fit of equation 12 (alpha, beta >= 0) on the profiled levels, the stress-test levels "
           f"(steps of 8), SLOs {_slos(slos)} s dotted. {acc_words} "
           + ("The last panel checks that the measured service keeps the emulated ratios (paper markers) once HTTP "
              "and queueing are included." if src == "emulated" else
              "The last panel compares the measured GPU/CPU coefficient ratios with the paper's V100/Xeon ones."))
    return plotting.save(fig, out_png, cap)


def _scaling(df: pd.DataFrame, experiment: str) -> pd.DataFrame:
    d = df[(df.kind == "depth") & (df.experiment == experiment) & (df.method == "regression")]
    return d


@FIGURES.figure("fig5", records=("profile",), title="Figure 5: concurrency against query length")
def fig5(inputs, out_png):
    prof = _read(inputs, "profile")
    d = _scaling(prof, "length")
    src, acc_words = _acc(prof)
    slos = sorted(d.slo_s.unique())
    fig, axes = _start(len(slos) + 1, w=4.0)
    col = plotting.colors(["original", "additional"])
    for ax, s in zip(axes, slos):
        g = d[d.slo_s == s]
        acc = g[g.device != "cpu"].sort_values("query_tokens")
        cpu = g[g.device == "cpu"].sort_values("query_tokens")
        pair = acc.pair.iloc[0] if len(acc) else "v100-xeon"
        ax.plot(acc.query_tokens, acc.depth, "o-", color=col["original"], label=_acc_label(pair, prof) + ": original")
        ax.plot(cpu.query_tokens, cpu.depth, "s-", color=col["additional"], label="CPU (measured): additional")
        no = cpu[cpu.cannot_help.astype(bool)]
        ax.plot(no.query_tokens, no.depth, "x", color="k", ms=9, label="CPU cannot help (eq. 11)")
        ax.set(xlabel="query length (tokens)", ylabel="concurrency (regression depth)", title=f"SLO {s:g} s")
    ax = axes[len(slos)]
    for k, v in PV.FIG5_AT_500.items():
        ax.plot(k, v, **{**plotting.PAPER_STYLE, "label": "paper: CPU's addition at 500 tokens"})
    ax.set(xlim=(0.5, 2.5), ylim=(-0.5, 4), xticks=[1, 2], xticklabels=["1 s", "2 s"], xlabel="paper SLO",
           ylabel="additional concurrency", title="paper (V100 + Xeon, Sec. V-D)")
    plotting.legend_below(fig, ncol=2)
    how = ("EMULATED from the CPU fit at each length times the pair's ratios" if src == "emulated"
           else f"MEASURED on {labels.name(prof)}")
    cap = (f"Figure 5. Concurrency against query length: the accelerator alone ('original', {how}) "
           "and what the CPU adds ('additional', measured), as predicted by "
           "the regression on closed-loop profiles at each length; x marks where one query on the CPU already misses "
           "the SLO (equation 11: the CPU cannot help). Right: the values the paper's text gives.")
    return plotting.save(fig, out_png, cap)


@FIGURES.figure("fig6", records=("profile",), title="Figure 6: CPU concurrency against CPU cores")
def fig6(inputs, out_png):
    d = _scaling(_read(inputs, "profile"), "cores")
    slos = sorted(d.slo_s.unique())
    fig, (a, b) = _start(2, w=4.4)
    col = plotting.colors([f"SLO {s:g} s" for s in slos])
    for s in slos:
        g = d[d.slo_s == s].sort_values("cpu_threads")
        a.plot(g.cpu_threads, g.depth, "o-", color=col[f"SLO {s:g} s"], label=f"CPU (measured), SLO {s:g} s")
    a.set(xlabel="cores (threads) of the CPU instance", ylabel="CPU concurrency (regression depth)",
          title="(a) ours: the CPU's addition", xticks=sorted(d.cpu_threads.unique()))
    for k, v in PV.FIG6_MIN_CORES.items():
        b.plot(k, v, **{**plotting.PAPER_STYLE, "label": "paper: fewest Xeon cores that add concurrency"})
    b.set(xlim=(0.5, 2.5), ylim=(0, 50), xticks=[1, 2], xticklabels=["1 s", "2 s"], xlabel="paper SLO",
          ylabel="cores", title="(b) paper (Sec. V-D)")
    plotting.legend_below(fig, ncol=2)
    cap = ("Figure 6. The CPU instance's concurrency (regression depth from closed-loop profiles) against the cores "
           "(threads, highest core indices first as Section IV-D advises) it uses; this machine has few cores, and "
           "the framework shares them. Right: the paper's boundary below which the Xeon adds nothing.")
    return plotting.save(fig, out_png, cap)


@FIGURES.figure("openloop", records=("serving",), title="Beyond the paper: open-loop goodput, latency and shares")
def openloop(inputs, out_png):
    df = _read(inputs, "serving")
    ol = df[df.kind == "openloop"] if "kind" in df else df.iloc[:0]
    fig, (a, b, c) = _start(3, w=4.4)
    if ol.empty:
        for ax in (a, b, c):
            plotting.not_run(ax, "no open-loop rows")
        return plotting.save(fig, out_png, "Open loop: not run.")
    configs = ["accelerator_only", "offload"]
    col = plotting.colors(configs)
    src, acc_words = _acc(None, ol)
    for cfg in configs:
        g = ol[(ol.config == cfg) & (ol.arrivals == "poisson")].sort_values("offered_rps")
        bu = ol[(ol.config == cfg) & (ol.arrivals == "bursty")]
        lab = plotting.label_source(cfg.replace("_", " "), src)
        a.plot(g.offered_rps, g.goodput_rps, "o-", color=col[cfg], label=lab)
        a.plot(bu.offered_rps, bu.goodput_rps, "D", color=col[cfg], mfc="none", label=f"{cfg.replace('_', ' ')}: bursts")
        b.plot(g.offered_rps, g.p50_s, "o--", color=col[cfg], label=f"{cfg.replace('_', ' ')}: p50")
        b.plot(g.offered_rps, g["p99_s"], "s-", color=col[cfg], label=f"{cfg.replace('_', ' ')}: p99")
    slo = ol.slo_s.iloc[0]
    lim = ol.offered_rps.max() * 1.05
    a.plot([0, lim], [0, lim], ":", color="0.6", label="goodput = offered")
    b.axhline(slo, ls=":", color="0.4", lw=0.8)
    a.set(xlabel="offered load (requests/s)", ylabel="goodput (answers within SLO per s)", title="(a) goodput")
    b.set(xlabel="offered load (requests/s)", ylabel="latency from intended send (s)", title=f"(b) p50 / p99, SLO {slo:g} s",
          yscale="log")
    shares = ol.sort_values(["arrivals", "config", "offered_rps"], ascending=[False, True, True])
    x = np.arange(len(shares))
    scol = plotting.colors(["accelerator", "CPU", "refused (429)", "lost"])
    bottom = np.zeros(len(shares))
    for key, name in (("share_accelerator", "accelerator"), ("share_cpu", "CPU"), ("share_refused", "refused (429)"),
                      ("share_lost", "lost")):
        v = shares[key].to_numpy()
        c.bar(x, v, bottom=bottom, color=scol[name], label=f"share: {name}")
        bottom += v
    c.set(xticks=x, xticklabels=[f"{'acc' if r.config == 'accelerator_only' else 'off'} {r.load_factor:g}x"
                                 + ("\nburst" if r.arrivals == "bursty" else "") for r in shares.itertuples()],
          ylabel="share of requests", title="(c) served / offloaded / refused")
    c.tick_params(axis="x", labelsize="x-small", rotation=90)
    plotting.legend_below(fig, ncol=4)
    cap = ("Beyond the paper: open-loop Poisson arrivals at multiples of the accelerator-only capacity (its max "
           "concurrency / SLO), and bursts (4x the rate for part of each period, same mean), at the fine-tuned "
           "depths, without and with CPU offload. Latency counts from each request's intended send time (no "
           "coordinated omission; HDR histogram). Goodput = answers within the SLO per second. Admission: "
           f"{_admission(ol)}. {acc_words} The CPU instance is measured.")
    return plotting.save(fig, out_png, cap)


@FIGURES.figure("utilisation_cost", records=("serving",), title="CPU utilisation with and without offload; cost saving")
def utilisation_cost(inputs, out_png):
    df = _read(inputs, "serving")
    fig, (a, b) = _start(2, w=5.0)
    ut = df[df.kind == "util"]
    src, acc_words = _acc(None, df)
    col = plotting.colors(["accelerator_only", "offload", "eq. 6 (deploy for peak)", "eq. 5 (deploy for average)"])
    if ut.empty:
        plotting.not_run(a, "no utilisation rows")
    else:
        cfgs = [c for c in ("accelerator_only", "offload") if c in set(ut.config)]
        for i, cfg in enumerate(cfgs):
            share = ut[ut.config == cfg].service_cores / ut[ut.config == cfg].machine_cores * 100
            a.bar(i, share.median(), 0.6, color=col[cfg], label=plotting.label_source(cfg.replace("_", " "), src))
            a.plot(np.full(len(share), i), share, "o", color="k", ms=3)
        a.plot([0, 1], [v * 100 for v in PV.CPU_UTIL["bge"]], **{**plotting.PAPER_STYLE, "marker": "D", "markersize": 7, "label": "paper (bge)"})
        a.set(xticks=range(len(cfgs)), xticklabels=[c.replace("_", " ") for c in cfgs],
              ylabel="service CPU use (% of all cores)", title="(a) CPU utilisation at max concurrency")
    gt = gains(df)
    if gt.empty:
        plotting.not_run(b, "no max-concurrency rows")
    else:
        slos = sorted(gt.slo_s.unique())
        x = np.arange(len(gt))
        ccol = col
        peak = gt.cpu_part / (gt.cpu_part + gt.acc_part)
        avg = gt.cpu_part / gt.acc_part
        b.bar(x - 0.2, peak * 100, 0.38, color=ccol["eq. 6 (deploy for peak)"], label="ours: eq. 6 (deploy for peak)")
        b.bar(x + 0.2, avg * 100, 0.38, color=ccol["eq. 5 (deploy for average)"], label="ours: eq. 5 (deploy for average)")
        for i, r in gt.iterrows():
            acc, cpu = PV.TABLE_I[(r.pair, _rank(r.slo_s, slos))]
            b.plot(i - 0.2, cpu / (cpu + acc) * 100, **{**plotting.PAPER_STYLE, "label": "paper Table I, same equations"})
            b.plot(i + 0.2, cpu / acc * 100, **plotting.PAPER_STYLE)
        b.set(xticks=x, xticklabels=[f"{p}\n{s:g} s" for p, s in zip(gt.pair, gt.slo_s)], ylabel="cost saving (%)",
              title="(b) deployment-cost saving (Sec. III-B)")
    plotting.legend_below(fig, ncol=3)
    cap = ("(a) CPU use of the service process (CPU seconds / wall seconds / cores) over closed-loop rounds at the "
           "fine-tuned max concurrency, accelerator only vs with offload (paper, bge: average CPU utilisation 8% -> "
           "80%). (b) Deployment-cost saving computed from our measured concurrencies: deploying for peak load "
           "(equation 6) saves C_CPU/(C_CPU+C_acc), deploying for average load (equation 5) up to C_CPU/C_acc; the "
           "paper's markers apply the same equations to its Table I (18.6% and 22.3% for V100 + Xeon, 2 s). "
           + acc_words)
    return plotting.save(fig, out_png, cap)


@FIGURES.figure("service", records=("serving",), title="The service: overhead, overload, queue manager time")
def service(inputs, out_png):
    df = _read(inputs, "serving")
    fig, (a, b, c, d) = _start(4, w=3.7)
    oh = df[(df.kind == "overhead") & (df.phase == "measured")]
    col = plotting.colors(["bare_model", "service"])
    for i, m in enumerate(("bare_model", "service")):
        v = oh[oh["mode"] == m].throughput
        a.bar(i, v.median(), 0.6, yerr=[[v.median() - v.min()], [v.max() - v.median()]], color=col[m])
        a.plot(np.full(len(v), i), v, "o", color="k", ms=3)
    a.set(xticks=[0, 1], xticklabels=["bare model", "service (HTTP)"], ylabel="passages / s",
          title="(a) CPU: service vs bare model")
    ov = df[df.kind == "overload"]
    if ov.empty:
        for ax in (b, c, d):
            plotting.not_run(ax, "no overload rows")
    else:
        acc = labels.device(df)
        outcome = np.where(ov.status == 200, "200 " + ov.device.astype(str), np.where(ov.status == 429, "429", "lost"))
        counts = pd.Series(outcome).value_counts().reindex([f"200 {acc}", "200 cpu", "429", "lost"], fill_value=0)
        b.bar(range(len(counts)), counts.values, color=plotting.colors(counts.index).values())
        rounds = int(ov["round"].nunique()) if "round" in ov else 1
        b.set(xticks=range(len(counts)), xticklabels=[f"200 acc\n({acc})", "200 CPU", "429", "lost"],
              ylabel=f"requests, {rounds} round(s) summed",
              title=f"(b) {int(ov.sent.iloc[0])} at once per round\n(3x max concurrency)")
        lat = np.sort(ov[ov.status == 200].latency_s.to_numpy())
        c.plot(lat, np.arange(1, len(lat) + 1) / len(lat), "-", label="accepted: served (client side)")
        if "predicted_s" in ov and ov[ov.status == 200].predicted_s.notna().any():
            pr = np.sort(ov[ov.status == 200].predicted_s.dropna().to_numpy())
            c.plot(pr, np.arange(1, len(pr) + 1) / len(pr), "--", label="accepted: predicted at admission")
        c.axvline(ov.slo_s.iloc[0], ls=":", color="0.4")
        late = float((lat > ov.slo_s.iloc[0]).mean()) if len(lat) else 0.0
        c.set(xlabel="latency (s)", ylabel="ECDF",
              title=f"(c) accepted, SLO {ov.slo_s.iloc[0]:g} s: {100 * late:.0f}% over it (client side)")
        disp = np.sort(ov.dispatch_us.dropna().to_numpy())   # an ECDF: no bars on the log axis
        d.plot(disp, np.arange(1, len(disp) + 1) / max(len(disp), 1), "-", marker=".", ms=3,
               color=plotting.colors(["ours"])["ours"], label="ours: queue manager time")
        d.axvline(PV.DISPATCH_MS * 1000, **{k: v for k, v in plotting.PAPER_STYLE.items()
                                             if k in ("color",)}, ls="--", label="paper bound: 0.1 ms")
        d.set(xlabel="decision time per request (µs)", ylabel="ECDF", title="(d) Algorithm 1's own time",
              xscale="log")
        d.set_xlim(left=min(1.0, float(disp.min())) if len(disp) else 1.0, right=PV.DISPATCH_MS * 1000 * 2)
        d.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
        d.xaxis.set_minor_formatter(plt.NullFormatter())
    plotting.legend_below(fig, ncol=3)
    cap = ("The service itself. (a) Batch throughput of the CPU-only service over HTTP against the bare model on the "
           "same cores and threads (repeats interleaved; dots are repeats). (b, c) Overload: 3x the fine-tuned max "
           f"concurrency sent at once, admission: {_admission(ov) if len(ov) else 'none'}; each answer is an "
           "embedding (checked against the model's own) or a 429 with Retry-After; (c) the accepted requests' "
           "latency against the SLO, with the share over it in the title (and, with deadline admission, the latency predicted when each was admitted). "
           f"(d) The queue manager's decision time per request against the paper's bound. {_acc(None, df)[1]} "
           "The CPU instance is measured.")
    return plotting.save(fig, out_png, cap)

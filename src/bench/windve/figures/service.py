"""Beyond WindVE's figures: the open-loop load (goodput, p50/p99, shares), the CPU utilisation with and
without offload (Section V-B's 8% -> 80%) with the deployment-cost saving (equations 5/6, Section
III-B), and the service itself (overhead against the bare model, the 3x overload case, the queue
manager's decision time against the paper's 0.1 ms)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...core import plotting
from ...core.figures import figure
from .. import analysis
from .. import paper_values as PV
from .labels import H, admission, source_words


@figure("openloop", records=("serving",), title="Beyond the paper: open-loop goodput, latency and shares")
def openloop(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["serving"]
    ol = df[df.kind == "openloop"] if "kind" in df else df.iloc[:0]
    fig, (a, b, c) = plotting.start(3, w=4.4, h=H)
    if ol.empty:
        for ax in (a, b, c):
            plotting.not_run(ax, "no open-loop rows")
        return plotting.save(fig, out_png, "Open loop: not run.")
    configs = ["accelerator_only", "offload"]
    col = plotting.colors(configs)
    src, acc_words = source_words(None, ol)
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
           f"{admission(ol)}. {acc_words} The CPU instance is measured.")
    return plotting.save(fig, out_png, cap)


@figure("utilisation_cost", records=("serving",), title="CPU utilisation with and without offload; cost saving")
def utilisation_cost(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["serving"]
    fig, (a, b) = plotting.start(2, w=5.0, h=H)
    ut = df[df.kind == "util"]
    src, acc_words = source_words(None, df)
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
    gt = analysis.gains(df)
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
            acc, cpu = PV.TABLE_I[(r.pair, analysis.rank(r.slo_s, slos))]
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


@figure("service", records=("serving",), title="The service: overhead, overload, queue manager time")
def service(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["serving"]
    fig, (a, b, c, d) = plotting.start(4, w=3.7, h=H)
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
        acc = analysis.device(df)
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
           f"concurrency sent at once, admission: {admission(ov) if len(ov) else 'none'}; each answer is an "
           "embedding (checked against the model's own) or a 429 with Retry-After; (c) the accepted requests' "
           "latency against the SLO, with the share over it in the title (and, with deadline admission, the latency predicted when each was admitted). "
           f"(d) The queue manager's decision time per request against the paper's bound. {source_words(None, df)[1]} "
           "The CPU instance is measured.")
    return plotting.save(fig, out_png, cap)

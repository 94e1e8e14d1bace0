"""Beyond WindVE's figures: the open-loop load (goodput, p50/p99, shares), the CPU utilisation with and
without offload (Section V-B's 8% -> 80%) with the deployment-cost saving (equations 5/6, Section
III-B), and the service itself (overhead against the bare model, the 3x overload case, the queue
manager's decision time against the paper's 0.1 ms)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis
from .. import paper_values as PV
from .labels import H, admission, config_label, pair_words, source_words, whiskers

P = plotting.COLORBLIND
# openloop: (a)/(b) colour the configurations, (c) the device groups' shares: no colour in both
OPENLOOP_CFG = {"accelerator_only": P[0], "offload": P[1]}
SHARE_COL = {"accelerator": P[2], "CPU": P[3], "refused (429)": P[4], "lost": P[8]}
# service: one colour per thing across its four panels
# (the palette's near pairs, orange/vermillion, blue/sky blue, pink/light pink, are never both used here)
SERVICE_COL = {"bare model": P[0], "service (HTTP)": P[1], "200 accelerator": P[2], "200 CPU": P[3],
               "429": P[4], "lost": P[8], "served": "#6a3d9a", "predicted": P[5], "queue manager": "#a50f15"}
DOTS = {"marker": "o", "ms": 4, "mfc": "white", "mec": "0.45", "mew": 1.0, "ls": "none", "zorder": 4}


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
    col = OPENLOOP_CFG
    src, acc_words = source_words(None, ol)
    for cfg in configs:
        g = ol[(ol.config == cfg) & (ol.arrivals == "poisson")].sort_values("offered_rps")
        bu = ol[(ol.config == cfg) & (ol.arrivals == "bursty")]
        a.plot(g.offered_rps, g.goodput_rps, "o-", color=col[cfg], label=config_label(cfg, src))
        if len(bu):
            a.plot(bu.offered_rps, bu.goodput_rps, "D", color=col[cfg], mfc="none",
                   label=f"{cfg.replace('_', ' ')}: bursts")
        b.plot(g.offered_rps, g.p50_s, "o--", color=col[cfg], label=f"{cfg.replace('_', ' ')}: p50")
        b.plot(g.offered_rps, g["p99_s"], "s-", color=col[cfg], label=f"{cfg.replace('_', ' ')}: p99")
    slo = ol.slo_s.iloc[0]
    lim = ol.offered_rps.max() * 1.05
    a.plot([0, lim], [0, lim], ":", color="0.6", label="goodput = offered")
    b.axhline(slo, ls=":", color="0.4", lw=0.8, label=f"SLO ({slo:g} s)")
    a.set(xlabel="offered load (requests/s)", ylabel="goodput (answers within SLO per s)", title="(a) goodput")
    b.set(xlabel="offered load (requests/s)", ylabel="latency from intended send (s)", title=f"(b) p50 / p99, SLO {slo:g} s",
          yscale="log")
    shares = ol.sort_values(["arrivals", "config", "offered_rps"], ascending=[False, True, True])
    x = np.arange(len(shares))
    bottom = np.zeros(len(shares))
    for key, name in (("share_accelerator", "accelerator"), ("share_cpu", "CPU"), ("share_refused", "refused (429)"),
                      ("share_lost", "lost")):
        v = shares[key].fillna(0).to_numpy(dtype=float) if key in shares else np.zeros(len(shares))
        if not v.any():   # nothing drawn: no bar and no legend entry
            continue
        c.bar(x, v, bottom=bottom, color=SHARE_COL[name], label=f"share answered by the {name}"
              if name in ("accelerator", "CPU") else f"share {name}")
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
           f"{admission(ol)}. {acc_words} The CPU instance is measured"
           + (": in the offload line only the accelerator is emulated, the CPU's part is measured. " if src == "emulated"
              else ". ")
           + "(a) and (b) colour the configurations; (c) colours the device groups that answered (its own colours), "
           "shares with no request are not drawn.")
    return plotting.save(fig, out_png, cap)


@figure("utilisation_cost", records=("serving",), title="CPU utilisation with and without offload; cost saving",
        claims=("throughput-1.22x", "cost-saving-18.6", "cpu-utilisation-rises"))
def utilisation_cost(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["serving"]
    fig, (a, b) = plotting.start(2, w=5.0, h=H)
    src, acc_words = source_words(None, df)
    col = plotting.colors(["accelerator_only", "offload", "eq. 6 (deploy for peak)", "eq. 5 (deploy for average)"])
    shares = analysis.util_shares(df)
    if not shares:
        plotting.not_run(a, "no utilisation rows (the serving step's utilisation rounds did not run)")
    else:
        cfgs = list(shares)
        for i, cfg in enumerate(cfgs):
            share = shares[cfg] * 100
            a.bar(i, share.median(), 0.6, color=col[cfg], label=f"CPU use, {config_label(cfg, src)}")
            a.plot(np.full(len(share), i), share, **DOTS, label="ours: each round" + (
                " (measured)" if src == "measured" else " [accelerator emulated, CPU measured]"))
        a.plot(range(len(cfgs)), [PV.CPU_UTIL["bge"][["accelerator_only", "offload"].index(c)] * 100 for c in cfgs],
               **{**plotting.PAPER_STYLE, "marker": "D", "markersize": 7, "label": "paper (bge)"})
        a.set(xticks=range(len(cfgs)), xticklabels=[c.replace("_", " ") for c in cfgs],
              ylabel="service CPU use (% of all cores)", title="(a) CPU utilisation at max concurrency\n"
              "bar: median over rounds")
    gt = analysis.gains(df)
    dep = analysis.deployment(gt)
    if dep.empty:
        plotting.not_run(b, "no max-concurrency rows")
    else:
        slos = sorted(dep.slo_s.unique())
        x = np.arange(len(dep))
        for off, key, name in ((-0.2, "save_peak", "eq. 6 (deploy for peak)"), (0.2, "save_avg", "eq. 5 (deploy for average)")):
            b.bar(x + off, dep[key] * 100, 0.38, color=col[name], label=plotting.label_source(f"ours: {name}", src))
            whiskers(b, x + off, dep[key] * 100, dep[f"{key}_low"] * 100, dep[f"{key}_high"] * 100)
        for i, r in dep.iterrows():
            p_avg, p_peak = analysis.paper_savings(r.pair, analysis.rank(r.slo_s, slos))
            b.plot(i - 0.2, p_peak * 100, **{**plotting.PAPER_STYLE, "label": "paper Table I, same equations"})
            b.plot(i + 0.2, p_avg * 100, **plotting.PAPER_STYLE)
        b.set(xticks=x, xticklabels=[f"{pair_words(p)}\n{s:g} s (paper {analysis.rank(s, slos)} s)"
                                     for p, s in zip(dep.pair, dep.slo_s)],
              ylabel="cost saving (%)", title="(b) deployment-cost saving (Sec. III-B)")
        b.set_ylim(bottom=0)
    plotting.legend_below(fig, ncol=3)
    p_avg, p_peak = analysis.paper_savings("v100-xeon", 2)
    cap = ("(a) CPU use of the service process (CPU seconds / wall seconds / cores), measured over closed-loop rounds "
           "at the fine-tuned max concurrency, accelerator only vs with offload: bars are the median over rounds, the "
           "hollow dots each round; paper diamonds: bge's average CPU utilisation 8% -> 80%. (b) Deployment-cost "
           "saving from our fine-tuned concurrencies, with A the accelerator's concurrency alone and C what offload to "
           "the CPU adds on top: deploying for peak load (equation 6) saves C/(A+C), deploying "
           "for average load (equation 5) up to C/A (the concurrency gain; throughput = 1 + that); whiskers "
           "from the rounds' bounds (every round met .. any round met), 'no interval' where no level met the SLO in "
           "every round. The ledger's cost-saving (18.6%) and throughput (1.22x) rows are these bars at the loosest SLO "
           "(one function, analysis.deployment). The paper's markers apply the same equations to its Table I "
           f"({p_peak:.1%} and {p_avg:.1%} for V100 + Xeon, 2 s; its text gives 18.6% and 22.3%). " + acc_words)
    return plotting.save(fig, out_png, cap)


def _overhead_panel(a, oh: pd.DataFrame) -> None:
    """(a) the CPU-only service over HTTP against the bare model: median bar, min..max whisker, each repeat."""
    if oh.empty:
        plotting.not_run(a, "no overhead rows (the service-vs-bare-model check did not run)")
        return
    n_rep = 0
    for i, (m, name) in enumerate((("bare_model", "bare model"), ("service", "service (HTTP)"))):
        v = oh[oh["mode"] == m].throughput
        n_rep = max(n_rep, len(v))
        a.bar(i, v.median(), 0.6, yerr=[[v.median() - v.min()], [v.max() - v.median()]], color=SERVICE_COL[name],
              ecolor="0.3", capsize=3, label=f"{name}: median")
        a.plot(np.full(len(v), i), v, **DOTS, label="each repeat")
    a.set(xticks=[0, 1], xticklabels=["bare model", "service (HTTP)"], ylabel="passages / s",
          title=f"(a) CPU: service vs bare model\nbar: median of {n_rep} repeats, whisker: min .. max")


@figure("service", records=("serving",), title="The service: overhead, overload, queue manager time",
        claims=("dispatch-under-0.1ms", "target-service-90pct", "target-overload-answers", "target-overload-p99"))
def service(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["serving"]
    fig, (a, b, c, d) = plotting.start(4, w=3.7, h=H)
    col = SERVICE_COL
    _overhead_panel(a, df[(df.kind == "overhead") & (df.phase == "measured")])
    ov = df[df.kind == "overload"]
    if ov.empty:
        for ax in (b, c, d):
            plotting.not_run(ax, "no overload rows")
    else:
        acc = analysis.device(df)
        tag = " [accelerator emulated, CPU measured]" if source_words(None, ov)[0] == "emulated" else ""
        outcome = np.where(ov.status == 200, "200 " + ov.device.astype(str), np.where(ov.status == 429, "429", "lost"))
        keys = [f"200 {acc}", "200 cpu", "429", "lost"]
        names = ["200 accelerator", "200 CPU", "429", "lost"]
        counts = pd.Series(outcome).value_counts().reindex(keys, fill_value=0)
        b.bar(range(len(counts)), counts.values, color=[col[n] for n in names])
        rounds = int(ov["round"].nunique()) if "round" in ov else 1
        b.set(xticks=range(len(counts)), xticklabels=[f"200 acc\n({acc})", "200 CPU", "429", "lost"],
              ylabel=f"requests, {rounds} round(s) summed",
              title=f"(b) {int(ov.sent.iloc[0])} at once per round\n(3x max concurrency)"
                    + tag.replace(", CPU measured", "").replace(" [", "\n["))
        lat = np.sort(ov[ov.status == 200].latency_s.to_numpy())
        c.plot(lat, np.arange(1, len(lat) + 1) / len(lat), "-", color=col["served"],
               label="accepted: served (client side)" + tag)
        if "predicted_s" in ov and ov[ov.status == 200].predicted_s.notna().any():
            pr = np.sort(ov[ov.status == 200].predicted_s.dropna().to_numpy())
            c.plot(pr, np.arange(1, len(pr) + 1) / len(pr), "--", color=col["predicted"],
                   label="accepted: predicted at admission")
        c.axvline(ov.slo_s.iloc[0], ls=":", color="0.4", label=f"SLO ({ov.slo_s.iloc[0]:g} s)")
        late = float((lat > ov.slo_s.iloc[0]).mean()) if len(lat) else 0.0
        c.set(xlabel="latency (s)", ylabel="ECDF",
              title=f"(c) accepted, SLO {ov.slo_s.iloc[0]:g} s: {100 * late:.0f}% over it (client side)")
        disp = np.sort(ov.dispatch_us.dropna().to_numpy())   # an ECDF: no bars on the log axis
        d.plot(disp, np.arange(1, len(disp) + 1) / max(len(disp), 1), "-", marker=".", ms=3,
               color=col["queue manager"], label="ours: queue manager time")
        d.axvline(PV.DISPATCH_MS * 1000, **{k: v for k, v in plotting.PAPER_STYLE.items()
                                             if k in ("color",)}, ls="--", label="paper bound: 0.1 ms")
        d.set(xlabel="decision time per request (µs)", ylabel="ECDF", title="(d) Algorithm 1's own time",
              xscale="log")
        d.set_xlim(left=min(1.0, float(disp.min())) if len(disp) else 1.0, right=PV.DISPATCH_MS * 1000 * 2)
        d.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
        d.xaxis.set_minor_formatter(plt.NullFormatter())
    plotting.legend_below(fig, ncol=3)
    cap = ("The service itself; every colour stands for one thing across the panels. (a) Batch throughput of the "
           "CPU-only service over HTTP against the bare model on the same cores and threads (repeats interleaved): "
           "bars the median over repeats, whiskers min .. max, hollow dots each repeat. (b, c) Overload: 3x the fine-tuned max "
           f"concurrency sent at once, admission: {admission(ov) if len(ov) else 'none'}; each answer is an "
           "embedding (checked against the model's own) or a 429 with Retry-After; (c) the accepted requests' "
           "latency against the SLO, with the share over it in the title (and, with deadline admission, the latency predicted when each was admitted). "
           f"(d) The queue manager's decision time per request against the paper's bound. {source_words(None, df)[1]} "
           "The CPU instance is measured.")
    return plotting.save(fig, out_png, cap)

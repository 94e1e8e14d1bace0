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
from ...core.judging import intervals
from .. import analysis, gains
from .. import paper_values as PV
from ..rows import service as rows
from .labels import H, admission, config_label, pair_label, source_words, whiskers

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


def _util_panel(a, df: pd.DataFrame, src: str, col: dict) -> None:
    """(a) what cpu-utilisation-rises judges: the service process's CPU over wall time and all the machine's
    cores, the mean with the row's interval (bootstrap over fresh service processes), each round a dot; the
    paper's 8% -> 80%; the CPU instance's share of the cores (the row's premise) dashed."""
    ut = df[df.kind == "util"] if "kind" in df else df.iloc[:0]
    if ut.empty:
        plotting.not_run(a, "no utilisation rows (the serving step's utilisation rounds did not run)")
        return
    ut = ut.assign(process=ut["process"] if "process" in ut else 0)
    cfgs = [c for c in ("accelerator_only", "offload") if (ut.config == c).any()]
    for i, cfg in enumerate(cfgs):
        g = ut[ut.config == cfg]
        share = (g.service_cores / g.machine_cores).to_numpy(float) * 100
        e = intervals.bootstrap_ci(share, stat=np.mean, groups=intervals.process_of(g))
        a.bar(i, e[0], 0.6, color=col[cfg], label=f"mean CPU use, {config_label(cfg, src)}")
        whiskers(a, [i], [e[0]], [e[1]], [e[2]])
        a.plot(np.full(len(share), i), share, **DOTS, label="each round")
    paper = [PV.CPU_UTIL["bge"][["accelerator_only", "offload"].index(c)] * 100 for c in cfgs]
    plotting.paper_marks(a, range(len(cfgs)), paper, "paper (bge): 8% -> 80%", marker="D", markersize=7)
    cores = int(ut.machine_cores.iloc[0])
    inst = len(str(ut.cpu_instance_cores.dropna().iloc[0]).split(",")) if "cpu_instance_cores" in ut and \
        ut.cpu_instance_cores.notna().any() else cores
    a.axhline(100 * inst / cores, ls="--", color="0.35", lw=1,
              label=f"CPU instance's share of the cores ({inst} of {cores}: the row's premise)")
    a.set(xticks=range(len(cfgs)), xticklabels=[c.replace("_", " ") for c in cfgs], ylim=(0, 105),
          ylabel="service CPU use (% of all cores)", title="(a) CPU utilisation at max concurrency\n"
          "bar: mean, whisker: the ledger's interval")


def _cost_panel(b, df: pd.DataFrame, src: str, col: dict) -> None:
    """(b) the deployment-cost savings of equations 5/6 from the fine-tuned concurrencies (the ledger's
    throughput and cost rows at the loosest SLO), with the gain's interval; the paper's Table I the same way."""
    dep = gains.deployment(gains.gains(df))
    if dep.empty:
        plotting.not_run(b, "no max-concurrency rows")
        return
    slos = sorted(dep.slo_s.unique())
    x = np.arange(len(dep))
    for off, key, name in ((-0.2, "save_peak", "eq. 6 (deploy for peak)"), (0.2, "save_avg", "eq. 5 (deploy for average)")):
        b.bar(x + off, dep[key] * 100, 0.38, color=col[name], label=plotting.label_source(f"ours: {name}", src))
        whiskers(b, x + off, dep[key] * 100, dep[f"{key}_low"] * 100, dep[f"{key}_high"] * 100)
    for i, r in dep.iterrows():
        p_avg, p_peak = gains.paper_savings(r.pair, analysis.rank(r.slo_s, slos))
        plotting.paper_marks(b, [i - 0.2, i + 0.2], [p_peak * 100, p_avg * 100], "paper Table I, same equations")
    b.set(xticks=x, xticklabels=[f"{pair_label(p, src)}\n{s:g} s (paper {analysis.rank(s, slos)} s)"
                                 for p, s in zip(dep.pair, dep.slo_s)],
          ylabel="cost saving (%)", title="(b) deployment-cost saving (Sec. III-B)")
    lows = dep[["save_peak_low", "save_avg_low"]].to_numpy(float) * 100
    b.set_ylim(bottom=min(0.0, float(np.nanmin(lows)) - 5) if np.isfinite(lows).any() else 0)


@figure("utilisation_cost", records=("serving",), title="CPU utilisation with and without offload; cost saving",
        claims=("throughput-1.22x", "cost-saving-18.6", "cpu-utilisation-rises"))
def utilisation_cost(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["serving"]
    fig, (a, b) = plotting.start(2, w=5.0, h=H)
    src, acc_words = source_words(None, df)
    col = plotting.colors(["accelerator_only", "offload", "eq. 6 (deploy for peak)", "eq. 5 (deploy for average)"])
    _util_panel(a, df, src, col)
    _cost_panel(b, df, src, col)
    plotting.legend_below(fig, ncol=3)
    p_avg, p_peak = gains.paper_savings("v100-xeon", 2)
    cap = ("(a) The paper: \"by applying CPU offloading, the average CPU utilization rises from 8% to 80%\" (Section "
           "V-B, bge). Ours, as the ledger's cpu-utilisation row judges it: the service process's CPU seconds over the "
           "round's wall time and all of this machine's cores, in closed-loop rounds at the fine-tuned max concurrency, "
           "accelerator only vs with offload; bars the mean, whiskers the row's interval (bootstrap resampling the "
           "fresh service processes first), hollow dots each round; dashed: the share of the cores the CPU instance "
           "may use, the most its work can reach (the row's premise asks for at least 80%). (b) Deployment-cost "
           "saving from our fine-tuned concurrencies, with A the accelerator's concurrency alone and C what offload to "
           "the CPU adds on top: deploying for peak load (equation 6) saves C/(A+C), deploying for average load "
           "(equation 5) up to C/A (the concurrency gain; throughput = 1 + that); whiskers the gain's interval (the "
           "Tables I/II rows'). The ledger's cost-saving (18.6%) and throughput (1.22x) rows are these bars at the "
           "loosest SLO (one function, gains.deployment). The paper's markers apply the same equations to its Table I "
           f"({p_peak:.1%} and {p_avg:.1%} for V100 + Xeon, 2 s; its text gives 18.6% and 22.3%). " + acc_words
           + (" With the accelerator emulated, (b)'s concurrencies are set by the paper's ratios: sanity checks in the "
              "ledger, never judged; (a) is the CPU's own work (each round lasts about the SLO whatever the "
              "accelerator's law)." if src == "emulated" else ""))
    return plotting.save(fig, out_png, cap)


def _share_panel(a, oh: pd.DataFrame, target: float) -> None:
    """(a) what target-service-90pct judges: each measured pair's ratio (service throughput / the bare model's
    just before it) per fresh service process of both steps, and the row's median with its interval."""
    if oh.empty or "ratio" not in oh:
        plotting.not_run(a, "no overhead pairs (the service-vs-bare-model check did not run)")
        return
    sv = oh[oh["mode"] == "service"]
    keys = list(sv.groupby(["service_process", "process"]).groups)
    for i, key in enumerate(keys):
        g = sv[(sv.service_process == key[0]) & (sv.process == key[1])]
        a.plot(np.full(len(g), i), g.ratio, **DOTS, label="each paired repeat")
    e = rows.share_median(sv)
    a.axhspan(e[1], e[2], color=SERVICE_COL["service (HTTP)"], alpha=0.25, lw=0,
              label=f"median over all {e[0]:.3f}, the ledger's interval ({e.clusters} processes)")
    a.axhline(e[0], color=SERVICE_COL["service (HTTP)"], lw=1.5)
    a.axhline(target, ls=":", color="0.3", label=f"target {target:g}")
    a.set(xticks=range(len(keys)), xticklabels=[f"{st}\n#{k}" for st, k in keys],
          ylabel="service / bare model (throughput)", title="(a) CPU: service vs bare model\n"
          "paired ratios per fresh service process")
    a.tick_params(axis="x", labelsize="x-small")


def _overload_panels(b, c, df: pd.DataFrame, ov: pd.DataFrame) -> None:
    """(b) the answers to 3x the max concurrency at once; (c) what target-overload-p99 judges: the accepted
    requests' latency (client side) with the row's p99 and interval, the service's own time and the admission's
    prediction beside it."""
    col = SERVICE_COL
    acc = analysis.device(df)
    emulated = source_words(None, ov)[0] == "emulated"
    tag = " [accelerator emulated, CPU measured]" if emulated else ""
    outcome = np.where(ov.status == 200, "200 " + ov.device.astype(str), np.where(ov.status == 429, "429", "lost"))
    keys, names = [f"200 {acc}", "200 cpu", "429", "lost"], ["200 accelerator", "200 CPU", "429", "lost"]
    counts = pd.Series(outcome).value_counts().reindex(keys, fill_value=0)
    b.bar(range(len(counts)), counts.values, color=[col[n] for n in names])
    procs = int(ov.process.nunique()) if "process" in ov else 1
    b.set(xticks=range(len(counts)), xticklabels=[f"200 acc\n({acc})", "200 CPU", "429", "lost"],
          ylabel=f"requests, {procs} fresh processes summed",
          title=f"(b) {int(ov.sent.iloc[0])} at once per round\n(3x max concurrency)" + tag.replace(", CPU measured", "")
          .replace(" [", "\n["))
    slo = float(ov.slo_s.iloc[0])
    judged = rows.judged_overload(ov, emulated)
    for part, style, name in ((judged, "-", "judged: " + ("the CPU's answers" if emulated else "every answer")),
                              (ov[(ov.status == 200) & (ov.device != "cpu")] if emulated else ov.iloc[:0], ":",
                               "the emulated accelerator's answers (not judged)")):
        lat = np.sort(part.latency_s.to_numpy())
        if len(lat):
            c.plot(lat, np.arange(1, len(lat) + 1) / len(lat), style, color=col["served"], label=f"{name}, client side")
    for key, style, colour, name in (("service_s", "-.", col["served"], "in the service (arrival to response)"),
                                     ("predicted_batch_s", "-", col["predicted"], "their batch as predicted"),
                                     ("predicted_s", "--", col["predicted"], "predicted at their own admission")):
        v = np.sort(judged[key].dropna().to_numpy()) if key in judged else np.array([])
        if len(v):
            c.plot(v, np.arange(1, len(v) + 1) / len(v), style, color=colour, label=f"{name} (judged answers)")
    e = rows.p99(judged)
    if np.isfinite(e[0]):
        c.errorbar([e[0]], [0.99], xerr=[[e[0] - e[1]], [e[2] - e[0]]] if np.isfinite(e[1]) else None, fmt="s",
                   color=col["served"], capsize=3, label=f"the ledger's p99 and interval ({e.clusters} processes)")
    c.axvline(slo, ls="-", lw=1.2, color="0.15", label=f"SLO ({slo:g} s)")
    c.set(xlabel="latency (s)", ylabel="ECDF", title=f"(c) accepted requests, SLO {slo:g} s")


def _dispatch_panel(d, disp: pd.DataFrame) -> None:
    """(d) what dispatch-under-0.1ms judges: every decision the queue manager timed, per workload (both steps'
    fresh service processes), as an ECDF, with the judged mean and its interval, and the p99 beside it."""
    if disp.empty:
        plotting.not_run(d, "no decision rows (the service recorded no decision times)")
        return
    cols = {"profile": P[7], "serving": SERVICE_COL["queue manager"]}
    for step, g in disp.groupby("workload"):
        us = np.sort(g.dispatch_us.dropna().to_numpy())
        d.plot(us, np.arange(1, len(us) + 1) / len(us), "-", color=cols[step],
               label=f"{rows.WORKLOAD[step]}: {len(us)} decisions")
        e = rows.dispatch_mean(g)
        d.errorbar([e[0] * 1000], [0.5], xerr=[[(e[0] - e[1]) * 1000], [(e[2] - e[0]) * 1000]], fmt="o",
                   color=cols[step], capsize=3, label=f"{rows.WORKLOAD[step].split(' (')[0]}: judged mean "
                   f"{e[0] * 1000:.0f} µs and interval")
        d.plot([np.quantile(us, 0.99)], [0.99], "v", color=cols[step], ms=7, mfc="white",
               label=f"{rows.WORKLOAD[step].split(' (')[0]}: p99 (shown, not judged)")
    d.axvline(PV.DISPATCH_MS * 1000, color=plotting.PAPER_COLOR, ls="--", label="paper: less than 0.1 ms (an average)")
    d.set(xlabel="decision time per request (µs)", ylabel="ECDF", title="(d) Algorithm 1's own time", xscale="log")
    d.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    d.xaxis.set_minor_formatter(plt.NullFormatter())


@figure("service", records=("serving", "profile"), title="The service: overhead, overload, queue manager time",
        claims=("dispatch-under-0.1ms", "target-service-90pct", "target-overload-answers", "target-overload-p99"))
def service(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df, prof = data["serving"], data["profile"]
    fig, (a, b, c, d) = plotting.start(4, w=3.9, h=H + 0.6)
    _share_panel(a, rows.overhead_rows(prof, df), 0.9)
    ov = df[df.kind == "overload"] if "kind" in df else df.iloc[:0]
    ov = ov.assign(process=ov["process"] if "process" in ov else 0)
    if ov.empty:
        for ax in (b, c):
            plotting.not_run(ax, "no overload rows")
    else:
        _overload_panels(b, c, df, ov)
    _dispatch_panel(d, rows.dispatch_rows(prof, df))
    plotting.legend_below(fig, ncol=3)
    cap = ("The service itself; every colour stands for one thing across the panels, and each panel draws what its "
           "ledger row judges, over the fresh service processes of both steps. (a) target-service-90pct: each paired "
           "repeat's throughput ratio, the CPU-only service over HTTP against the bare model just before it on the "
           "same cores and threads, per fresh service process; band: the median and its interval (bootstrap "
           "resampling the processes first). (b, c) Overload: 3x the fine-tuned max concurrency sent at once, "
           f"admission: {admission(ov) if len(ov) else 'none'}; each answer an embedding (checked against the "
           "model's own) or a 429 with Retry-After; (c) the accepted requests' latency from the client's send, the "
           "service's own time (arrival to response built), the latency the admission predicted for each when it was "
           "admitted (requests admitted after it may still join its batch) and that of the batch it ran in (its last "
           "member's prediction), with the row's p99 and interval. (d) The paper: \"with a less than 0.1 ms overhead\" (Section V-B), naming no statistic (we "
           "judge the mean, the typical cost; read as every decision, the p99 would decide it): every "
           "decision of the queue manager (the paper's Algorithm 1, plus the deadline prediction our admission adds), its wall time, as an ECDF per "
           "workload, with the judged mean and its interval, and the p99 shown beside it. "
           f"{source_words(None, df)[1]} The CPU instance is measured.")
    return plotting.save(fig, out_png, cap)

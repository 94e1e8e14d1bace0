"""WindVE's ledger rows on the service itself (Section V-B): the CPU utilisation with offload (8% -> 80%), the
queue manager's overhead (< 0.1 ms), and the harness's targets (the service against the bare model, the 3x
overload, the embeddings). Every timed row's interval resamples the fresh service processes first
(:func:`bench.core.judging.intervals.process_of`: each step's processes, numbered in ``process``)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from bench.core.judging import claims, intervals
from bench.core.judging.fidelity import Definition

from .. import analysis
from .. import paper_values as PV
from .builder import Builder

UTIL = Definition("\"by applying CPU offloading, the average CPU utilization rises from 8% to 80%\" (bge; jina: 9% to 81%)",
                  "Section V-B", "the service process's CPU seconds over the round's wall time and all of this "
                  "machine's cores, the mean over closed-loop rounds at the fine-tuned max concurrency with offload")
DISPATCH = Definition("\"the best concurrency improvement of 22.3% is given by ... with a less than 0.1 ms overhead\"; "
                      "\"The overhead stays less than 0.1ms\"", "Section V-B",
                      "the mean wall time of the queue manager's decision per request (Algorithm 1 with the deadline "
                      "prediction), recorded by the service for every request it decided")
WORKLOAD = {"profile": "the profiling sweep (concurrency to overload)", "serving": "the serving run"}
INSTANCE_SHARE = 0.8


def quantile_ci(values, q: float = 0.99, level: float = 0.95) -> tuple[float, float, float]:
    """(estimate, low, high) of the ``q`` quantile of one sample: the distribution-free order-statistic
    interval (the count of values below the quantile is binomial(n, q)); NaN ends where ``n`` is too small.
    Shown beside the judged means (a within-sample interval: no run-to-run noise)."""
    from scipy.stats import binom

    a = np.sort(np.asarray(values, dtype=float))
    n = a.size
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    est = float(np.quantile(a, q))
    alpha = 1 - level
    lo_k = int(binom.ppf(alpha / 2, n, q))            # order statistics (1-based): P(k_lo <= B < k_hi) >= level
    hi_k = int(binom.ppf(1 - alpha / 2, n, q)) + 1
    lo = float(a[lo_k - 1]) if lo_k >= 1 else float("nan")
    hi = float(a[hi_k - 1]) if hi_k <= n else float("nan")
    return est, min(lo, est) if np.isfinite(lo) else lo, max(hi, est) if np.isfinite(hi) else hi


def _proc(df: pd.DataFrame) -> pd.DataFrame:
    return df if "process" in df else df.assign(process=0)


def _step_busy(df: pd.DataFrame) -> bool:
    return bool(df["machine_busy"].any()) if "machine_busy" in df else False


def utilisation(b: Builder) -> None:
    """cpu-utilisation-rises: the paper's average CPU utilisation (of the server's CPUs) with offload, over
    fresh service processes; the CPU instance's share of the cores is a premise (a configuration whose
    instance may use half the cores cannot reach 80%). The accelerator beside the CPU only sets how long each
    closed round lasts, which fine-tuning holds at about the SLO whatever its law: the value is free of the
    emulated accelerator's paper inputs (the sensitivity test on the synthetic records shows it), so a CPU is
    all it needs."""
    ut = _proc(b.serv[b.serv.kind == "util"]) if "kind" in b.serv else b.serv.iloc[:0]
    on, off = (ut[ut.config == c] for c in ("offload", "accelerator_only"))
    if on.empty:
        return
    share = on.service_cores / on.machine_cores
    e = intervals.bootstrap_ci(share.to_numpy(float), stat=np.mean, groups=intervals.process_of(on))
    paper_off, paper_on = PV.CPU_UTIL["bge"]
    without = (f"without offload {float((off.service_cores / off.machine_cores).mean()):.0%} (paper {paper_off:.0%})"
               if len(off) else "no run without offload")
    prem = claims.premise("the CPU instance may use at least 80% of the machine's cores", b.inst / b.cores,
                          INSTANCE_SHARE, ">=", what="its share of the cores", exact="the cores the service pins its "
                          "CPU instance to (its configuration)", paper="the paper's 80% is of the whole server's CPUs, "
                          "with the CPU instance on the cores not reserved for the accelerator's host work (V-A5: 1/4 "
                          "reserved on the Kunpeng)")
    b.add("cpu-utilisation-rises", "CPU utilisation rises from 8% to 80% with offload", "8% -> 80% (bge; jina 81%)",
          estimate=e, threshold=paper_on, unit="share of all cores", source="measured", premises=[prem], needs=(),
          definition=UTIL, quantity="average CPU utilisation with offload",
          interval=f"bootstrap of the mean over {e.clusters} fresh service processes (resampled first), then their rounds",
          reason=f"{len(on)} closed rounds at the fine-tuned max concurrency with offload: the service process's CPU "
                 f"time over wall time and all {b.cores} cores, {e[0]:.0%} (the CPU instance measured; each round lasts "
                 f"about the SLO, as the fine-tuned {'emulated' if b.emulated else 'measured'} accelerator's batch "
                 f"does, whatever its law); {without}; the CPU "
                 f"instance may use {b.inst} of {b.cores} cores; threshold: the paper's {paper_on:.0%} (bge; jina "
                 f"{PV.CPU_UTIL['jina'][1]:.0%})")


def dispatch_rows(prof: pd.DataFrame, serv: pd.DataFrame) -> pd.DataFrame:
    """Every decision the queue manager timed, of both steps' fresh service processes (``workload``: the step)."""
    parts = [_proc(df[df.kind == "dispatch"]).assign(workload=step)
             for step, df in (("profile", prof), ("serving", serv)) if "kind" in df and (df.kind == "dispatch").any()]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def dispatch_mean(g: pd.DataFrame) -> intervals.Estimate:
    """The mean decision wall time (ms) of one workload, bootstrapped over its fresh service processes first."""
    return intervals.bootstrap_ci(g.dispatch_us.to_numpy(float) / 1000.0, stat=np.mean, groups=intervals.process_of(g))


def dispatch(b: Builder) -> None:
    """dispatch-under-0.1ms: the mean decision time per request (the paper names no statistic; we read its
    overhead as the typical cost, and show the p99 and the share over 0.1 ms beside it), over the
    fresh service processes of each workload (the profiling sweep and the serving run: two configurations the
    claim covers, each judged); the p99 and the CPU time shown beside it."""
    d = dispatch_rows(b.prof, b.serv)
    if d.empty:
        return
    configs, beside, p99s = [], [], []
    for step, g in d.groupby("workload"):
        e = dispatch_mean(g)
        configs.append(claims.Config.of(f"{WORKLOAD[step]} ({e.clusters} fresh processes, {len(g)} decisions)", e,
                                        busy=_step_busy(b.prof if step == "profile" else b.serv)))
        p99 = quantile_ci(g.dispatch_us.dropna() / 1000.0)
        cpu = (f", CPU time mean {g.dispatch_cpu_us.mean() / 1000:.3g} ms" if "dispatch_cpu_us" in g
               and g.dispatch_cpu_us.notna().any() else "")
        over = float((g.dispatch_us.dropna() > PV.DISPATCH_MS * 1000.0).mean())
        p99s.append(p99[0])
        beside.append(f"{WORKLOAD[step]}: p99 {p99[0]:.3g} ms [{p99[1]:.3g}, {p99[2]:.3g}] (order statistic within "
                      f"the pooled decisions), {over:.1%} of decisions over {PV.DISPATCH_MS:g} ms{cpu}")
    worst, worst_max = max(p99s), float(d.dispatch_us.max()) / 1000.0
    b.add("dispatch-under-0.1ms", "the queue manager costs less than 0.1 ms per request", "< 0.1 ms",
          configs=configs, threshold=PV.DISPATCH_MS, direction="<=", unit="ms (mean)", source="measured", needs=(),
          definition=DISPATCH, quantity="queue manager decision time",
          interval="per workload, bootstrap of the mean resampling its fresh service processes first, then decisions",
          reason=f"the queue manager's decision per request (the paper's Algorithm 1, plus the deadline prediction "
                 f"our admission adds, which the paper's has not), recorded by the service for every request it "
                 f"decided, {len(d)} in {len(configs)} workloads; worst single decision {worst_max:.3g} ms. The paper "
                 f"says 'a less than 0.1 ms overhead' and 'the overhead stays less than 0.1ms' (section V-B) without "
                 f"saying what it timed or naming a statistic; we read it as the typical cost of the queue manager "
                 f"per request and judge the mean wall time. Read as 'every decision "
                 f"stays below', the p99 decides it, and the claim "
                 f"{'fails' if worst > PV.DISPATCH_MS else 'holds'} there (worst p99 {worst:.3g} ms). Beside it "
                 f"(not judged): {'; '.join(beside)}")


def overhead_rows(prof: pd.DataFrame, serv: pd.DataFrame) -> pd.DataFrame:
    """The measured bare-model / service pairs of both steps' fresh service processes (``service_process``:
    the step)."""
    parts = []
    for step, df in (("profile", prof), ("serving", serv)):
        if "kind" in df:
            oh = _proc(df[(df.kind == "overhead") & (df.phase == "measured")])
            if len(oh):
                parts.append(oh.assign(service_process=step))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def share_median(sv: pd.DataFrame) -> intervals.Estimate:
    """The median paired ratio, resampling the fresh service processes (of both steps) first, then pairs."""
    return intervals.bootstrap_ci(sv.ratio.to_numpy(float), stat=np.median,
                                  groups=intervals.process_of(sv, by=("service_process",)))


def judged_overload(ov: pd.DataFrame, emulated: bool) -> pd.DataFrame:
    """The accepted overload requests target-overload-p99 judges: the CPU's (measured) where the accelerator
    was emulated (its answers take the time its paper-set law says), every one with a real accelerator."""
    acc = ov[ov.status == 200]
    return acc[acc.device == "cpu"] if emulated else acc


def p99(judged: pd.DataFrame) -> intervals.Estimate:
    """The p99 latency (s, client side), bootstrapped over the fresh service processes first, then requests."""
    return intervals.bootstrap_ci(judged.latency_s.to_numpy(float),
                                  stat=lambda a, axis=None: np.percentile(a, 99, axis=axis),
                                  groups=intervals.process_of(judged))


def service_share(b: Builder) -> None:
    """target-service-90pct: the median of the paired ratios (each service round over the bare-model run just
    before it, interleaved), resampled by fresh service process first (each step's), then pairs."""
    oh = overhead_rows(b.prof, b.serv)
    if oh.empty:
        return
    sv = oh[oh["mode"] == "service"]
    e = share_median(sv)
    per = "; ".join(f"{step} process {k}: {np.median(g.ratio):.3f}" for (step, k), g in sv.groupby(["service_process",
                                                                                                   "process"]))
    b.add("target-service-90pct", "the service sustains >= 90% of the bare model's batch throughput (same cores)",
          ">= 0.9", estimate=e, threshold=b.p.targets.service_share, unit="x", source="measured", needs=(),
          scale=f"CPU instance, batch {int(oh.batch.iloc[0])}, {len(sv)} interleaved pairs in {e.clusters} fresh "
                "service processes (the profile's and the serving step's)",
          interval="bootstrap of the median resampling the fresh service processes first, then the pairs",
          reason=f"median over {len(sv)} paired ratios (service throughput / the bare model's just before it); per "
                 f"process: {per}")


def overload(b: Builder) -> None:
    s = b.serv
    ov = _proc(s[s.kind == "overload"]) if "kind" in s else s.iloc[:0]
    if ov.empty:
        return
    good = ((ov.status == 200) & (ov.cosine >= b.p.targets.cosine)) | (ov.status == 429)
    share = float(good.mean())
    healthy = bool(s[s.kind == "overload_health"].healthy.all()) if "healthy" in s else False
    b.add("target-overload-answers", "at 3x max concurrency every request gets a correct embedding or a 429; none "
          "lost, none hangs, the service stays up", "all", ours=share if healthy else 0.0,
          ci=(share, share) if healthy else (0.0, 0.0), needs=(),
          interval=f"exact: every one of the {len(ov)} requests sent is counted (a count, not an estimate of a rate)"
                   if healthy else "exact: the service was not healthy after the overload",
          threshold=1.0, unit="share", source=analysis.source(ov),
          reason=f"{int((ov.status == 200).sum())} embeddings, {int((ov.status == 429).sum())} x 429, "
                 f"{int((~ov.status.isin([200, 429])).sum())} lost of {len(ov)} in {ov.process.nunique()} fresh "
                 f"service processes; service healthy after: {healthy}")
    _overload_p99(b, ov)
    cos = ov[ov.status == 200].cosine
    devs = sorted(set(ov[ov.status == 200].device))
    b.add("target-cosine", "embeddings served equal the model's own output (cosine >= 0.9999) on every device path",
          ">= 0.9999", ours=float(cos.min()), ci=(float(cos.min()), float(cos.min())), needs=(),
          interval="exact: the smallest cosine over every answer (a minimum over all, not an estimate)",
          threshold=b.p.targets.cosine, unit="cosine (min)", source=analysis.source(ov),
          reason=f"smallest cosine over {len(cos)} answers from {devs} against the model run in the load generator")


def _overload_p99(b: Builder, ov: pd.DataFrame) -> None:
    """target-overload-p99 over the fresh service processes. With an emulated accelerator its answers take the
    time its paper-set law says, so the target is judged on the answers of the devices measured here (the CPU);
    with a real accelerator on every answer."""
    acc = ov[ov.status == 200]
    judged = judged_overload(ov, b.emulated)
    slo = float(ov.slo_s.iloc[0])
    e = p99(judged)
    adm = analysis.admission(ov) or "depth"
    who = "the CPU's (measured) answers" if b.emulated else "every accepted request"
    b.add("target-overload-p99", "accepted requests still meet the SLO at p99 under 3x overload", "<= SLO",
          estimate=e, threshold=slo, direction="<=", unit="s", source="measured" if b.emulated else analysis.source(ov),
          needs=(), interval="bootstrap of the p99 resampling the fresh service processes first, then the requests",
          reason=f"p99 latency (client side, from the burst's send) of {who}, {len(judged)} of {len(acc)} accepted, "
                 f"against the SLO {slo:g} s; admission: {adm}; " + where_the_time_went(acc, slo))


def where_the_time_went(acc: pd.DataFrame, slo: float) -> str:
    """Per fresh service process and device, as medians: the latency the admission predicted for the request
    (when it was admitted: requests admitted after it may join its batch), that of the batch it ran in (its
    last member's prediction), the service's own time (arrival to response built) and the client's (send to
    answer), with the share over the SLO."""
    out = []
    for (k, dev), g in acc.groupby(["process", "device"]):
        cols = (("predicted_s", "predicted at admission"), ("predicted_batch_s", "its batch predicted"),
                ("service_s", "in the service"), ("latency_s", "client"))
        parts = [f"{name} {g[c].median() * 1e3:.0f}" for c, name in cols if c in g and g[c].notna().any()]
        out.append(f"process {k} {dev} ({len(g)}): {', '.join(parts)} ms, {float((g.latency_s > slo).mean()):.0%} "
                   "over the SLO")
    return "medians " + "; ".join(out)

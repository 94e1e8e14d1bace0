"""What WindVE's figures and claims both read from the ``profile`` and ``serving`` records, derived once:

- which accelerator the records measured, never assumed: the CUDA GPU (``source=measured``, the paper's
  GPU + CPU setting) or the emulated accelerator (``source=emulated``, its law from this CPU's fit times a
  paper pair's ratios); a record set that does not say is labelled emulated (nothing is called measured
  without evidence);
- Tables I/II: per pair and SLO, the fine-tuned max concurrency without and with offload and the gain,
  with the interval from the rounds; the gain the regression predicts from the profiles alone;
- Table III and Figures 5/6: the queue depths per device, SLO and method;
- our SLOs by rank (the tightest stands for the paper's 1 s, the next for 2 s);
- Figure 2's stand-in: the bursty open-loop run's requests as offered and answered rates over time.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

_NOT_ACC = ("overhead", "overload_health")


def rank(slo: float, slos) -> int:
    """Our SLOs stand for the paper's by rank: the tightest for 1 s, the next for 2 s."""
    return 1 + sorted(set(slos)).index(slo)


# -- which accelerator ran ----------------------------------------------------------------------
def _acc_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows about the accelerator: an ``accelerator`` column set, or a ``device`` other than the CPU."""
    if df is None or df.empty:
        return pd.DataFrame()
    mask = pd.Series(False, index=df.index)
    if "accelerator" in df:
        mask |= df["accelerator"].notna() & (df["accelerator"].astype(str) != "")
    if "device" in df:
        dev = df["device"].astype(str)
        mask |= df["device"].notna() & ~dev.isin(["cpu", "", "nan"])
    if "kind" in df:
        mask &= ~df["kind"].isin(_NOT_ACC)
    return df[mask]


def device(*dfs: pd.DataFrame) -> str:
    """``cuda`` or ``emulated``: the accelerator device of the records."""
    for df in dfs:
        rows = _acc_rows(df)
        if rows.empty:
            continue
        col = rows["accelerator"] if "accelerator" in rows else pd.Series(dtype=object)
        col = col[col.notna() & (col.astype(str) != "")]
        if col.empty and "device" in rows:
            col = rows["device"][~rows["device"].astype(str).isin(["cpu", "", "nan"])]
        if len(col):
            return str(col.iloc[0])
    return "emulated"


def source(*dfs: pd.DataFrame) -> str:
    """``emulated`` if any accelerator row is emulated (or none says), else ``measured``."""
    srcs = set()
    for df in dfs:
        rows = _acc_rows(df)
        if "source" in rows:
            srcs |= set(rows["source"].dropna().astype(str))
    return "measured" if srcs and srcs <= {"measured"} else "emulated"


def name(prof: pd.DataFrame) -> str:
    """What the accelerator ran on (the GPU's name), from the profile's ``device_name`` column."""
    acc = device(prof)
    if prof is not None and "device_name" in prof and "device" in prof:
        got = prof[(prof["device"] == acc) & prof["device_name"].notna()]["device_name"]
        if len(got):
            return str(got.iloc[0])
    return acc


def admission(df: pd.DataFrame) -> str | None:
    """How the service admitted the requests of these rows (``depth`` or ``depth+deadline``), if they say."""
    if "admission" in df and df["admission"].notna().any():
        return str(df["admission"].dropna().iloc[0])
    return None


def busy(*dfs: pd.DataFrame) -> bool:
    return any(bool(df["machine_busy"].any()) for df in dfs if "machine_busy" in df)


# -- Tables I/II: max concurrency and the gain from offload ------------------------------------
def maxconc(serv: pd.DataFrame) -> pd.DataFrame:
    return serv[serv.kind == "maxconc"].copy()


def _gain_row(pair, slo, a: pd.Series, o: pd.Series) -> dict:
    lo_a, hi_a = a.get("total_low", a.total), a.get("total_high", a.total)
    lo_o, hi_o = o.get("total_low", o.total), o.get("total_high", o.total)
    ok = bool(a.get("converged", True)) and bool(o.get("converged", True))
    if not ok:   # a search that never met the SLO gives no interval
        lo_a = hi_a = lo_o = hi_o = np.nan
    return {"pair": pair, "slo_s": slo, "converged": ok, "acc_only": a.total, "acc_only_low": lo_a,
            "acc_only_high": hi_a, "acc_part": o.get("depth_acc", o.get("depth_emulated", np.nan)),
            "cpu_part": o.get("depth_cpu", 0), "offload": o.total, "gain": o.total / a.total - 1,
            "gain_low": lo_o / hi_a - 1 if hi_a else np.nan, "gain_high": hi_o / lo_a - 1 if lo_a else np.nan,
            "cannot_help": bool(o.get("cannot_help", False)),
            "bracketed": bool(a.get("bracketed", False)) and (bool(o.get("bracketed", False))
                                                              or bool(o.get("cannot_help", False)))}


def _over_searches(per: list[dict]) -> dict:
    """One cell from its repeated fine-tuning searches: the median depths and gain; the interval spans every
    search's round bounds (lowest low .. highest high), so it holds the spread between searches; converged
    and bracketed only if every search is."""
    d = pd.DataFrame(per)
    out = dict(per[0])
    for c in ("acc_only", "offload", "gain", "acc_part", "cpu_part"):
        out[c] = float(d[c].median())
    for c in ("acc_only_low", "gain_low"):
        out[c] = float(d[c].min(skipna=False))
    for c in ("acc_only_high", "gain_high"):
        out[c] = float(d[c].max(skipna=False))
    out["acc_part_low"], out["acc_part_high"] = float(d.acc_part.min()), float(d.acc_part.max())
    out.update(converged=bool(d.converged.all()), bracketed=bool(d.bracketed.all()), searches=len(d),
               search_gains=", ".join(f"{g:+.3f}" for g in d.gain), cannot_help=bool(d.cannot_help.any()))
    return out


def gains(serv: pd.DataFrame) -> pd.DataFrame:
    """Per pair and SLO: accelerator-only and offload max concurrency and the gain, with bounds, over the
    repeated fine-tuning searches (``search``, in each fresh service process ``process``) where the records
    have several."""
    mc = serv[serv.kind == "maxconc"]
    if "search" not in mc:
        mc = mc.assign(search=0)
    rows = []
    for (pair, slo), g in mc.groupby(["pair", "slo_s"]):
        per = []
        for _, gs in g.groupby(["process", "search"] if "process" in g else "search", dropna=False):   # per process
            a, o = gs[gs.config == "accelerator_only"], gs[gs.config == "offload"]
            if len(a) and len(o):
                per.append(_gain_row(pair, slo, a.iloc[0], o.iloc[0]))
        if per:
            rows.append(_over_searches(per))
    out = pd.DataFrame(rows)
    if not out.empty:   # no level met the SLO in every round: no interval, rather than one without the estimate
        bad = ~((out.gain_low <= out.gain + 1e-9) & (out.gain <= out.gain_high + 1e-9))
        out.loc[bad, ["gain_low", "gain_high"]] = np.nan
        out["ci_note"] = np.where(~out.converged, "; no interval: a fine-tuning search never met the SLO in every "
                                  "round", np.where(bad, "; no interval: no level met the SLO in every round", ""))
    return out


def predicted_gains(prof: pd.DataFrame) -> pd.DataFrame:
    """Regression-predicted gain C_CPU / C_acc per pair and SLO (measured profiles, not fine-tuned)."""
    d = regression_depths(prof, "base")
    rows = []
    for (pair, slo), g in d[d.device != "cpu"].groupby(["pair", "slo_s"]):
        cpu = d[(d.device == "cpu") & (d.slo_s == slo)].depth.max()
        rows.append({"pair": pair, "slo_s": slo, "gain": cpu / g.depth.max() if g.depth.max() else np.nan})
    return pd.DataFrame(rows, columns=["pair", "slo_s", "gain"])


# -- queue depths (Table III, Figures 5 and 6) --------------------------------------------------
def regression_depths(prof: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """The regression's depth rows of one experiment (``base``, ``length``, ``cores``)."""
    return prof[(prof.kind == "depth") & (prof.experiment == experiment) & (prof.method == "regression")]


def depth_rows(prof: pd.DataFrame, serv: pd.DataFrame | None) -> pd.DataFrame:
    """Table III: depth per pair, device (``dev``: accelerator or cpu), SLO and method (regression and
    stress test from the profile, fine-tuned with offload from the serving records), with ``depth_low`` /
    ``depth_high``: the stress depth over its repeated searches, the regression depth over the fit of all
    rounds and of each round alone (equal to ``depth`` where the records have one search)."""
    d = prof[(prof.kind == "depth") & (prof.experiment == "base")].copy()
    d["dev"] = np.where(d.device == "cpu", "cpu", "accelerator")
    for col in ("depth_low", "depth_high"):   # the spread over repeated searches / per-round fits
        d[col] = d[col].fillna(d.depth) if col in d else d.depth
    out = [d[["pair", "dev", "device", "slo_s", "method", "depth", "runs", "depth_low", "depth_high"]]]
    if serv is not None:
        mc = maxconc(serv)
        mc = mc[mc.config == "offload"]
        if "search" in mc and mc.search.notna().any():   # Table III draws the first fine-tuning search
            mc = mc[mc.search == mc.search.min()]
        for r in mc.itertuples():
            acc = getattr(r, "accelerator", "emulated")
            acc = acc if isinstance(acc, str) and acc else "emulated"
            for dev, col in (("accelerator", "depth_acc"), ("cpu", "depth_cpu")):
                if not hasattr(r, col) and col == "depth_acc":
                    col = "depth_emulated"   # records written before the accelerator was named
                out.append(pd.DataFrame([{"pair": r.pair, "dev": dev, "device": "cpu" if dev == "cpu" else acc,
                                          "slo_s": r.slo_s, "method": "fine-tuned", "depth": getattr(r, col),
                                          "runs": r.runs, "depth_low": getattr(r, col),
                                          "depth_high": getattr(r, col)}]))
    return pd.concat(out, ignore_index=True)


# -- Figure 2's stand-in: the bursty open-loop trace over time ---------------------------------
RATE_PARTS = ("accelerator", "CPU", "refused (429)", "lost")


def open_requests(serv: pd.DataFrame, arrivals: str = "bursty") -> pd.DataFrame:
    """The ``openloop_request`` rows (one per request) of the open-loop runs with these arrivals, with
    ``outcome``: the device group that answered (``accelerator`` / ``CPU``), ``refused (429)`` or ``lost``."""
    if serv is None or "kind" not in serv:
        return pd.DataFrame()
    q = serv[(serv.kind == "openloop_request") & (serv.get("arrivals") == arrivals)].copy()
    if q.empty:
        return q
    dev = q["device"].fillna("").astype(str)
    q["outcome"] = np.where(q["answered"].astype(bool), np.where(dev == "cpu", "CPU", "accelerator"),
                            np.where(q["status"] == 429, "refused (429)", "lost"))
    return q


def bin_width(span_s: float, burst_s: float | None = None) -> float:
    """Bins of the load curve: a quarter of a burst where the trace says, else 1/24 of the run."""
    if burst_s is not None and np.isfinite(burst_s) and burst_s > 0:
        return float(burst_s) / 4
    return max(float(span_s), 1e-3) / 24


def load_curve(reqs: pd.DataFrame, bin_s: float) -> pd.DataFrame:
    """Per config and time bin (seconds from the run's start): the offered rate (intended send times per
    second) and the rate of outcomes by the time they came back (answered by the accelerator or the CPU,
    refused, lost), each in requests per second."""
    rows = []
    for cfg, g in reqs.groupby("config", sort=False):
        end = float(np.nanmax(np.r_[g.intended_s.to_numpy(), g.done_s.to_numpy()]))
        edges = np.arange(0.0, end + bin_s, bin_s)
        if len(edges) < 2:
            edges = np.array([0.0, bin_s])
        offered = np.histogram(g.intended_s, edges)[0] / bin_s
        parts = {p: np.histogram(g[g.outcome == p].done_s, edges)[0] / bin_s for p in RATE_PARTS}
        for i, t in enumerate(edges[:-1]):
            rows.append({"config": cfg, "t_s": t, "bin_s": bin_s, "offered_rps": offered[i],
                         **{f"{p}_rps": parts[p][i] for p in RATE_PARTS}})
    return pd.DataFrame(rows)


def burst_windows(run: pd.Series, end_s: float) -> list[tuple[float, float]]:
    """The schedule's burst windows (start, end) up to ``end_s``, from the run row's burst settings (none
    when the records do not carry them)."""
    b, p = run.get("burst_s", np.nan), run.get("period_s", np.nan)
    if not (np.isfinite(b) and np.isfinite(p) and p > 0):
        return []
    return [(t, min(t + b, end_s)) for t in np.arange(0.0, end_s, p)]


def bursts_sent(reqs: pd.DataFrame, run: pd.Series) -> int:
    """How many of the schedule's burst periods the run's intended sends reached (0 when the records do
    not carry the burst settings)."""
    p = run.get("period_s", np.nan)
    if not (np.isfinite(p) and p > 0) or reqs.empty:
        return 0
    return int(np.floor(reqs.intended_s.max() / p)) + 1


# -- deployment cost (equations 5/6) and throughput: one computation for the figure and the claims -------
def savings(c_acc, c_total):
    """(eq. 5, eq. 6) of one deployment, from the accelerator's concurrency alone ``c_acc`` and the total
    with CPU offload ``c_total`` (the CPU's net addition C_CPU = c_total - c_acc): deploying for average
    load saves up to C_CPU / C_acc (equation 5, the concurrency gain; the throughput is 1 + that),
    deploying for peak load C_CPU / (C_CPU + C_acc) (equation 6). Arrays or scalars; the paper's Table I
    goes through the same function (its accelerator-only and CPU-addition columns)."""
    c_acc, c_total = np.asarray(c_acc, dtype=float), np.asarray(c_total, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        avg = np.where(c_acc > 0, c_total / c_acc - 1, np.nan)
        peak = np.where(c_total > 0, 1 - c_acc / c_total, np.nan)
    return avg, peak


def _peak_of_gain(g):
    """Equation 6 from the gain (gain / (1 + gain), monotonic), for the interval's ends."""
    g = np.asarray(g, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(g) & (g > -1), g / (1 + g), np.nan)


def deployment(gt: pd.DataFrame) -> pd.DataFrame:
    """Per pair and SLO (rows of :func:`gains`): throughput ``throughput_x`` (offload / accelerator only),
    the saving deploying for average load ``save_avg`` (eq. 5, = the gain) and for peak load ``save_peak``
    (eq. 6), each with ``_low`` / ``_high`` from the gain's interval (NaN where it has none) and the
    gain's ``ci_note``."""
    cols = ["pair", "slo_s", "c_acc", "c_cpu", "throughput_x", "throughput_x_low", "throughput_x_high",
            "save_avg", "save_avg_low", "save_avg_high", "save_peak", "save_peak_low", "save_peak_high", "ci_note"]
    if gt is None or gt.empty:
        return pd.DataFrame(columns=cols)
    avg, peak = savings(gt.acc_only, gt.offload)
    out = pd.DataFrame({"pair": gt.pair.to_numpy(), "slo_s": gt.slo_s.to_numpy(), "c_acc": gt.acc_only.to_numpy(),
                        "c_cpu": (gt.offload - gt.acc_only).to_numpy(), "save_avg": avg, "save_peak": peak})
    for end in ("low", "high"):
        g = gt[f"gain_{end}"].to_numpy(dtype=float)
        out[f"save_avg_{end}"] = g
        out[f"save_peak_{end}"] = _peak_of_gain(g)
        out[f"throughput_x_{end}"] = 1 + g
    out["throughput_x"] = 1 + out.save_avg
    out["ci_note"] = gt.ci_note.to_numpy() if "ci_note" in gt else ""
    return out[cols]


def paper_savings(pair: str, rank_s: int) -> tuple[float, float]:
    """(eq. 5, eq. 6) of the paper's Table I (bge) cell, through :func:`savings`."""
    from . import paper_values as PV

    acc, cpu = PV.TABLE_I[(pair, rank_s)]
    avg, peak = savings(acc, acc + cpu)
    return float(avg), float(peak)


# -- the accelerator beside the CPU: does its fine-tuned depth drop? ----------------------------------
def acc_drop(gt: pd.DataFrame) -> pd.DataFrame:
    """Per pair and SLO: the accelerator's fine-tuned depth with offload minus alone (``drop``; negative:
    it dropped), with the interval from the accelerator-alone search's bounds (every round met .. any
    round met; NaN where a search never met the SLO) and the with-offload depth's range over the repeated
    searches."""
    if gt is None or gt.empty:
        return pd.DataFrame(columns=["pair", "slo_s", "with_offload", "alone", "drop", "drop_low", "drop_high"])
    lo = gt.acc_part_low if "acc_part_low" in gt else gt.acc_part    # the spread over repeated searches
    hi = gt.acc_part_high if "acc_part_high" in gt else gt.acc_part
    return pd.DataFrame({"pair": gt.pair, "slo_s": gt.slo_s, "with_offload": gt.acc_part, "alone": gt.acc_only,
                         "drop": gt.acc_part - gt.acc_only, "drop_low": lo - gt.acc_only_high,
                         "drop_high": hi - gt.acc_only_low}).reset_index(drop=True)


# -- CPU utilisation (Section V-B's 8% -> 80%) ------------------------------------------------------
def util_shares(serv: pd.DataFrame) -> dict[str, pd.Series]:
    """Per config (``accelerator_only``, ``offload``): the service process's CPU use per closed round at
    the fine-tuned max concurrency, as a share of all the machine's cores (measured)."""
    if serv is None or "kind" not in serv:
        return {}
    ut = serv[serv.kind == "util"]
    return {c: (ut[ut.config == c].service_cores / ut[ut.config == c].machine_cores).reset_index(drop=True)
            for c in ("accelerator_only", "offload") if (ut.config == c).any()}


# -- Figure 4: the fitted coefficients' ratios, ours and the paper's -----------------------------------
def fit_ratios(prof: pd.DataFrame, tolerance: float = 0.25) -> pd.DataFrame:
    """Per pair with an accelerator fit: alpha_acc / alpha_CPU and beta_acc / beta_CPU of the base
    experiment's fits, the paper's (Figure 4, Section V-B) and whether ours is within ``tolerance``
    (relative) of the paper's (``holds``)."""
    from . import paper_values as PV

    fits = prof[(prof.kind == "fit") & (prof.experiment == "base")]
    cpu = fits[fits.device == "cpu"]
    acc = device(prof)
    rows = []
    if cpu.empty:
        return pd.DataFrame(columns=["pair", "coef", "ours", "paper", "holds"])
    cpu = cpu.iloc[0]
    for pair in fits[fits.device == acc].pair.unique():
        f = fits[(fits.device == acc) & (fits.pair == pair)].iloc[0]
        paper = {"alpha": PV.ALPHA_RATIO.get(pair, np.nan),
                 "beta": PV.BETA[pair]["accelerator"] / PV.BETA[pair]["cpu"] if pair in PV.BETA else np.nan}
        for coef in ("alpha", "beta"):
            ours = f[coef] / cpu[coef] if cpu[coef] else np.nan
            p = paper[coef]
            rows.append({"pair": pair, "coef": coef, "ours": ours, "paper": p,
                         "holds": bool(np.isfinite(ours) and np.isfinite(p) and abs(ours / p - 1) <= tolerance)})
    return pd.DataFrame(rows, columns=["pair", "coef", "ours", "paper", "holds"])


# -- Figure 2's stand-in: answers after the SLO ------------------------------------------------------
def late_answers(reqs: pd.DataFrame, slo_s: float) -> pd.DataFrame:
    """Per config and answering device group (``accelerator`` / ``CPU``): answered requests, how many of
    them came back after the SLO (latency from the intended send) and their share."""
    cols = ["config", "outcome", "answered", "late", "share"]
    if reqs is None or reqs.empty:
        return pd.DataFrame(columns=cols)
    a = reqs[reqs.outcome.isin(["accelerator", "CPU"])]
    rows = [{"config": c, "outcome": o, "answered": len(g), "late": int((g.latency_s > slo_s).sum())}
            for (c, o), g in a.groupby(["config", "outcome"], sort=False)]
    out = pd.DataFrame(rows, columns=cols[:-1])
    out["share"] = out.late / out.answered.where(out.answered > 0)
    return out


def not_fine_tuned_why(serv: pd.DataFrame | None, pair: str) -> str:
    """Why a pair has no fine-tuned (serving) rows: the records' own words where a row says (a ``why``
    column), else that the profile did not fine-tune it (its ``serving_pairs``)."""
    if serv is not None and "why" in serv and "pair" in serv:
        got = serv[(serv.pair == pair) & serv["why"].notna()]["why"]
        if len(got):
            return str(got.iloc[0])
    return "not fine-tuned in this profile"


# -- Table III: regression against the stress test, over the repeated searches ------------------------
def table_iii_cells(prof: pd.DataFrame, step: float = 0) -> pd.DataFrame:
    """Per device/pair/SLO cell of the base experiment: the regression depth (``reg``, ``reg_low`` ..
    ``reg_high`` over the fit of all rounds and of each round alone) and the stress test's (``stress``: the
    first search, the paper's climb; ``stress_low`` .. ``stress_high`` over every search), the stress
    searches' count and whether every one was bracketed; the regression ``>=`` the stress depth surely
    (``ge_sure``), surely not (``lt_sure``), and the distance between them (``diff``, with ``diff_low`` ..
    ``diff_high`` over every combination).

    ``step``: the stress climb's step. The climb cannot place a depth finer than its step (the paper blames
    its step of 8 for missing the peak), and the spreads above come from one run (the rounds and searches
    of one service process: no run-to-run noise; quiet tiny runs read one cell's regression depth 38, 41, 44
    and 45 against a stress depth of 40). So a cell counts as surely on one side only where the two differ
    by at least one step in every combination; closer than that it is either way."""
    d = prof[(prof.kind == "depth") & (prof.experiment == "base")].copy()
    for col in ("depth_low", "depth_high"):
        d[col] = d[col].fillna(d.depth) if col in d else d.depth
    if "searches" not in d:
        d["searches"] = 1
    if "bracketed" not in d:
        d["bracketed"] = np.nan
    key = ["device", "pair", "slo_s"]
    reg = d[d.method == "regression"].set_index(key)[["depth", "depth_low", "depth_high", "runs"]]
    st = d[d.method == "stress"].set_index(key)[["depth", "depth_low", "depth_high", "runs", "searches", "bracketed"]]
    reg.columns = ["reg", "reg_low", "reg_high", "runs"]
    st.columns = ["stress", "stress_low", "stress_high", "runs_stress", "searches", "bracketed"]
    c = reg.join(st, how="inner")
    if step > 0:
        c["ge_sure"] = c.reg_low - c.stress_high >= step
        c["lt_sure"] = c.stress_low - c.reg_high >= step
    else:
        c["ge_sure"] = c.reg_low >= c.stress_high
        c["lt_sure"] = c.reg_high < c.stress_low
    c["diff"] = (c.reg - c.stress).abs()
    c["diff_low"] = np.maximum(0, np.maximum(c.reg_low - c.stress_high, c.stress_low - c.reg_high))
    c["diff_high"] = np.maximum((c.reg_high - c.stress_low).abs(), (c.stress_high - c.reg_low).abs())
    return c

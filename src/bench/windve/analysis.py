"""What WindVE's figures and claims both read from the ``profile`` and ``serving`` records, derived once:

- which accelerator the records measured, never assumed: the CUDA GPU (``source=measured``, the paper's
  GPU + CPU setting) or the emulated accelerator (``source=emulated``, its law from this CPU's fit times a
  paper pair's ratios); a record set that does not say is labelled emulated (nothing is called measured
  without evidence);
- the gain the regression predicts from the profiles alone (the fine-tuned gains are :mod:`.gains`,
  Table III :mod:`.depths`);
- the accelerator-to-CPU speed ratio of the fitted laws (Figure 4), per fresh service process;
- the CPU utilisation of the service process (Section V-B);
- Figures 5/6: the queue depths per query length and per core count;
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


# -- Tables I/II: the gain the regression predicts (pairs not fine-tuned) ------------------------
def predicted_gains(prof: pd.DataFrame) -> pd.DataFrame:
    """Regression-predicted gain C_CPU / C_acc per pair and SLO (measured profiles, not fine-tuned)."""
    d = regression_depths(prof, "base")
    rows = []
    for (pair, slo), g in d[d.device != "cpu"].groupby(["pair", "slo_s"]):
        cpu = d[(d.device == "cpu") & (d.slo_s == slo)].depth.median()   # median over fresh service processes
        acc = g.depth.median()
        rows.append({"pair": pair, "slo_s": slo, "gain": cpu / acc if acc else np.nan})
    return pd.DataFrame(rows, columns=["pair", "slo_s", "gain"])


# -- queue depths (Table III, Figures 5 and 6) --------------------------------------------------
def regression_depths(prof: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """The regression's depth rows of one experiment (``base``, ``length``, ``cores``)."""
    return prof[(prof.kind == "depth") & (prof.experiment == experiment) & (prof.method == "regression")]


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
def coefficient_ratios(prof: pd.DataFrame, pair: str, coef: str = "alpha") -> np.ndarray:
    """alpha_acc / alpha_CPU (or beta's) of the base experiment's fits, one per fresh service process (the
    accelerator's fit for ``pair`` over the CPU's fit of the same process)."""
    fits = prof[(prof.kind == "fit") & (prof.experiment == "base")]
    fits = fits.assign(process=fits["process"] if "process" in fits else 0)
    acc = device(prof)
    cpu = fits[fits.device == "cpu"].set_index("process")[coef]
    a = fits[(fits.device == acc) & (fits.pair == pair)].set_index("process")[coef]
    both = a.index.intersection(cpu.index)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (a.loc[both] / cpu.loc[both].where(cpu.loc[both] > 0)).to_numpy(dtype=float)


def fit_ratios(prof: pd.DataFrame, tolerance: float = 0.25) -> pd.DataFrame:
    """Per pair with an accelerator fit: alpha_acc / alpha_CPU and beta_acc / beta_CPU of the base
    experiment's fits (the median over fresh service processes, with the lowest and highest), the paper's
    (Figure 4, Section V-B) and whether ours is within ``tolerance`` (relative) of the paper's (``holds``)."""
    from . import paper_values as PV

    fits = prof[(prof.kind == "fit") & (prof.experiment == "base")]
    acc = device(prof)
    rows = []
    for pair in fits[fits.device == acc].pair.unique():
        paper = {"alpha": PV.ALPHA_RATIO.get(pair, np.nan),
                 "beta": PV.BETA[pair]["accelerator"] / PV.BETA[pair]["cpu"] if pair in PV.BETA else np.nan}
        for coef in ("alpha", "beta"):
            r = coefficient_ratios(prof, pair, coef)
            ours = float(np.median(r)) if r.size else np.nan
            p = paper[coef]
            rows.append({"pair": pair, "coef": coef, "ours": ours, "low": float(np.min(r)) if r.size else np.nan,
                         "high": float(np.max(r)) if r.size else np.nan, "paper": p, "processes": int(r.size),
                         "holds": bool(np.isfinite(ours) and np.isfinite(p) and abs(ours / p - 1) <= tolerance)})
    return pd.DataFrame(rows, columns=["pair", "coef", "ours", "low", "high", "paper", "processes", "holds"])


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

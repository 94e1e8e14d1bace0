"""Tables I/II of WindVE (Section V-B) read from the ``serving`` records, once for the figures and the claims:
the fine-tuned max concurrency without and with CPU offload per pair, SLO and fresh service process, the
gain, the deployment-cost savings of equations 5/6 (Section III-B), the accelerator's depth beside the CPU
(Section V-A5: "we ensured the NPU's maximum concurrency when utilizing CPU offloading"), and the
differences between SLOs (equation 23) and between pairs (inequality 19).

Every interval here is over fresh service processes (``process``), never over the rounds or searches of one
process: each process's search gives its own gain, and the interval is the Student-t 95% interval over the
processes, widened to the t ends of the bounds each process's rounds allow (the level every round met .. the
level any round met) where every process has them (:func:`span`). A search whose rounds never all met the SLO
has no lower round bound: it is left out, never a sentinel (0 concurrency, a gain of -100%).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from bench.core.judging import intervals

KEYS = ["pair", "slo_s"]


def _bounds(df: pd.DataFrame, end: str) -> pd.Series:
    """A search's round bound (``low``/``high``) with the old records' sentinel removed: 0 (no level met the
    SLO in every round) is no bound."""
    col = f"total_{end}"
    v = pd.to_numeric(df[col], errors="coerce") if col in df else df.total.astype(float)
    return v.where(v > 0)


def searches(serv: pd.DataFrame) -> pd.DataFrame:
    """One row per fine-tuning search (pair, SLO, fresh service process, search) with both configurations:
    the accelerator alone against offload, the gain and the bounds its rounds allow, the accelerator's part
    of the offload depth and its ``drop`` from the depth alone."""
    mc = serv[serv.kind == "maxconc"] if "kind" in serv else serv.iloc[:0]
    if mc.empty:
        return pd.DataFrame()
    mc = mc.assign(search=mc["search"] if "search" in mc else 0, process=mc["process"] if "process" in mc else 0,
                   lo=_bounds(mc, "low"), hi=_bounds(mc, "high"))
    for col, default in (("converged", True), ("bracketed", False), ("cannot_help", False), ("depth_cpu", 0.0)):
        mc[col] = mc[col].fillna(default) if col in mc else default
    acc_col = "depth_acc" if "depth_acc" in mc else "depth_emulated"
    key = ["pair", "slo_s", "process", "search"]
    a = mc[mc.config == "accelerator_only"].drop_duplicates(key).set_index(key)
    o = mc[mc.config == "offload"].drop_duplicates(key).set_index(key)
    a, o = a.align(o, join="inner", axis=0)
    ok = a.converged.astype(bool) & o.converged.astype(bool)
    out = pd.DataFrame({"converged": ok, "acc_only": a.total.astype(float), "offload": o.total.astype(float),
                        "acc_part": pd.to_numeric(o[acc_col], errors="coerce"),
                        "cpu_part": pd.to_numeric(o.depth_cpu, errors="coerce").fillna(0.0),
                        "cannot_help": o.cannot_help.astype(bool)}, index=a.index)
    out["gain"] = out.offload / out.acc_only.where(out.acc_only > 0) - 1
    out["gain_low"] = (o.lo / a.hi - 1).where(ok)
    out["gain_high"] = (o.hi / a.lo - 1).where(ok)
    out["drop"] = out.acc_part - out.acc_only
    out["bracketed"] = a.bracketed.astype(bool) & (o.bracketed.astype(bool) | out.cannot_help)
    return out.reset_index()


def per_process(s: pd.DataFrame) -> pd.DataFrame:
    """One row per pair, SLO and fresh service process: the median over its searches; its lower bound the
    lowest over them, its upper the highest; bracketed and converged only if every one was."""
    if s.empty:
        return s
    agg = {c: "median" for c in ("acc_only", "offload", "acc_part", "cpu_part", "gain", "drop")}
    agg.update(gain_low=lambda x: x.min(skipna=False), gain_high=lambda x: x.max(skipna=False),
               bracketed="all", converged="all", cannot_help="any", search="count")
    return s.groupby(KEYS + ["process"]).agg(agg).rename(columns={"search": "searches"}).reset_index()


def span(values, lows=None, highs=None) -> intervals.Estimate:
    """The median of one value per fresh process, with the Student-t 95% interval over the processes (of
    their mean), widened where the processes' own bounds say more: to the t lower end of ``lows`` and the
    upper end of ``highs`` (each process's round bounds), where every process has one; clusters: the
    processes."""
    v = np.asarray(values, dtype=float)
    n = int(v.size)
    if not n:
        return intervals.Estimate(np.nan, np.nan, np.nan, 0)
    est = float(np.median(v))
    _, lo, hi = intervals.t_interval(v)
    for ends, pick, i in ((lows, min, 1), (highs, max, 2)):
        e = None if ends is None else np.asarray(ends, dtype=float)
        if e is not None and e.size == n and not np.isnan(e).any() and n > 1:
            b = intervals.t_interval(e)[i]
            lo, hi = (pick(lo, b), hi) if i == 1 else (lo, pick(hi, b))
    return intervals.Estimate(est, min(lo, est), max(hi, est), n)


def gains(serv: pd.DataFrame, pp: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per pair and SLO: median depths and gain over the fresh service processes, ``gain_low`` /
    ``gain_high`` from :func:`span`, ``clusters`` (processes), ``searches`` (all), the per-process gains in
    words, and ``bracketed`` / ``converged`` (every search). ``pp``: :func:`per_process` of ``serv`` where
    already computed."""
    pp = per_process(searches(serv)) if pp is None else pp
    rows = []
    for (pair, slo), g in (pp.groupby(KEYS) if not pp.empty else []):
        e = span(g.gain, g.gain_low, g.gain_high)
        rows.append({"pair": pair, "slo_s": slo, **{c: float(g[c].median()) for c in
                                                    ("acc_only", "offload", "acc_part", "cpu_part")},
                     "gain": e[0], "gain_low": e[1], "gain_high": e[2], "clusters": e.clusters,
                     "searches": int(g.searches.sum()), "bracketed": bool(g.bracketed.all()),
                     "converged": bool(g.converged.all()), "cannot_help": bool(g.cannot_help.any()),
                     "process_gains": ", ".join(f"{x:+.3f}" for x in g.gain),
                     "ci_note": _note(g, e)})
    cols = ["pair", "slo_s", "acc_only", "offload", "acc_part", "cpu_part", "gain", "gain_low", "gain_high",
            "clusters", "searches", "bracketed", "converged", "cannot_help", "process_gains", "ci_note"]
    return pd.DataFrame(rows, columns=cols)


def _note(g: pd.DataFrame, e: intervals.Estimate) -> str:
    """What the cell's interval lacks, in words ("" when nothing)."""
    if np.isnan(e[1]) or np.isnan(e[2]):
        return "; no interval: fewer than two fresh service processes"
    if g.gain_low.isna().any() or g.gain_high.isna().any():
        return ("; in some process no tried level met the SLO in every round, so the interval is the processes' "
                "spread alone, not widened by their round bounds")
    return ""


def estimate(gt_row) -> intervals.Estimate:
    """A :func:`gains` row's gain as an :class:`~bench.core.judging.intervals.Estimate`."""
    return intervals.Estimate(gt_row.gain, gt_row.gain_low, gt_row.gain_high, int(gt_row.clusters))


def drop(pp: pd.DataFrame, pair: str, slo: float) -> intervals.Estimate:
    """The accelerator's fine-tuned depth with offload minus alone (queries; negative: it dropped), over the
    fresh service processes (paired: each process's own two searches); ``pp``: :func:`per_process`."""
    g = pp[(pp.pair == pair) & (pp.slo_s == slo)] if not pp.empty else pp
    return span(g["drop"]) if len(g) else intervals.Estimate(np.nan, np.nan, np.nan, 0)


def difference(pp: pd.DataFrame, a: tuple, b: tuple) -> intervals.Estimate:
    """gain(a) - gain(b) for two (pair, SLO) cells, paired by fresh service process, over the processes
    (``pp``: :func:`per_process`)."""
    if pp.empty:
        return intervals.Estimate(np.nan, np.nan, np.nan, 0)
    ga, gb = (pp[(pp.pair == p) & (pp.slo_s == s)].set_index("process") for p, s in (a, b))
    both = ga.index.intersection(gb.index)
    if not len(both):
        return intervals.Estimate(np.nan, np.nan, np.nan, 0)
    d = ga.loc[both].gain - gb.loc[both].gain
    return span(d)


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
    (eq. 6), each with ``_low`` / ``_high`` from the gain's interval (NaN where it has none), its
    ``clusters`` and the gain's ``ci_note``."""
    cols = ["pair", "slo_s", "c_acc", "c_cpu", "throughput_x", "throughput_x_low", "throughput_x_high",
            "save_avg", "save_avg_low", "save_avg_high", "save_peak", "save_peak_low", "save_peak_high",
            "clusters", "ci_note"]
    if gt is None or gt.empty:
        return pd.DataFrame(columns=cols)
    out = pd.DataFrame({"pair": gt.pair.to_numpy(), "slo_s": gt.slo_s.to_numpy(), "c_acc": gt.acc_only.to_numpy(),
                        "c_cpu": (gt.offload - gt.acc_only).to_numpy()})
    for end in ("", "_low", "_high"):
        g = gt[f"gain{end}"].to_numpy(dtype=float)
        out[f"save_avg{end}"] = g
        out[f"save_peak{end}"] = _peak_of_gain(g)
        out[f"throughput_x{end}"] = 1 + g
    out["clusters"] = gt.clusters.to_numpy() if "clusters" in gt else np.nan
    out["ci_note"] = gt.ci_note.to_numpy() if "ci_note" in gt else ""
    return out[cols]


def paper_savings(pair: str, rank_s: int) -> tuple[float, float]:
    """(eq. 5, eq. 6) of the paper's Table I (bge) cell, through :func:`savings`."""
    from . import paper_values as PV

    acc, cpu = PV.TABLE_I[(pair, rank_s)]
    avg, peak = savings(acc, acc + cpu)
    return float(avg), float(peak)

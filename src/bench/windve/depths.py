"""Table III of WindVE (Section V-C) read from the ``profile`` and ``serving`` records, for the figure and the
claims: per device, pair, SLO and fresh service process, the queue depth the linear regression predicts
(equation 12 fitted to that process's profiled levels), the stress test's (its climb in steps of 8) and the
depth fine-tuned with both devices running (the serving step's offload searches), with the profiling runs
each method needed.

The paper's measure of "efficacy" is closeness to the depth the service settles at: "the predictions yielded
by linear regression demonstrate either superior or comparable efficacy to those obtained through stress
tests, with the exception of the cases involving the Atlas 300I DUO and Kunpeng 920 under the 2-second
limit" (Section V-C), the two cells where its regression (195, 15) lies farther from the fine-tuned depth
(172, 8) than its stress test (176, 12) does, although it is larger. So a cell is "as good" where
|regression - fine-tuned| <= |stress - fine-tuned|: 6 of the paper's 8 cells.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

CELL = ["device", "pair", "slo_s"]


def _proc(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(process=df["process"] if "process" in df else 0)


def fine_tuned(serv: pd.DataFrame | None) -> dict[tuple, float]:
    """{(device, pair, SLO): fine-tuned depth} from the offload searches (median over fresh service processes
    and searches): the accelerator's per pair, the CPU's (one CPU for every pair: pair "") over all pairs."""
    if serv is None or "kind" not in serv:
        return {}
    mc = serv[(serv.kind == "maxconc") & (serv.config == "offload")]
    if "cannot_help" in mc:
        mc = mc[~mc.cannot_help.fillna(False).astype(bool)]
    out = {}
    col = "depth_acc" if "depth_acc" in mc else "depth_emulated"
    for (pair, slo), g in mc.groupby(["pair", "slo_s"]):
        acc = g["accelerator"].dropna().iloc[0] if "accelerator" in g and g["accelerator"].notna().any() else "emulated"
        if col in g:
            out[(str(acc), pair, float(slo))] = float(g[col].median())
    for slo, g in mc.groupby("slo_s"):
        if "depth_cpu" in g and g.depth_cpu.notna().any():
            out[("cpu", "", float(slo))] = float(g.depth_cpu.median())
    return out


def cells(prof: pd.DataFrame, serv: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per Table III cell and fresh service process: ``reg`` and ``stress`` depths, ``runs`` (the
    regression's levels) and ``runs_stress`` (the first stress search's levels), ``bracketed`` (every stress
    search of the cell in that process), ``measured`` (the device is this machine's CPU or a real
    accelerator, not the emulated one), the fine-tuned depth ``ft`` (NaN where the pair was not fine-tuned),
    ``good`` (the paper's "as good": |reg - ft| <= |stress - ft|) and ``diff`` (|reg - stress|)."""
    d = _proc(prof[(prof.kind == "depth") & (prof.experiment == "base")])
    if d.empty:
        return pd.DataFrame(columns=CELL + ["process", "reg", "stress", "runs", "runs_stress", "bracketed",
                                            "measured", "ft", "good", "diff"])
    key = CELL + ["process"]
    reg = d[d.method == "regression"].set_index(key)[["depth", "runs"]].rename(columns={"depth": "reg"})
    st = d[d.method == "stress"].set_index(key)
    st = st[["depth", "runs"] + (["bracketed"] if "bracketed" in st else [])].rename(
        columns={"depth": "stress", "runs": "runs_stress"})
    c = reg.join(st, how="inner").reset_index()
    if "bracketed" not in c:
        c["bracketed"] = np.nan
    src = d.drop_duplicates(CELL).set_index(CELL)["source"] if "source" in d else None
    c["measured"] = [dev == "cpu" or (src is not None and src.get((dev, p, s), "") == "measured")
                     for dev, p, s in zip(c.device, c.pair, c.slo_s)]
    ft = fine_tuned(serv)
    c["ft"] = [ft.get((dev, p, float(s)), np.nan) for dev, p, s in zip(c.device, c.pair, c.slo_s)]
    c["good"] = np.where(c.ft.notna(), (c.reg - c.ft).abs() <= (c.stress - c.ft).abs(), np.nan)
    c["diff"] = (c.reg - c.stress).abs()
    return c


def shares(c: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per fresh service process: how many cells with a fine-tuned depth are "as good", and how many there
    are (the trials of :func:`bench.core.judging.intervals.cluster_proportion_ci`)."""
    c = c[c.ft.notna()]
    g = c.groupby("process")
    return g.good.sum().to_numpy(float), g.good.count().to_numpy(float)


def rows(prof: pd.DataFrame, serv: pd.DataFrame | None) -> pd.DataFrame:
    """Table III as drawn: depth per pair, device (``dev``: accelerator or cpu), SLO and method (regression and
    stress test from the profile, fine-tuned with offload from the serving records), the median over fresh
    service processes with ``depth_low`` / ``depth_high`` their lowest and highest, and ``runs`` (median)."""
    c = cells(prof, serv)
    out = []
    for (dev, pair, slo), g in c.groupby(CELL):
        base = {"pair": pair, "dev": "cpu" if dev == "cpu" else "accelerator", "device": dev, "slo_s": slo}
        for m, col, runs in (("regression", "reg", "runs"), ("stress", "stress", "runs_stress")):
            out.append({**base, "method": m, "depth": float(g[col].median()), "depth_low": float(g[col].min()),
                        "depth_high": float(g[col].max()), "runs": float(g[runs].median()),
                        "processes": int(g.process.nunique())})
    for (dev, pair, slo), v in fine_tuned(serv).items():
        out.append({"pair": pair, "dev": "cpu" if dev == "cpu" else "accelerator", "device": dev, "slo_s": slo,
                    "method": "fine-tuned", "depth": v, "depth_low": v, "depth_high": v, "runs": np.nan,
                    "processes": np.nan})
    return pd.DataFrame(out, columns=["pair", "dev", "device", "slo_s", "method", "depth", "depth_low",
                                      "depth_high", "runs", "processes"])

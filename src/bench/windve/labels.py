"""Which accelerator WindVE's records measured, read from the records (never assumed), for the claims'
``source`` and the figures' labels and captions: the CUDA GPU (``source=measured``, the paper's GPU +
CPU setting) or the emulated accelerator (``source=emulated``, its law from this CPU's fit times a paper
pair's ratios). A record set that does not say is labelled emulated (nothing is called measured without
evidence)."""
from __future__ import annotations

import pandas as pd

from . import paper_values as PV

_NOT_ACC = ("overhead", "overload_health")


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


def acc_label(pair: str, src: str, acc_name: str = "") -> str:
    """Legend label of an accelerator series: the measured GPU by name, or the emulated pair's accelerator."""
    if src == "measured":
        return f"accelerator {acc_name or 'GPU'} (measured)"
    from bench.core import plotting

    return plotting.label_source(f"accelerator ~{PV.PAIR_NAMES[pair][0]}", "emulated")


def phrase(src: str, acc_name: str = "") -> str:
    """A caption's sentence on the accelerator."""
    if src == "measured":
        return (f"The accelerator is MEASURED: {acc_name or 'a CUDA GPU'} beside this CPU (the paper's setting), "
                "compared with the paper's V100 + Xeon pair.")
    return ("The accelerator is EMULATED (no GPU, or asked for): its law is this machine's CPU fit times the pair's "
            "paper ratios; it answers with the real model's embeddings.")


def scale(src: str, acc_name: str = "") -> str:
    """The claims' scale text on the accelerator."""
    if src == "measured":
        return f"accelerator {acc_name or 'CUDA GPU'} measured beside this CPU, standing for the paper's V100"
    return "accelerator emulated (law = this CPU's fit x the pair's paper ratios)"

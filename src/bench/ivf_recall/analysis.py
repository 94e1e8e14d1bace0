"""Aggregates of the recall records that the figure and the claim share: recall@k per (dataset, nprobe)
from the measured runs, and the median/min/max queries/s of those runs."""
from __future__ import annotations

import pandas as pd


def measured(df: pd.DataFrame) -> pd.DataFrame:
    return df[df.phase == "measured"]


def recall_columns(df: pd.DataFrame) -> list[str]:
    """``recall_at_K`` columns, by K."""
    return sorted((c for c in df if c.startswith("recall_at_")), key=lambda c: int(c.rsplit("_", 1)[1]))


def recall_long(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, nprobe, k): ``recall`` with ``k`` as ``recall@K``."""
    m = measured(df)
    cols = recall_columns(m)
    rec = (m.groupby(["dataset", "nprobe"])[cols].first().reset_index()
           .melt(id_vars=["dataset", "nprobe"], var_name="k", value_name="recall"))
    rec["k"] = rec["k"].str.replace("recall_at_", "recall@")
    return rec


def qps(df: pd.DataFrame) -> pd.DataFrame:
    """Median, min and max queries/s per (dataset, nprobe) over the measured runs."""
    return measured(df).groupby(["dataset", "nprobe"])["qps"].agg(["median", "min", "max"]).reset_index()


def per_setting(df: pd.DataFrame, k: int) -> pd.DataFrame:
    """recall@k and median queries/s per (dataset, nprobe), indexed by both."""
    return measured(df).groupby(["dataset", "nprobe"]).agg(recall=(f"recall_at_{k}", "first"), qps=("qps", "median"))

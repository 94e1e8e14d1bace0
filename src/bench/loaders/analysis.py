"""Numbers the figures and claims of the loaders study derive from records (never from new runs):
per-step samples/s of a run, the share of step time per part, memory per run."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..core import records

GB = 1e9


def read(paths) -> pd.DataFrame:
    return records.read_all(paths)


def steps(df: pd.DataFrame) -> pd.DataFrame:
    """Measured steps of every run: samples of all ranks over the slowest rank's step time; the
    parts (wait / copy / compute) averaged over ranks."""
    s = df[(df.kind == "step") & (df.phase == "measured")]
    keys = ["run_id", "loader", "parallel", "replicas", "option", "option_value"]
    g = s.groupby(keys + ["step"], dropna=False)
    out = g.agg(step_s=("step_s", "max"), samples=("samples", "sum"), wait_s=("wait_s", "mean"),
                copy_s=("copy_s", "mean"), compute_s=("compute_s", "mean"),
                machine_busy=("machine_busy", "any")).reset_index()
    out["samples_per_s"] = out.samples / out.step_s
    return out


def runs(df: pd.DataFrame) -> pd.DataFrame:
    return df[df.kind == "run"].copy()


def tput(st: pd.DataFrame, **sel) -> np.ndarray:
    """Per-step samples/s of the run(s) matching ``sel`` (column=value)."""
    m = np.ones(len(st), bool)
    for k, v in sel.items():
        m &= (st[k] == v).to_numpy()
    return st.loc[m, "samples_per_s"].to_numpy(float)


def mem(df: pd.DataFrame, run_id: str, col: str = "pss_bytes") -> np.ndarray:
    """Memory readings of a run during its measured steps (all readings when none fell there)."""
    m = df[(df.kind == "memory") & (df.run_id == run_id)]
    w = m[m.phase == "measured"]
    return (w if len(w) else m)[col].to_numpy(float)


def run_id(loader: str, parallel: str, replicas: int) -> str:
    return f"{loader}/{parallel}/{replicas}"


def table(df: pd.DataFrame, value: str) -> pd.DataFrame:
    """loader x (parallel, replicas) of a run-row column; OOM cells as NaN with status kept apart."""
    r = runs(df[df.option == "grid"])
    return r.pivot_table(index="loader", columns=["replicas", "parallel"], values=value, aggfunc="first")


def _md_table(df: pd.DataFrame) -> str:
    cols = [str(c) if not isinstance(c, tuple) else " ".join(map(str, c)) for c in df.columns]
    head = "| " + " | ".join([str(df.index.name or "")] + cols) + " |"
    rule = "|" + "---|" * (len(cols) + 1)
    body = ["| " + " | ".join([str(i)] + [str(v) for v in row]) + " |" for i, row in zip(df.index, df.to_numpy())]
    return "\n".join([head, rule, *body])


def markdown(df: pd.DataFrame, path: Path, title: str, note: str) -> Path:
    """A Markdown table (cells already formatted as text) with a title and a note."""
    from ..core.atomic import write_text

    write_text(path, f"# {title}\n\n{_md_table(df)}\n\n{note}\n")
    return path

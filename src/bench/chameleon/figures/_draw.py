"""What the Chameleon figures share (not a figure module): legend labels by source, the authors' points
in the paper's style, plain log ticks, dots on log axes, the caption's "where" and "not run" phrases, and
the CSV written beside a figure."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...core import plotting
from ...core.atomic import atomic_path

COMPUTED_COLOR = "#8c6d31"   # values the harness computed from the authors' numbers (never labelled paper)
COMPUTED_LABEL = "computed from the authors' archived data"


def not_run_text(df: pd.DataFrame, col: str = "config") -> str:
    """"Not run: a, b (the records' reason)." per reason; the CUDA reason when the records give none."""
    d = df[df.source == "not_run"] if "source" in df else df.iloc[:0]
    if "source" in df and "why" not in df:
        d = d.assign(why="no CUDA on this machine")
    if not len(d):
        return ""
    d = d.assign(why=d.why.fillna("no reason recorded").astype(str))
    return " ".join(f"Not run: {', '.join(sorted(g[col].astype(str).unique()))}: {why}." for why, g in d.groupby("why"))


def label(name: str, source: str) -> str:
    return plotting.label_source(name, source if source in plotting.SOURCE_LABELS else "measured")


def where(prov: dict) -> str:
    return f"profile ``{prov.get('profile')}``, {prov.get('cpu_model')}, {prov.get('cpu_cores')} cores"


def paper_point(ax, x, y, name: str, marker: str = "*") -> None:
    """One of the authors' values, in the paper's colour and marker."""
    ax.plot(x, y, **{**plotting.PAPER_STYLE, "marker": marker}, label=plotting.label_source(name, "paper"))


def log_dots(ax, x, heights, **kw):
    """Values on a log axis as dots (a bar's length means nothing on a log axis)."""
    h = np.asarray(heights, dtype=float)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    return ax.plot(x, h, marker="o", ls="none", ms=7, **kw)


def plain_log_ticks(axis) -> None:
    """Log-axis tick labels as plain numbers (0.5, 2, 100), never 2x10^0 beside 10^1."""
    axis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}" if str(f"{v:g}")[0] in "25" else ""))


def write_csv(df: pd.DataFrame, out_png: Path) -> None:
    with atomic_path(Path(out_png).with_suffix(".csv")) as tmp:
        df.to_csv(tmp, index=False)

"""What ESPN's figure modules share (paper Tables 4/5, Figures 1, 5-10): the back ends' names and colours in
every panel, the label of rows measured on the emulated slower SSD, log axes with plain tick labels, and
the table (CSV + Markdown) written beside each figure."""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd

from ...core import plotting
from ...core.atomic import write_text
from .. import analysis as A
from ..system.eq4 import ESPN_BATCH

BACKEND_NAMES = {"memory": "memory (fully cached)", "mmap": "mmap (MADV_RANDOM)", "direct": "direct I/O",
                 "direct_prefetch": "direct I/O + prefetcher", "vm_swap": "virtual memory + swap",
                 "gds": "GDS (kvikio)"}
# The paper's own series names (Tables 4/5): its direct reads are GPUDirect Storage.
PAPER_NAMES = {"mmap": "mmap", "vm_swap": "virtual memory + swap", "direct": "ESPN (GDS)",
               "direct_prefetch": "ESPN (GDS + prefetcher)"}
EMU = " (emulated SSD)"


def fmt(v) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    if isinstance(v, (float, np.floating)):
        return str(int(v)) if float(v).is_integer() and abs(v) < 1e9 else f"{v:.3g}"
    return str(v)


def table(df: pd.DataFrame, out_png) -> list[Path]:
    """Write a table beside a figure as CSV and Markdown (atomic)."""
    stem = Path(out_png).with_suffix("")
    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for _, r in df.iterrows()]
    return [write_text(f"{stem}.csv", df.to_csv(index=False)), write_text(f"{stem}.md", "\n".join(lines) + "\n")]


def emulated_ssd_label(name: str, iops) -> str:
    """Rows run on the read-throttled disk (cgroup blkio v1 or io.max v2) were measured, on an emulated slower SSD."""
    cap = f", {int(iops):,} read IOPS" if iops is not None and iops == iops else ""
    return f"{name} [measured on an emulated SSD{cap}]"


def with_series(df: pd.DataFrame) -> pd.DataFrame:
    """``series``: the back end, suffixed for rows run on the emulated slower SSD (read throttle), so
    emulated rows are never drawn or tabulated as native ones."""
    df = A.with_ssd(df)
    return df.assign(series=np.where(df.ssd == "emulated", df.backend + EMU, df.backend))


def ssd_iops(df: pd.DataFrame):
    v = df.loc[df.ssd == "emulated", "ssd_read_iops"].dropna() if "ssd_read_iops" in df else []
    return float(v.iloc[0]) if len(v) else None


def series_label(series: str, iops=None) -> str:
    if series.endswith(EMU):
        return emulated_ssd_label(BACKEND_NAMES.get(series[:-len(EMU)], series), iops)
    return BACKEND_NAMES.get(series, series)


@functools.lru_cache(maxsize=1)
def backend_colors() -> dict:
    """One colour per back end in every panel (gds, never run here, takes the palette's next colour; swap
    takes sky blue, not the palette's tan, which is too close to the prefetcher's orange)."""
    return {**plotting.colors(["direct", "direct_prefetch", "memory", "mmap"]),
            "vm_swap": plotting.COLORBLIND[7], "gds": plotting.COLORBLIND[5]}


def plain_log2(ax) -> None:
    """A log-2 x axis with plain numbers (1, 2, 4, ...) as tick labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def plain_log_y(ax) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
def batch_label(meth: str) -> str:
    if meth == ESPN_BATCH:
        return f"{meth} [measured reads; prefetch budget emulated by a sleep]"
    return meth


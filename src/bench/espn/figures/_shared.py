"""What ESPN's figure modules share (paper Tables 4/5, Figures 1, 5-10): the back ends' names and colours in
every panel, the label of rows measured on the emulated slower SSD, log axes with plain tick labels, and
the table (CSV + Markdown) written beside each figure."""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.base.atomic import write_text
from .. import analysis as A
from ..system.eq4 import ESPN_BATCH

BACKEND_NAMES = {"memory": "memory (fully cached)", "mmap": "mmap (MADV_RANDOM)", "direct": "direct I/O",
                 "direct_prefetch": "direct I/O + cut-concurrent prefetcher", "vm_swap": "virtual memory + swap",
                 "gds": "GDS (kvikio)"}
# The paper's own series names (Tables 4/5): its direct reads are GPUDirect Storage.
PAPER_NAMES = {"mmap": "mmap", "vm_swap": "virtual memory + swap", "direct": "ESPN (GDS)",
               "direct_prefetch": "ESPN (GDS + prefetcher)"}
EMU = " @ "   # series of rows on an emulated SSD: "<back end> @ <device key>" (analysis.ssd_key)


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


def emulated_ssd_label(name: str, key: str) -> str:
    """Rows run on an emulated slower SSD were measured there, on that device (named by its key)."""
    if key.startswith("emulated+"):
        return f"{name} [measured on an emulated SSD, +{key.split('+')[1][:-2]} µs per read]"
    return f"{name} [measured on an emulated SSD, read-IOPS cap]"


def with_series(df: pd.DataFrame) -> pd.DataFrame:
    """``series``: the back end, with the device key for rows run on an emulated slower SSD, so
    emulated rows are never drawn or tabulated as native ones (one series per device)."""
    df = A.with_ssd(df)
    return df.assign(series=np.where(df.ssd != "native", df.backend + EMU + df.ssd, df.backend))


def is_emu(series: str) -> bool:
    return EMU in series


def kind_of(series: str) -> str:
    return series.split(EMU)[0]


def series_label(series: str, _=None) -> str:
    if is_emu(series):
        kind, key = series.split(EMU, 1)
        return emulated_ssd_label(BACKEND_NAMES.get(kind, kind), key)
    return BACKEND_NAMES.get(series, series)


def threads_words(df: pd.DataFrame) -> str:
    """Each back end's threads, from the e2e records (column threads)."""
    if "threads" not in df:
        return ""
    t = df.dropna(subset=["threads"]).groupby("backend").threads.first()
    return "; ".join(f"{BACKEND_NAMES.get(k, k)}: {v}" for k, v in t.items() if v)


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
        return f"{meth} [measured reads; serial-wait prefetcher; prefetch budget emulated by a sleep]"
    return meth


"""What the Chameleon figures share (not a figure module): legend labels by source, the authors' points
in the paper's style (offset a few points where two of them coincide), plain log ticks with enough labels,
dots on log axes, the datasets' order, the caption's "where", "not run" and "busy" phrases, and the CSV
written beside a figure."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
from matplotlib.transforms import offset_copy
import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.base.atomic import atomic_path
from .. import paper_values
from ..wording import words   # a configuration's name in words, never the profile's id

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
    return " ".join(f"Not run: {', '.join(words(n) for n in sorted(g[col].astype(str).unique()))}: {why}."
                    for why, g in d.groupby("why"))


def label(name: str, source: str) -> str:
    """A configuration's legend name in words, tagged with its source (modelled, emulated)."""
    return plotting.label_source(words(name), source if source in plotting.SOURCE_LABELS else "measured")


def where(prov: dict) -> str:
    """The run's setting in words: the profile and the CPU as lscpu names it (cores and threads)."""
    cpu = (prov.get("machine") or {}).get("cpu") or f"{prov.get('cpu_model')}, {prov.get('cpu_cores')} cores"
    return f"Measured on the {prov.get('profile')} profile, {cpu}"


def paper_point(ax, x, y, name: str, marker: str = "*", dx_pt: float = 0.0) -> None:
    """One of the authors' values, in the paper's colour and marker; ``dx_pt``: drawn that many points right
    (left if negative) of its x, so two of the authors' series at one x stay apart."""
    lines = ax.plot(x, y, **{**plotting.PAPER_STYLE, "marker": marker}, label=plotting.label_source(name, "paper"))
    dodge(lines, dx_pt)


def dodge(artists, dx_pt: float, dy_pt: float = 0.0) -> None:
    """Draw ``artists`` (already plotted, so the axes' limits count their true values) ``dx_pt`` points along
    x (and ``dy_pt`` along y) from their value, so that coinciding series stay apart."""
    if not dx_pt and not dy_pt:
        return
    for a in artists:
        t = offset_copy(a.axes.transData, fig=a.axes.figure, x=dx_pt, y=dy_pt, units="points")
        if hasattr(a, "set_offset_transform") and len(getattr(a, "get_offsets", lambda: [])()):
            a.set_offset_transform(t)      # a scatter: its points move, its marker shapes stay
        else:
            a.set_transform(t)


def dataset_order(names, prov: dict | None = None) -> list:
    """Datasets in the study's order (the profile's ``datasets``, else the paper's: SIFT, Deep, RALM-S, RALM-L),
    the same in every figure; any other name after them, alphabetically."""
    names = list(dict.fromkeys(names))
    ref = list(((prov or {}).get("config") or {}).get("datasets") or []) + list(paper_values.DATASET_MAP)
    rank = {n: i for i, n in reversed(list(enumerate(ref)))}
    return sorted(names, key=lambda n: (rank.get(n, len(ref)), str(n)))


def busy_text(df: pd.DataFrame) -> str:
    """The caption's sentence when records were measured while the machine was busy (``machine_busy``)."""
    if "machine_busy" not in df or not len(df):
        return ""
    b = df["machine_busy"].fillna(False).astype(bool)
    if not b.any():
        return ""
    share = "All" if b.all() else f"{int(b.sum())} of {len(b)}"
    return (f"{share} rows were measured while this machine was busy (machine_busy in the records): timings "
            f"carry that load's noise.")


def log_dots(ax, x, heights, **kw):
    """Values on a log axis as dots (a bar's length means nothing on a log axis)."""
    h = np.asarray(heights, dtype=float)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    return ax.plot(x, h, marker="o", ls="none", ms=7, **kw)


def plain_number(v: float) -> str:
    """A tick value as a plain number: 0.05, 1, 200, 50000, 1,000,000 (never 10^0 beside 2)."""
    return f"{v:g}" if 1e-4 <= abs(v) < 1e5 else f"{v:,.0f}" if abs(v) >= 1e5 else f"{v:.0e}"


def _minor_kept(span: float) -> set:
    """Which mantissas a log axis labels besides the powers of ten, by the decades it spans: at least two or
    three labels however short the range, none between decades once there are several decades."""
    if span < 1.0:
        return {2, 3, 4, 5, 6, 8}
    if span < 1.6:
        return {2, 3, 5}
    if span < 3.2:
        return {2, 5}
    return set()


def _span(axis) -> float:
    lo, hi = sorted(axis.get_view_interval())
    return float(np.log10(hi / lo)) if lo > 0 and hi > 0 else 10.0


class _PlainLogFormatter(mticker.Formatter):
    """Plain-number labels of a log axis; minor ticks labelled only as :func:`_minor_kept` says."""

    def __init__(self, minor: bool):
        self.minor = minor

    def __call__(self, v, pos=None):
        if v <= 0:
            return ""
        if not self.minor:
            return plain_number(v)
        span = _span(self.axis)
        if span < 0.25:   # the narrow-range locator's own ticks: all labelled
            return plain_number(v)
        e = np.floor(np.log10(v) + 1e-9)
        mant = int(round(v / 10 ** e))
        return plain_number(v) if mant in _minor_kept(span) and abs(v / 10 ** e - mant) < 1e-6 else ""


class _LogMinorLocator(mticker.LogLocator):
    """The usual minor ticks of a log axis (2-9 of each decade), and on a range under a quarter of a decade
    plain linear steps (1.2, 1.4, ...) so that it still has several labelled ticks."""

    def __init__(self):
        super().__init__(base=10.0, subs=np.arange(2, 10), numticks=100)

    def tick_values(self, vmin, vmax):
        lo, hi = sorted((vmin, vmax))
        if lo > 0 and np.log10(hi / lo) < 0.25:
            return mticker.MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
        return super().tick_values(vmin, vmax)


def plain_log_ticks(axis) -> None:
    """Log-axis tick labels as plain numbers (0.5, 2, 100), never 2x10^0 beside 10^1, and always at least two
    or three of them: between the powers of ten 2, 3, 5 (and more) are labelled when the range is short."""
    axis.set_minor_locator(_LogMinorLocator())
    axis.set_major_formatter(_PlainLogFormatter(minor=False))
    axis.set_minor_formatter(_PlainLogFormatter(minor=True))


def nice_log_limits(ax, values, pad: float = 1.05, top: bool = True) -> None:
    """y limits of a log axis out to the labelled 1-2-5 values just beyond ``values``, so that every value
    lies between two labelled ticks (``top=False``: the lower limit only, down to the next labelled value of
    a short log axis: 2, 3, 4, 5, 6 or 8 times a power of ten)."""
    v = np.asarray([x for x in np.ravel(values) if np.isfinite(x) and x > 0], dtype=float)
    if not v.size:
        return
    steps = np.array([1, 2, 5, 10] if top else [1, 2, 3, 4, 5, 6, 8, 10])   # the lower limit: a labelled minor

    def down(x):
        e = 10 ** np.floor(np.log10(x))
        return float(steps[steps <= x / e + 1e-9].max() * e)

    def up(x):
        e = 10 ** np.floor(np.log10(x))
        return float(steps[steps >= x / e - 1e-9].min() * e)
    if top:
        ax.set_ylim(down(v.min() / pad), up(v.max() * pad))
    else:
        ax.set_ylim(bottom=down(v.min() / pad))


def legend_below_matching(fig, handles: dict, ncol: int = 3):
    """:func:`plotting.legend_below`, with the legend's handle of each label in ``handles`` replaced (e.g. a
    line with its marker where a series is drawn as lines in some panels and as dots in others)."""
    leg = plotting.legend_below(fig, ncol=ncol)
    labels = [t.get_text() for t in leg.texts]
    hs = [handles.get(lab, h) for lab, h in zip(labels, leg.legend_handles)]
    leg.remove()
    return fig.legend(hs, labels, loc="outside lower center", ncol=ncol, fontsize="small")


def write_csv(df: pd.DataFrame, out_png: Path) -> None:
    with atomic_path(Path(out_png).with_suffix(".csv")) as tmp:
        df.to_csv(tmp, index=False)



def write_md(df: pd.DataFrame, out_png: Path, title: str, names: dict[str, str] | None = None) -> None:
    """The figure's data as a narrow Markdown table beside it (the report shows it in place of the CSV):
    ``title``, then the columns of ``df`` named in words (``names``, else the report's own reading of them)."""
    from ...core.presenting.tables import header_words

    head = [(names or {}).get(c, header_words(c)) for c in df.columns]
    write_md_tables(out_png, [(title, head, df.values.tolist())])


def write_md_tables(out_png: Path, tables: list[tuple[str, list[str], list[list]]]) -> None:
    """Several titled Markdown tables in the file beside the figure (``.md``)."""
    from ...core.base.atomic import write_text
    from ...core.presenting.tables import cell

    lines = []
    for title, head, rows in tables:
        lines += [f"# {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(cell(v).replace("|", "/") for v in row) + " |" for row in rows] + [""]
    write_text(Path(out_png).with_suffix(".md"), "\n".join(lines))

"""One seaborn style for every figure, PNG + PDF output with captions, paper values and labels.

Figures are drawn from records only: a plotting function takes record paths, never measures.
Anything modelled or emulated rather than measured must pass through :func:`label_source` so it is
labelled as such in the figure.
"""
from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..base.atomic import atomic_path, write_text  # noqa: E402

PALETTE = "colorblind"
# seaborn's colorblind palette, spelled out so a figure job need not import seaborn (and scipy) to style
# seaborn's colorblind palette, reordered so that the first six hold no near pair (orange/vermillion,
# blue/sky blue, pink/light pink come apart): most figures have at most six series.
COLORBLIND = ["#0173b2", "#de8f05", "#029e73", "#cc78bc", "#ca9161", "#949494", "#d55e00", "#56b4e9",
              "#ece133", "#fbafe4"]
# The paper's values: one marker and one colour, never used by a series of ours.
PAPER_COLOR = "#222222"
PAPER_STYLE = {"color": PAPER_COLOR, "marker": "*", "markersize": 11, "linestyle": "none",
               "markeredgecolor": "white", "markeredgewidth": 0.5, "zorder": 5}
STRICT_ENV = "BENCH_STRICT_FIGURES"   # tests set it: a legend over data fails instead of warning
SOURCE_LABELS = {
    "measured": "measured",
    "modelled": "modelled (not measured)",
    "emulated": "emulated (not measured)",
    "paper": "paper (authors' value)",
}


def apply_style() -> None:
    """seaborn's whitegrid style, paper context at font scale 1.1 and colorblind palette, set through
    matplotlib's own copies of those style sheets."""
    from cycler import cycler

    plt.style.use(["default", "seaborn-v0_8-whitegrid", "seaborn-v0_8-paper"])  # from defaults: idempotent
    paper = {"font.size": 9.6, **plt.style.library["seaborn-v0_8-paper"]}      # seaborn's paper context
    sizes = {k: paper[k] * 1.1 for k in ("font.size", "axes.labelsize", "axes.titlesize",
                                         "xtick.labelsize", "ytick.labelsize", "legend.fontsize")}
    plt.rcParams.update({**sizes, "axes.prop_cycle": cycler(color=COLORBLIND), "figure.dpi": 110,
                         "savefig.dpi": 150, "savefig.bbox": "tight", "pdf.fonttype": 42,
                         "legend.frameon": False,
                         # seaborn's sheets draw markers without edges, so a hollow marker (mfc="none") vanished
                         "lines.markeredgewidth": 1.2})


# The widest figure, in inches, whose smallest usual text (7 pt) stays >= 10 px on the report page: a PNG wider
# than the page's figure width (bench.core.presenting.figure_checks.PAGE_FIGURE_PX, 1233 px) is scaled down, so its text
# shows at points x 1233 / (72 x width in inches) px whatever the dpi: 7 x 1233 / (72 x 11.5) = 10.4 px.
MAX_WIDTH_IN = 11.5
SQUEEZE = 0.75  # a row of up to 3 panels may narrow to this share of its width before it wraps into more rows


def layout(ncols: int, nrows: int = 1, w: float = 4.2, max_w: float = MAX_WIDTH_IN,
           cols: int | None = None) -> tuple[int, int, float]:
    """(rows, columns, panel width) for ``ncols`` x ``nrows`` panels of width ``w`` in a figure at most
    ``max_w`` inches wide: as asked when it fits; narrower panels when the grid has several rows (kept as
    they are), or for a row of at most 3 panels that keeps :data:`SQUEEZE` of their width; otherwise the row
    wrapped into as few balanced rows as fit (4 panels -> 2 x 2, 5 -> 3 + 2). ``cols`` wraps one row into
    rows of at most that many panels whatever the width (panels whose tick labels need their full width)."""
    if cols and nrows == 1 and ncols > cols:
        return -(-ncols // cols), cols, min(w, max_w / cols)
    if ncols * w <= max_w:
        return nrows, ncols, w
    if nrows > 1 or ncols == 1 or (ncols <= 3 and max_w / ncols >= SQUEEZE * w):
        return nrows, ncols, max_w / ncols
    per_row = max(1, int(max_w // w))
    rows = -(-ncols // per_row)
    per_row = -(-ncols // rows)
    return rows, per_row, min(w, max_w / per_row)


def start(ncols: int = 1, nrows: int = 1, *, w: float = 4.2, h: float = 3.4, cols: int | None = None, **kw):
    """A new figure of ``nrows`` x ``ncols`` panels in the suite's style (constrained layout): the one
    way every study starts a figure. Returns ``(fig, axes)`` with ``axes`` always a flat list.

    The figure is at most :data:`MAX_WIDTH_IN` wide, so its text stays legible as the report shows it
    (:func:`layout`): one row of panels too wide for that wraps into more rows (the flat list keeps its order
    and length; a cell left over is removed), panels of a grid with several rows, or with width ratios, narrow.
    ``cols`` wraps a row into rows of at most that many panels even where narrowing would fit."""
    import matplotlib.pyplot as plt
    import numpy as np

    apply_style()
    wrap = nrows == 1 and "width_ratios" not in kw.get("gridspec_kw", {})
    rows, cols, w = layout(ncols, nrows, w, cols=cols) if wrap else (nrows, ncols, min(w, MAX_WIDTH_IN / ncols))
    if rows != nrows:   # one row wrapped: "share along the row" now means all panels; "along a column", none
        kw = {**kw, **{k: {"row": True, "col": False}.get(kw[k], kw[k]) for k in ("sharex", "sharey") if k in kw}}
    fig, axes = plt.subplots(rows, cols, figsize=(w * cols, h * rows), layout="constrained", squeeze=False, **kw)
    flat = list(np.ravel(axes))
    for extra in flat[ncols * nrows:]:
        fig.delaxes(extra)
    return fig, flat[:ncols * nrows]


def label_source(name: str, source: str) -> str:
    """A legend label saying whether a series is measured, modelled, emulated or the paper's value."""
    if source not in SOURCE_LABELS:
        raise ValueError(f"unknown source {source!r}; one of {sorted(SOURCE_LABELS)}")
    return name if source == "measured" else f"{name} [{SOURCE_LABELS[source]}]"


def panel_scale(ax, scale: str) -> None:
    """Declare the scale of our values in panel ``ax`` (e.g. "20k vectors"): a paper value drawn there by
    :func:`paper_marks` at another scale must carry a per-marker tag (:func:`bench.core.presenting.figure_checks.scale_problems`)."""
    ax._bench_scale = str(scale)


def paper_marks(ax, x, y, label: str, *, scale: str | None = None, tag: str | None = None, **style):
    """The paper's values at their true x (never dodged), in the paper's style (:data:`PAPER_STYLE`, overridden
    by ``style``), ``label`` as given. ``scale``: the scale the authors measured at ("1B vectors"); ``tag``: a
    short text written beside every marker (the per-marker scale tag, e.g. "1B"), needed where ``ax`` holds our
    values at another scale (:func:`panel_scale`). The x and scale are recorded on the artist for the checks."""
    import numpy as np

    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    lines = ax.plot(xs, ys, **{**PAPER_STYLE, **style}, label=label)
    for line in lines:
        line._bench_paper = {"x": xs.copy(), "scale": scale, "tagged": bool(tag)}
    if tag:   # below right of the marker, clear of its outline
        off = {**PAPER_STYLE, **style}["markersize"] / 2 + 1
        for xi, yi in zip(xs, ys):
            if np.isfinite(xi) and np.isfinite(yi):
                ax.annotate(tag, (xi, yi), textcoords="offset points", xytext=(off, -off / 2), ha="left", va="top",
                            fontsize="small", color=PAPER_COLOR)
    return lines


def colors(names) -> dict:
    """One colour per series name, the same in every panel of a figure (sorted names, colorblind palette)."""
    names = sorted(dict.fromkeys(names))
    return {n: COLORBLIND[i % len(COLORBLIND)] for i, n in enumerate(names)}


def not_run(ax, why: str) -> None:
    """Mark an empty panel: it says "not run" and why, in the figure itself."""
    ax.text(0.5, 0.5, f"not run\n{why}", ha="center", va="center", transform=ax.transAxes,
            fontsize="small", wrap=True, color="0.3")
    ax.set_xticks([])
    ax.set_yticks([])


def legend_below(fig, ax=None, ncol: int = 3, **kw):
    """One legend for the figure, outside and below the axes (needs layout="constrained"), in ``ncol``
    columns or fewer: as many as keep it within the figure's width."""
    handles, labels = [], []
    for a in ([ax] if ax is not None else fig.axes):
        for h, l in zip(*a.get_legend_handles_labels()):
            if l not in labels and not l.startswith("_"):
                handles.append(h)
                labels.append(l)
        if a.get_legend() is not None:
            a.get_legend().remove()
    # ours first, in drawing order; the paper's values (their own marker) after them
    order = sorted(range(len(labels)), key=lambda i: "paper" in labels[i].lower())
    handles, labels = [handles[i] for i in order], [labels[i] for i in order]
    ncol = max(1, min(ncol, len(labels)))
    while True:   # fewer columns while the legend is wider than the figure (it would widen the PNG, shrinking it all)
        leg = fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize="small", **kw)
        if ncol == 1 or leg.get_window_extent(fig.canvas.get_renderer()).width <= fig.bbox.width:
            return leg
        leg.remove()
        ncol -= 1


def _densify(pts, step_px: float = 2.0):
    """Points every ``step_px`` pixels along a polyline (display space), so a segment counts, not only
    its vertices."""
    import numpy as np

    out = [pts[:1]]
    for p0, p1 in zip(pts[:-1], pts[1:]):
        n = int(np.hypot(*(p1 - p0)) // step_px) + 1
        out.append(p0 + (p1 - p0) * np.linspace(0, 1, n + 1)[1:, None])
    return np.concatenate(out)


def _data_points(ax):
    """Display-space points of what an axes plots: lines (densified) and scatter offsets."""
    import numpy as np

    chunks = [np.empty((0, 2))]
    for line in ax.get_lines():
        xy = np.asarray(line.get_xydata(), dtype=float)
        if len(xy):
            pts = ax.transData.transform(xy)
            pts = pts[np.isfinite(pts).all(1)]
            if len(pts):
                chunks.append(_densify(pts) if line.get_linestyle() not in ("None", "none", "") else pts)
    for coll in ax.collections:
        offs = np.asarray(coll.get_offsets(), dtype=float)
        if len(offs):
            pts = coll.get_offset_transform().transform(offs)
            chunks.append(pts[np.isfinite(pts).all(1)])
    return np.concatenate(chunks)


def legend_overlaps(fig) -> list[str]:
    """Legends whose box covers plotted data (line segments, points, bars) in any axes of ``fig``."""
    from matplotlib.transforms import Bbox

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = list(fig.legends) + [a.get_legend() for a in fig.axes if a.get_legend() is not None]
    found = []
    for leg in legends:
        box = leg.get_window_extent(renderer).shrunk(0.98, 0.98)
        for ax in fig.axes:
            area = ax.get_window_extent(renderer)      # only what is drawn: clip to the axes
            pts = _data_points(ax)
            pts = pts[(pts[:, 0] >= area.x0) & (pts[:, 0] <= area.x1) & (pts[:, 1] >= area.y0) & (pts[:, 1] <= area.y1)]
            inside = ((pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1))
            bars = (Bbox.intersection(pa.get_window_extent(renderer), area) for pa in ax.patches)
            if inside.any() or any(bb is not None and bb.width > 0 and bb.height > 0 and box.overlaps(bb)
                                   for bb in bars):
                first = leg.texts[0].get_text() if leg.texts else ""
                found.append(f"legend '{leg.get_title().get_text() or first}' covers data in panel '{ax.get_title()}'")
                break
    return found


FORMATS = ["png", "pdf"]   # what save() writes; set_formats() changes it (the profile's figure_formats)


def set_formats(formats) -> None:
    """The formats every later :func:`save` writes: PNG always (the report shows it), PDF/SVG optional."""
    formats = list(dict.fromkeys(formats))
    bad = [f for f in formats if f not in ("png", "pdf", "svg")]
    if bad or "png" not in formats:
        raise ValueError(f"figure formats {formats}: png plus any of pdf, svg")
    FORMATS[:] = formats


def _sources_chunk(fig) -> dict:
    """The PNG text chunk naming the sources the figure draws (measured, modelled, emulated, paper), which
    the tag check against the ledger reads (:func:`bench.core.presenting.figure_checks.tag_mismatches`)."""
    from .figure_checks import SOURCES_KEY, drawn_sources

    return {SOURCES_KEY: ",".join(sorted(drawn_sources(fig)))}


def _check_legible(fig, png: Path) -> None:
    """The smallest text of ``fig`` as the report page shows ``png`` (:func:`bench.core.presenting.figure_checks.legibility`):
    under 10 px an error in the tests (``BENCH_STRICT_FIGURES=1``); otherwise a warning beside the caption,
    ``NAME.legibility.txt`` (removed once the figure passes), so a run never stops for it."""
    from .figure_checks import legibility

    dpi = plt.rcParams["savefig.dpi"]
    _, _, problem = legibility(fig, png, fig.dpi if dpi == "figure" else float(dpi))
    note = png.with_suffix(".legibility.txt")
    if problem is None:
        note.unlink(missing_ok=True)
    elif os.environ.get(STRICT_ENV) == "1":
        plt.close(fig)
        raise AssertionError(f"{png.name}: {problem}")
    else:
        write_text(note, f"warning: {png.name}: {problem}\n")


def save(fig, out_png: str | os.PathLike, caption: str | None = None) -> list[Path]:
    """Save ``fig`` as PNG and the other :data:`FORMATS` (same stem) atomically; write the caption next to them.

    Under ``BENCH_STRICT_FIGURES=1`` (the tests, which render every registered figure) a legend covering
    plotted data, or a problem :mod:`bench.core.presenting.figure_checks` finds, is an error; the pipeline skips the
    checks (they cost one more full draw per figure). Text under 10 px as the report shows the PNG is an
    error under the same flag and a warning file beside the caption otherwise (:func:`_check_legible`)."""
    if os.environ.get(STRICT_ENV) == "1":
        from .figure_checks import problems

        bad = legend_overlaps(fig) + problems(fig, caption)
        if bad:
            plt.close(fig)
            raise AssertionError(f"{out_png}: " + "; ".join(bad))
    png = Path(out_png)
    if png.suffix != ".png":
        raise ValueError(f"figure output must end in .png, got {png}")
    written = []
    for path in [png] + [png.with_suffix(f".{f}") for f in FORMATS if f != "png"]:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=path.suffix[1:], **({"metadata": _sources_chunk(fig)} if path == png else {}))
        written.append(path)
        if path == png:
            _check_legible(fig, png)
    plt.close(fig)
    if caption:
        written.append(write_text(png.with_suffix(".caption.rst"), caption.strip() + "\n"))
    return written

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

from .atomic import atomic_path, write_text  # noqa: E402

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


def start(ncols: int = 1, nrows: int = 1, *, w: float = 4.2, h: float = 3.4, **kw):
    """A new figure of ``nrows`` x ``ncols`` panels in the suite's style (constrained layout): the one
    way every study starts a figure. Returns ``(fig, axes)`` with ``axes`` always a flat list."""
    import matplotlib.pyplot as plt
    import numpy as np

    apply_style()
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows), layout="constrained", squeeze=False,
                             **kw)
    return fig, list(np.ravel(axes))


def label_source(name: str, source: str) -> str:
    """A legend label saying whether a series is measured, modelled, emulated or the paper's value."""
    if source not in SOURCE_LABELS:
        raise ValueError(f"unknown source {source!r}; one of {sorted(SOURCE_LABELS)}")
    return name if source == "measured" else f"{name} [{SOURCE_LABELS[source]}]"


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
    """One legend for the figure, outside and below the axes (needs layout="constrained")."""
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
    return fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize="small", **kw)


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


def save(fig, out_png: str | os.PathLike, caption: str | None = None) -> list[Path]:
    """Save ``fig`` as PNG and the other :data:`FORMATS` (same stem) atomically; write the caption next to them.

    Under ``BENCH_STRICT_FIGURES=1`` (the tests, which render every registered figure) a legend covering
    plotted data, or a problem :mod:`bench.core.figure_checks` finds, is an error; the pipeline skips the
    checks (they cost one more full draw per figure)."""
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
            fig.savefig(tmp, format=path.suffix[1:])
        written.append(path)
    plt.close(fig)
    if caption:
        written.append(write_text(png.with_suffix(".caption.rst"), caption.strip() + "\n"))
    return written

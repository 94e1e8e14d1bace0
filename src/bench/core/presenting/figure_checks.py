"""A referee's checks of a drawn figure (the figure-suite issue), run on every registered figure by the
tests (``BENCH_STRICT_FIGURES=1``, see :func:`bench.core.presenting.plotting.save`):

- no bars on a log axis (a bar's length means nothing there);
- no legend entry without a visible handle (a hollow marker with no edge, a line style "none" and no marker);
- no two legend entries whose colours are within ΔE 10 (CIE76) and whose line style and marker are also
  the same, so they could not be told apart;
- no numpy repr (``np.float64(0.5)``) in a caption;
- the paper's markers at their true x, and a paper value at another scale than ours in one panel tagged
  per marker (:func:`scale_problems`, the rule for scale);
- no text smaller than 10 px as the report shows it (:func:`legibility`): the report page shows a figure at
  most :data:`PAGE_FIGURE_PX` wide, so a wider PNG is scaled down and its text with it.

The legend-covers-data check is :func:`bench.core.presenting.plotting.legend_overlaps`.
"""
from __future__ import annotations

import re

import numpy as np

NUMPY_REPR = re.compile(r"\bnp\.(float|int|uint|bool)\w*\(")
MIN_DELTA_E = 10.0
# The widest a figure is shown on the report page (bench.core.presenting.report.STYLE: img max-width 100% in a body
# padded 16 px each side) at a 1280 px browser window with its 15 px scrollbar: 1280 - 15 - 2 x 16 = 1233 px,
# as headless Chromium measures it (the img's clientWidth). tests/core/test_plotting.py checks STYLE still says so.
PAGE_WINDOW_PX, SCROLLBAR_PX, BODY_PADDING_PX = 1280, 15, 16
PAGE_FIGURE_PX = PAGE_WINDOW_PX - SCROLLBAR_PX - 2 * BODY_PADDING_PX
MIN_TEXT_PX = 10.0   # the smallest text a reader should meet on the page, in CSS px


def bars_on_log_axes(fig) -> list[str]:
    from matplotlib.container import BarContainer

    bad = []
    for ax in fig.axes:
        for c in ax.containers:
            if not isinstance(c, BarContainer) or not len(c.patches):
                continue
            if "log" in (ax.get_xscale(), ax.get_yscale()):   # a bar's length or width means nothing there
                bad.append(f"bars on a log axis in panel '{ax.get_title()}'")
                break
    return bad


def _visible(handle) -> bool:
    from matplotlib.lines import Line2D

    if not isinstance(handle, Line2D):
        return True
    line = handle.get_linestyle() not in ("None", "none", "", " ") and handle.get_linewidth() > 0
    marker = handle.get_marker() not in (None, "None", "none", "", " ")
    if marker and str(handle.get_markerfacecolor()).lower() == "none" and handle.get_markeredgewidth() <= 0:
        marker = False
    return line or marker


def _legends(fig):
    return list(fig.legends) + [a.get_legend() for a in fig.axes if a.get_legend() is not None]


def _originals(fig) -> dict:
    """Label -> the artist it stands for (the legend's own handle of an errorbar is its bar collection)."""
    from matplotlib.container import BarContainer, ErrorbarContainer

    out = {}
    for ax in fig.axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if isinstance(h, ErrorbarContainer):
                h = h.lines[0] if h.lines[0] is not None else h
            elif isinstance(h, BarContainer) and len(h.patches):
                h = h.patches[0]
            out.setdefault(label, h)
    return out


def _handles(fig, leg):
    orig = _originals(fig)
    return [(orig.get(t.get_text(), h), t) for h, t in zip(leg.legend_handles, leg.texts)]


def empty_legend_entries(fig) -> list[str]:
    bad = []
    for leg in _legends(fig):
        for h, t in _handles(fig, leg):
            if h is not None and not _visible(h):
                bad.append(f"legend entry '{t.get_text()}' has nothing drawn")
    return bad


def _lab(rgb) -> np.ndarray:
    r = np.asarray(rgb[:3], dtype=float)
    r = np.where(r > 0.04045, ((r + 0.055) / 1.055) ** 2.4, r / 12.92)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = m @ r / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _style(handle) -> tuple[str, np.ndarray | None]:
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if isinstance(handle, Line2D):
        return f"{handle.get_linestyle()}|{handle.get_marker()}", np.array(to_rgba(handle.get_color()))
    if isinstance(handle, Patch):
        return f"patch|{handle.get_hatch()}", np.array(handle.get_facecolor())
    try:   # a scatter: its marker's outline and whether it is filled tell entries apart too
        path = handle.get_paths()[0].vertices.round(2).tobytes().hex()[:24]
        fc = handle.get_facecolor()
        rgba = np.array(fc[0]) if len(fc) else np.array(handle.get_edgecolor()[0])
        return f"collection|{path}|{'filled' if len(fc) and fc[0][3] > 0 else 'hollow'}", rgba
    except (AttributeError, IndexError):
        return "other", None


def close_colours(fig) -> list[str]:
    bad = []
    for leg in _legends(fig):
        seen = []
        for h, t in _handles(fig, leg):
            style, rgba = _style(h)
            if rgba is None:
                continue
            for other, ostyle, orgba in seen:
                if ostyle == style and np.linalg.norm(_lab(rgba) - _lab(orgba)) < MIN_DELTA_E:
                    bad.append(f"'{t.get_text()}' and '{other}' cannot be told apart (colour within ΔE "
                               f"{MIN_DELTA_E:g}, same style)")
            seen.append((t.get_text(), style, rgba))
    return bad


def caption_problems(caption: str | None) -> list[str]:
    return ["a numpy repr in the caption"] if caption and NUMPY_REPR.search(caption) else []


def _axis_texts(axis) -> list:
    """The texts an axis draws: its label, offset text and the tick labels of the ticks in view."""
    try:
        ticks = axis._update_ticks()          # the ticks drawn (in view), labels set
    except AttributeError:                    # pragma: no cover - older matplotlib
        ticks = axis.get_major_ticks()
    out = [axis.label, axis.offsetText]
    for t in ticks:
        out += [t.label1, t.label2]
    return out


def _texts(artist, out: list) -> list:
    """Every visible, non-empty Text under ``artist`` (skipping hidden subtrees and axes switched off)."""
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.text import Text

    if not artist.get_visible() or artist.get_alpha() == 0:
        return out
    if isinstance(artist, Text):
        if artist.get_text().strip():
            out.append(artist)
        return out
    if isinstance(artist, Axis):
        for t in _axis_texts(artist):
            _texts(t, out)
        return out
    for child in artist.get_children():
        if isinstance(artist, Axes) and not artist.axison and isinstance(child, Axis):
            continue
        _texts(child, out)
    return out


def smallest_text(fig) -> tuple[float, str] | None:
    """(font size in points, the text) of the smallest visible text of ``fig``: titles, axis labels, tick
    labels, legend entries, annotations; None for a figure with no text."""
    texts = _texts(fig, [])
    if not texts:
        return None
    t = min(texts, key=lambda t: t.get_fontsize())
    return float(t.get_fontsize()), t.get_text().strip().replace("\n", " ")[:40]


def png_width(path) -> int:
    """A PNG's width in pixels (its IHDR chunk)."""
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    return int.from_bytes(head[16:20], "big")


def displayed_px(points: float, dpi: float, width_px: int, page_px: int = PAGE_FIGURE_PX) -> float:
    """How tall ``points`` of text in a PNG saved at ``dpi`` and ``width_px`` wide is on the page, in CSS px:
    points x dpi/72 x (display width / image width), the display width being min(image width, ``page_px``)."""
    return points * dpi / 72.0 * min(width_px, page_px) / width_px


def legibility(fig, png, dpi: float) -> tuple[float, str, str | None]:
    """(smallest text as displayed in px, that text, a problem or None) for ``fig`` saved as ``png`` at ``dpi``."""
    small = smallest_text(fig)
    if small is None:
        return float("inf"), "", None
    points, text = small
    px = displayed_px(points, dpi, png_width(png))
    problem = None
    if px < MIN_TEXT_PX:
        problem = (f"smallest text '{text}' ({points:.1f} pt) is {px:.1f} px as shown on the report page "
                   f"(under {MIN_TEXT_PX:g} px; the PNG is {png_width(png)} px wide, shown at most "
                   f"{PAGE_FIGURE_PX} px): fewer panels per row, or larger text")
    return px, text, problem


def _is_paper(artist) -> bool:
    return hasattr(artist, "_bench_paper") or "paper" in str(artist.get_label()).lower()


def _ours_drawn(ax) -> bool:
    """Whether ``ax`` draws any values of ours (a line, scatter or bar not labelled as the paper's)."""
    from matplotlib.patches import Rectangle

    for a in list(ax.lines) + list(ax.collections):
        if _is_paper(a):
            continue
        data = a.get_xydata() if hasattr(a, "get_xydata") else a.get_offsets()
        if len(data) and not str(a.get_label()).startswith("_child") and not _reference_line(a):
            return True
    return any(isinstance(p, Rectangle) and p.get_height() and not _is_paper(p) for p in ax.patches)


def _reference_line(a) -> bool:
    """A horizontal or vertical rule (axhline: y = 1, a threshold), not data."""
    from matplotlib.lines import Line2D

    if not isinstance(a, Line2D):
        return False
    xy = np.asarray(a.get_xydata(), dtype=float)
    return len(xy) == 2 and (xy[0, 0] == xy[1, 0] or xy[0, 1] == xy[1, 1]) and a.get_marker() in ("None", "", None)


def scale_problems(fig) -> list[str]:
    """The rule for scale: the paper's markers stay at their true x (not drawn through an offset, and
    where :func:`bench.core.presenting.plotting.paper_marks` recorded their x, drawn there), and a paper value at another
    scale than our values in the same panel (:func:`bench.core.presenting.plotting.panel_scale`) carries a per-marker tag."""
    bad = []
    for ax in fig.axes:
        ours = getattr(ax, "_bench_scale", None)
        for a in list(ax.lines) + list(ax.collections):
            if not _is_paper(a):
                continue
            name = str(a.get_label())
            moved = (a.get_offset_transform() if hasattr(a, "get_offsets") and len(a.get_offsets())
                     else a.get_transform())
            if moved not in (ax.transData, ax.get_xaxis_transform(), ax.get_yaxis_transform()):  # rules: axhline
                bad.append(f"paper marker '{name}' drawn off its true x (an offset) in panel '{ax.get_title()}'")
            rec = getattr(a, "_bench_paper", None)
            if rec is None:
                continue
            drawn = np.asarray(a.get_xdata(), dtype=float) if hasattr(a, "get_xdata") else None
            if drawn is not None and (drawn.shape != rec["x"].shape or not np.allclose(drawn, rec["x"], equal_nan=True)):
                bad.append(f"paper marker '{name}' not at its declared x in panel '{ax.get_title()}'")
            if ours and rec["scale"] and rec["scale"] != ours and not rec["tagged"] and _ours_drawn(ax):
                bad.append(f"paper values '{name}' at {rec['scale']} beside ours at {ours} in panel "
                           f"'{ax.get_title()}' with no per-marker scale tag (own panel, or a tag)")
    return bad


def problems(fig, caption: str | None = None) -> list[str]:
    return (bars_on_log_axes(fig) + empty_legend_entries(fig) + close_colours(fig) + caption_problems(caption)
            + scale_problems(fig))


# --- Tags against the ledger ----------------------------------------------------------------------------
SOURCES_KEY = "bench-sources"   # the PNG text chunk naming the sources a figure draws (plotting.save writes it)
_TAGS = {"modelled": "[modelled (not measured)]", "emulated": "[emulated (not measured)]"}


_BRACKET = re.compile(r"\[([^\]]*)\]")


def _tagged(text: str) -> set[str]:
    """The sources a text's bracketed tags name: "[modelled (not measured)]" -> modelled, "[accelerator
    emulated, CPU measured]" -> emulated and measured, "[measured on an emulated SSD]" -> both."""
    found = set()
    for tag in _BRACKET.findall(text):
        for s in ("modelled", "emulated"):
            if s in tag:
                found.add(s)
        if re.search(r"(?<!not )\bmeasured\b", tag):
            found.add("measured")
    return found


def drawn_sources(fig) -> set[str]:
    """The sources ``fig`` tags its series with (:func:`bench.core.presenting.plotting.label_source`, or any bracketed
    tag naming modelled, emulated or measured): tags in legend entries, titles and notes; "measured" for a
    legend entry with no tag (not the paper's) or a figure with no tag at all; "paper" for the paper's values."""
    texts = [t.get_text() for t in _texts(fig, [])]
    entries = [t.get_text() for leg in _legends(fig) for t in leg.texts if t.get_text().strip()]
    found = set().union(*(_tagged(t) for t in texts))
    for e in entries:
        if "paper" in e.lower():
            found.add("paper")
        elif not _tagged(e):
            found.add("measured")
    if not found - {"paper"}:
        found.add("measured")
    return found


def png_sources(png) -> set[str] | None:
    """The sources a saved PNG says it draws (its ``bench-sources`` text chunk); None for a PNG without one."""
    from PIL import Image

    with Image.open(png) as im:
        raw = im.text.get(SOURCES_KEY) if hasattr(im, "text") else None
    return None if raw is None else {s for s in raw.split(",") if s}


def tag_mismatches(claims, figures: dict) -> list[str]:
    """Ledger rows whose source (measured, modelled, emulated) no figure backing them draws: the rows a figure
    backs are :func:`bench.core.presenting.report_links.link`'s; ``figures`` is {study: [png, ...]}. A row backed by no
    figure, a not-run row and a PNG saved without its sources are not judged."""
    from pathlib import Path

    from .report_links import link

    links = link(claims, figures)
    by_stem = {(s, Path(p).stem): Path(p) for s, pngs in figures.items() for p in pngs}
    bad = []
    for r in claims.itertuples(index=False):
        if r.source not in ("measured", "modelled", "emulated"):
            continue
        for stem in links.get((r.study, r.claim_id), []):
            drawn = png_sources(by_stem[(r.study, stem)])
            if drawn is not None and r.source not in drawn:
                bad.append(f"{r.study}/{stem}: ledger row {r.claim_id} is {r.source}, the figure draws "
                           f"{', '.join(sorted(drawn))}")
    return bad

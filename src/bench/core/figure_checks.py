"""A referee's checks of a drawn figure (the figure-suite issue), run on every registered figure by the
tests (``BENCH_STRICT_FIGURES=1``, see :func:`bench.core.plotting.save`):

- no bars on a log axis (a bar's length means nothing there);
- no legend entry without a visible handle (a hollow marker with no edge, a line style "none" and no marker);
- no two legend entries whose colours are within ΔE 10 (CIE76) and whose line style and marker are also
  the same, so they could not be told apart;
- no numpy repr (``np.float64(0.5)``) in a caption.

The legend-covers-data check is :func:`bench.core.plotting.legend_overlaps`.
"""
from __future__ import annotations

import re

import numpy as np

NUMPY_REPR = re.compile(r"\bnp\.(float|int|uint|bool)\w*\(")
MIN_DELTA_E = 10.0


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


def problems(fig, caption: str | None = None) -> list[str]:
    return bars_on_log_axes(fig) + empty_legend_entries(fig) + close_colours(fig) + caption_problems(caption)

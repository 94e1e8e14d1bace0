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
import seaborn as sns  # noqa: E402

from .atomic import atomic_path, write_text  # noqa: E402

PALETTE = "colorblind"
SOURCE_LABELS = {
    "measured": "measured",
    "modelled": "modelled (not measured)",
    "emulated": "emulated (not measured)",
    "paper": "paper (authors' value)",
}


def apply_style() -> None:
    sns.set_theme(context="paper", style="whitegrid", palette=PALETTE, font_scale=1.1)
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 150, "savefig.bbox": "tight",
                         "pdf.fonttype": 42, "legend.frameon": False})


def label_source(name: str, source: str) -> str:
    """A legend label saying whether a series is measured, modelled, emulated or the paper's value."""
    if source not in SOURCE_LABELS:
        raise ValueError(f"unknown source {source!r}; one of {sorted(SOURCE_LABELS)}")
    return name if source == "measured" else f"{name} [{SOURCE_LABELS[source]}]"


def save(fig, out_png: str | os.PathLike, caption: str | None = None) -> list[Path]:
    """Save ``fig`` as PNG and PDF (same stem) atomically; write the caption next to them."""
    png = Path(out_png)
    if png.suffix != ".png":
        raise ValueError(f"figure output must end in .png, got {png}")
    written = []
    for path in (png, png.with_suffix(".pdf")):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=path.suffix[1:])
        written.append(path)
    plt.close(fig)
    if caption:
        written.append(write_text(png.with_suffix(".caption.rst"), caption.strip() + "\n"))
    return written

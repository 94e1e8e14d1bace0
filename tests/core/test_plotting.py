"""Plotting: PNG + PDF + caption written atomically; sources labelled."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from bench.core import plotting


def test_save_writes_png_pdf_and_caption(tmp_path):
    plotting.apply_style()
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4], label=plotting.label_source("ChamVS", "modelled"))
    out = plotting.save(fig, tmp_path / "f.png", caption="A caption.")
    assert [p.name for p in out] == ["f.png", "f.pdf", "f.caption.rst"]
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "f.pdf").read_bytes()[:4] == b"%PDF"


def test_labels():
    assert plotting.label_source("x", "measured") == "x"
    assert "modelled" in plotting.label_source("x", "modelled")
    assert "paper" in plotting.label_source("x", "paper")
    with pytest.raises(ValueError):
        plotting.label_source("x", "guessed")
    with pytest.raises(ValueError):
        plotting.save(plt.figure(), "f.jpg")


def test_formats_follow_the_profile(tmp_path):
    try:
        plotting.set_formats(["png"])
        fig, _ = plt.subplots()
        out = plotting.save(fig, tmp_path / "g.png")
        assert [p.name for p in out] == ["g.png"] and not (tmp_path / "g.pdf").exists()
        with pytest.raises(ValueError, match="png plus"):
            plotting.set_formats(["pdf"])
    finally:
        plotting.set_formats(["png", "pdf"])

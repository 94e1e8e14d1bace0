"""Plotting: PNG + PDF + caption written atomically; sources labelled."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from bench.core.presenting import plotting


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


def test_the_page_width_the_check_assumes_is_the_report_pages():
    """figure_checks.PAGE_FIGURE_PX follows report.STYLE: images at most 100% of a body padded 16 px a side."""
    from bench.core.presenting import figure_checks, report

    assert "img{max-width:100%" in report.STYLE.replace(" ", "")
    assert "padding:12px16px" in report.STYLE.replace(" ", "")
    assert figure_checks.PAGE_FIGURE_PX == 1280 - 15 - 2 * 16 == 1233


def test_displayed_text_size():
    from bench.core.presenting.figure_checks import displayed_px

    assert displayed_px(7.2, 150, 1000) == pytest.approx(15.0)             # narrower than the page: native
    assert displayed_px(7.2, 150, 2466) == pytest.approx(15.0 * 1233 / 2466)  # twice too wide: half size


def _wide(tmp_path, ncols: int, **start_kw):
    fig, axes = plotting.start(ncols, **start_kw)
    for i, ax in enumerate(axes):
        ax.plot([0, 1], [0, 1])
        ax.set_title(f"panel {i}")
        ax.annotate("a small note", (0.5, 0.5), fontsize="x-small")
    return fig, axes


def test_small_text_on_a_wide_figure_fails_strict_and_warns_otherwise(tmp_path, monkeypatch):
    from bench.core.presenting import figure_checks

    plotting.apply_style()
    fig, ax = plt.subplots(figsize=(16, 3))
    ax.plot([0, 1], [0, 1])
    ax.annotate("tiny words", (0.5, 0.5), fontsize=7)
    small = figure_checks.smallest_text(fig)
    assert small == (7.0, "tiny words")
    monkeypatch.setenv(plotting.STRICT_ENV, "1")
    with pytest.raises(AssertionError, match=r"wide.png: smallest text 'tiny words' \(7.0 pt\) is \d\.\d px"):
        plotting.save(fig, tmp_path / "wide.png")
    monkeypatch.setenv(plotting.STRICT_ENV, "0")
    fig, ax = plt.subplots(figsize=(16, 3))
    ax.annotate("tiny words", (0.5, 0.5), fontsize=7)
    plotting.save(fig, tmp_path / "wide.png", caption="c")
    assert "tiny words" in (tmp_path / "wide.legibility.txt").read_text()   # a warning beside the caption
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.annotate("tiny words", (0.5, 0.5), fontsize=7)
    plotting.save(fig, tmp_path / "wide.png", caption="c")
    assert not (tmp_path / "wide.legibility.txt").exists()                  # gone once it passes


def test_hidden_and_empty_text_does_not_count():
    from bench.core.presenting import figure_checks

    plotting.apply_style()
    fig, (a, b) = plt.subplots(1, 2)
    a.text(0.5, 0.5, "hidden", fontsize=3).set_visible(False)
    a.text(0.5, 0.5, "   ", fontsize=2)
    b.set_xticks([0, 1], ["x", "y"], fontsize=4)
    b.axis("off")                                  # an axes switched off draws no tick labels
    a.set_title("title", fontsize=9)
    assert figure_checks.smallest_text(fig)[1] != "hidden"
    assert figure_checks.smallest_text(fig)[0] >= 8


@pytest.mark.parametrize("ncols,w,shape", [(4, 3.75, (2, 2)), (2, 7.5, (1, 2)), (2, 9, (2, 1)), (3, 14 / 3, (1, 3)), (5, 3.9, (3, 2)),
                                           (2, 4, (1, 2))])
def test_a_wide_row_of_panels_wraps_and_keeps_its_order(tmp_path, ncols, w, shape):
    fig, axes = _wide(tmp_path, ncols, w=w, h=3)
    assert len(axes) == ncols and len(fig.axes) == ncols        # a cell left over is removed
    rows = sorted({round(ax.get_position().y0, 3) for ax in axes}, reverse=True)
    assert len(rows) == shape[0]
    assert fig.get_size_inches()[0] <= plotting.MAX_WIDTH_IN + 1e-9
    assert [ax.get_title() for ax in axes] == [f"panel {i}" for i in range(ncols)]
    plotting.save(fig, tmp_path / "wrapped.png")                 # strict in the tests: it passes the 10 px check


def test_a_wrapped_row_shares_y_across_all_its_panels():
    fig, axes = plotting.start(4, w=3.75, sharey="row")
    axes[0].set_ylim(0, 7)
    assert axes[3].get_ylim() == (0, 7)
    plt.close(fig)


def test_a_figure_tagged_modelled_does_not_back_a_measured_row(tmp_path):
    import pandas as pd

    from bench.core.presenting.figure_checks import png_sources, tag_mismatches

    fig, (ax,) = plotting.start()
    ax.plot([0, 1], [0, 1], label=plotting.label_source("threshold", "modelled"))
    ax.plot([0, 1], [1, 2], "*", label=plotting.label_source("paper", "paper"))
    ax.legend()
    plotting.save(fig, tmp_path / "eq4.png")
    fig, (ax,) = plotting.start()
    ax.plot([0, 1], [0, 1], label="reader")
    ax.legend()
    plotting.save(fig, tmp_path / "iops.png")
    assert png_sources(tmp_path / "eq4.png") == {"modelled", "paper"}
    assert png_sources(tmp_path / "iops.png") == {"measured"}
    rows = pd.DataFrame({"study": "s", "claim_id": ["a", "b", "c"], "claim": "x", "paper_value": "",
                         "source": ["measured", "modelled", "not_run"], "figure": ["eq4", "eq4", "eq4"]})
    figs = {"s": [tmp_path / "eq4.png", tmp_path / "iops.png"]}
    assert tag_mismatches(rows, figs) == ["s/eq4: ledger row a is measured, the figure draws modelled, paper"]
    rows["figure"] = ["iops", "eq4", "iops"]
    assert tag_mismatches(rows, figs) == []


def test_a_legend_below_keeps_within_the_figure_width():
    fig, (ax,) = plotting.start(w=5)
    for i in range(6):
        ax.plot([0, 1], [i, i], label=f"a long series name number {i} that goes on and on")
    leg = plotting.legend_below(fig, ncol=6)
    assert leg.get_window_extent(fig.canvas.get_renderer()).width <= fig.bbox.width
    assert 1 <= leg._ncols < 6
    plt.close(fig)


def test_cols_wraps_a_row_that_would_otherwise_narrow():
    assert plotting.layout(3, 1, 5.0) == (1, 3, plotting.MAX_WIDTH_IN / 3)
    assert plotting.layout(3, 1, 5.0, cols=2) == (2, 2, 5.0)
    fig, axes = plotting.start(3, w=5.0, cols=2)
    assert len(fig.axes) == 3 and fig.get_size_inches()[0] == pytest.approx(10.0)
    plt.close(fig)


def test_bracketed_tags_name_their_sources():
    from bench.core.presenting.figure_checks import _tagged

    assert _tagged("x [modelled (not measured)]") == {"modelled"}
    assert _tagged("offload [accelerator emulated, CPU measured]") == {"emulated", "measured"}
    assert _tagged("direct I/O [measured on an emulated SSD, +100 µs per read]") == {"emulated", "measured"}
    assert _tagged("direct I/O") == set()

"""Issue 32's rules for figures that the drawing helpers record: the paper's markers at their true x, a paper
value at another scale than ours tagged per marker or in a panel of its own (bench.core.presenting.figure_checks.
scale_problems), the claims a figure declares it shows (report_links), and the page's legibility note."""
from __future__ import annotations

import pandas as pd
import pytest

from bench.core.presenting import figure_checks, plotting, report, report_links
from bench.core.presenting.figures import Registry, figure


def _fig(ncols=1):
    return plotting.start(ncols)


def test_paper_marks_at_their_true_x_pass():
    fig, (ax,) = _fig()
    ax.plot([1, 2, 3], [1, 2, 3], "o-", label="ours")
    plotting.paper_marks(ax, [1, 2], [1.5, 2.5], plotting.label_source("authors", "paper"))
    assert figure_checks.scale_problems(fig) == []


def test_a_dodged_paper_marker_is_caught():
    from matplotlib.transforms import offset_copy

    fig, (ax,) = _fig()
    ax.plot([1, 2], [1, 2], "o-", label="ours")
    (line,) = ax.plot([1, 2], [1, 2], **plotting.PAPER_STYLE, label="paper: their value")
    line.set_transform(offset_copy(ax.transData, fig=fig, x=6, units="points"))
    assert any("off its true x" in p for p in figure_checks.scale_problems(fig))


def test_a_paper_marker_moved_from_its_declared_x_is_caught():
    fig, (ax,) = _fig()
    (line,) = plotting.paper_marks(ax, [64, 128], [0.99, 0.997], "paper: two values")
    line.set_xdata([64 * 1.12, 128 * 1.12])   # "drawn just right of n"
    assert any("declared x" in p for p in figure_checks.scale_problems(fig))


def test_paper_reference_rules_are_not_markers_off_their_x():
    fig, (ax,) = _fig()
    ax.plot([1, 2], [1, 2], "o-", label="ours")
    ax.axhline(7.2, color=plotting.PAPER_COLOR, label="paper: 7.2x")
    ax.axvline(100, color=plotting.PAPER_COLOR, label="paper bound: 0.1 ms")
    assert figure_checks.scale_problems(fig) == []


def test_another_scale_beside_ours_needs_a_tag_or_its_own_panel():
    fig, (ax, own) = _fig(2)
    ax.plot([1, 4, 16], [0.4, 0.6, 0.4], "o", label="ours")
    plotting.panel_scale(ax, "20k vectors")
    plotting.paper_marks(ax, [1, 4, 16], [17, 15, 7], "paper (1B vectors)", scale="1B vectors")
    bad = figure_checks.scale_problems(fig)
    assert len(bad) == 1 and "1B vectors beside ours at 20k vectors" in bad[0]

    fig, (ax, own) = _fig(2)
    ax.plot([1, 4, 16], [0.4, 0.6, 0.4], "o", label="ours")
    plotting.panel_scale(ax, "20k vectors")
    plotting.paper_marks(ax, [1, 4, 16], [17, 15, 7], "paper (1B vectors)", scale="1B vectors", tag="1B")
    assert figure_checks.scale_problems(fig) == []
    assert [t.get_text() for t in ax.texts] == ["1B"] * 3   # the tag beside every marker

    fig, (ax, own) = _fig(2)
    ax.plot([1, 4, 16], [0.4, 0.6, 0.4], "o", label="ours")
    plotting.panel_scale(ax, "20k vectors")
    plotting.paper_marks(own, [1, 4, 16], [17, 15, 7], "paper (1B vectors)", scale="1B vectors")
    plotting.panel_scale(own, "1B vectors")
    assert figure_checks.scale_problems(fig) == []


def test_save_refuses_a_dodged_paper_marker_under_the_strict_flag(tmp_path, monkeypatch):
    from matplotlib.transforms import offset_copy

    monkeypatch.setenv(plotting.STRICT_ENV, "1")
    fig, (ax,) = _fig()
    ax.plot([1, 2], [1, 2], "o-", label="ours")
    (line,) = ax.plot([1.5], [1.5], **plotting.PAPER_STYLE, label="paper: one")
    line.set_transform(offset_copy(ax.transData, fig=fig, x=6, units="points"))
    with pytest.raises(AssertionError, match="true x"):
        plotting.save(fig, tmp_path / "f.png")


def test_a_figure_declares_the_claims_it_shows():
    reg = Registry()

    @reg.figure("fig1", records=("e2e",), claims=("speedup", "target-*"))
    def draw(data, out):
        return []

    assert reg.claims_of("fig1") == ("speedup", "target-*")

    @figure("fig2", records=("e2e",), claims=("one",))
    def two(data, out):
        return []

    assert two.figure.claims == ("one",)


def test_declared_claims_link_first_and_patterns_match_per_dataset_ids(tmp_path):
    """Trinity's recall figure declares ``target-vs-hnsw-*``: the row made for any dataset links to it, and a
    row no figure declares, cites or names says it has none."""
    pngs = [tmp_path / "recall_qps.png", tmp_path / "lanes.png"]
    rows = pd.DataFrame({"study": ["trinity"] * 2, "claim_id": ["target-vs-hnsw-deep-like", "nobody-shows-this"],
                         "claim": ["engine vs HNSW", "something"], "paper_value": ["", ""]})
    links = report_links.link(rows, {"trinity": pngs})
    assert links[("trinity", "target-vs-hnsw-deep-like")] == ["recall_qps"]
    assert links[("trinity", "nobody-shows-this")] == []


def test_the_page_shows_a_figures_legibility_warning(tmp_path):
    png = tmp_path / "fig1.png"
    assert report._legibility(png) == ""
    png.with_suffix(".legibility.txt").write_text("warning: fig1.png: smallest text 'x' is 7.0 px <b>\n")
    note = report._legibility(png)
    assert "Text too small as shown" in note and "7.0 px" in note and "&lt;b&gt;" in note

"""Every registered figure renders from small records (BENCH_STRICT_FIGURES=1: a legend over data fails),
reads records only, labels computed values as computed and never shares an absolute axis across scales.
Each figure is drawn once per session from the study's records (tests/figcache.py)."""
from __future__ import annotations

import pytest

from bench.chameleon import figures


def _draw(name, study_records, figcache):
    """``name`` drawn once per session from the study's records (tests/figcache.py), every step of the study
    replaced by a failure while it draws (the conftest's figure_guard)."""
    return figcache.draw(figures.FIGURES, name, study_records, "records")


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_every_registered_figure_renders(name, study_records, figcache, figure_guard):
    # drawn with every step replaced by a failure (tests/chameleon/conftest.py): a figure must not measure
    assert figcache.guard is figure_guard and figure_guard.__name__ == "no_measuring"
    d = _draw(name, study_records, figcache)
    assert {p.suffix for p in d.written} >= {".png", ".pdf"}
    assert (d.folder / f"{name}.caption.rst").read_text().strip()


def test_fig12_computed_values_are_not_labelled_paper(study_records, figcache):
    cap = (_draw("fig12", study_records, figcache).folder / "fig12.caption.rst").read_text()
    assert "computed by this harness" in cap and "0.2-442" in cap
    from bench.chameleon.analysis import authors_ratios

    r = authors_ratios().set_index(["model", "interval"]).ratio
    # the paper's stated range 0.2-442 is the computed one over intervals 1-64 ...
    assert r[r.index.get_level_values(1) <= 64].min() == pytest.approx(0.17, abs=0.01)
    assert r[r.index.get_level_values(1) <= 64].max() == pytest.approx(447, rel=0.01)
    # ... and 3510 is EncDec-L at interval 512 (one retrieval per 512 tokens), not an arithmetic slip
    assert r[("EncDec-L", 512)] == pytest.approx(695.2 * 512 / 101.41, rel=1e-3)


def test_a_missing_record_kind_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="reads record kind"):
        figures.FIGURES.draw("fig12", {"ralm": []}, tmp_path / "x.png")


def test_each_figure_tags_the_source_of_the_ledger_rows_it_backs(study_records, study_params, figcache):
    """Issue 32 section 5: each ledger row's source is among the sources the figures linked to it draw
    (bench.core.presenting.report_links' links), figures and claims from the same records."""
    from bench.chameleon import claims
    from bench.core.judging import claims as core_claims
    from bench.core.measuring import records
    from bench.core.presenting.figure_checks import png_sources, tag_mismatches

    pngs = [_draw(name, study_records, figcache).png for name in figures.FIGURES]
    assert all(png_sources(p) for p in pngs)
    data = records.read_kinds({k: study_records[k] for k in (*claims.RECORDS, "ralm")})
    rows = core_claims.frame(claims.build(data, study_params, "t"))
    assert tag_mismatches(rows, {"chameleon": pngs}) == []
    # every ledger row links to a figure, or says it has none (#32): the figures' claims=(...) declarations
    from bench.core.presenting.report_links import link

    unlinked = {c for (_, c), stems in link(rows, {"chameleon": pngs}).items() if not stems}
    assert unlinked == set()

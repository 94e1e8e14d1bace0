"""Every registered figure renders from small records (legend checks strict). Each figure is drawn once per
session from the session's records (tests/figcache.py) and every test here checks that one drawing."""
import pytest

from bench.trinity import figures


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_figure_renders(study, figcache, name):
    d = figcache.draw(figures.FIGURES, name, study["records"], "records")
    assert d.png.name == f"{name}.png" and d.png.stat().st_size > 0
    assert any(str(p).endswith(".caption.rst") for p in d.written)


def test_each_figure_tags_the_source_of_the_ledger_rows_it_backs(study, figcache):
    """Issue 32 section 5: each ledger row's source is among the sources the figures linked to it draw
    (bench.core.presenting.report_links' links), figures and claims from the same records."""
    from bench.core.judging import claims as core_claims
    from bench.core.measuring import records
    from bench.core.presenting.figure_checks import png_sources, tag_mismatches
    from bench.trinity import claims

    recs = study["records"]
    pngs = [figcache.draw(figures.FIGURES, name, recs, "records").png for name in figures.FIGURES]
    assert all(png_sources(p) for p in pngs)
    rows = core_claims.frame(claims.build(records.read_kinds(recs), study["typed"], "test"))
    assert tag_mismatches(rows, {"trinity": pngs}) == []
    # every ledger row links to a figure, or says it has none (#32): the figures' claims=(...) declarations
    from bench.core.presenting.report_links import link

    unlinked = {c for (_, c), stems in link(rows, {"trinity": pngs}).items() if not stems}
    assert unlinked == set()

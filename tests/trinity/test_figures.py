"""Every registered figure renders from small records (legend checks strict)."""
import pytest

from bench.trinity import figures


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_figure_renders(study, tmp_path, monkeypatch, name):
    monkeypatch.setenv("BENCH_STRICT_FIGURES", "1")
    recs = study["records"]
    need = figures.FIGURES.records_of(name)
    written = figures.FIGURES.draw(name, {k: recs[k] for k in need}, tmp_path / f"{name}.png")
    assert (tmp_path / f"{name}.png").stat().st_size > 0
    assert any(str(p).endswith(".caption.rst") for p in written)


def test_each_figure_tags_the_source_of_the_ledger_rows_it_backs(study, tmp_path):
    """Issue 32 section 5: each ledger row's source is among the sources the figures linked to it draw
    (bench.core.presenting.report_links' links), figures and claims from the same records."""
    from bench.core.judging import claims as core_claims
    from bench.core.measuring import records
    from bench.core.presenting.figure_checks import png_sources, tag_mismatches
    from bench.trinity import claims

    recs, pngs = study["records"], []
    for name in figures.FIGURES:
        figures.FIGURES.draw(name, {k: recs[k] for k in figures.FIGURES.records_of(name)}, tmp_path / f"{name}.png")
        pngs.append(tmp_path / f"{name}.png")
    assert all(png_sources(p) for p in pngs)
    rows = core_claims.frame(claims.build(records.read_kinds(recs), study["typed"], "test"))
    assert tag_mismatches(rows, {"trinity": pngs}) == []
    # every ledger row links to a figure, or says it has none (#32): the figures' claims=(...) declarations
    from bench.core.presenting.report_links import link

    unlinked = {c for (_, c), stems in link(rows, {"trinity": pngs}).items() if not stems}
    assert unlinked == set()

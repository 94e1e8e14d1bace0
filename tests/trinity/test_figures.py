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

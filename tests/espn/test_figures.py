"""Every registered ESPN figure renders from small synthetic records, with no legend over data
(BENCH_STRICT_FIGURES=1, set by tests/conftest.py, makes an overlap an error), and says what was measured.
Each figure is drawn once per session from ``recs_ok`` (tests/figcache.py) and every test here checks that
one drawing; the not-run records draw their own."""
from __future__ import annotations

import os

import pandas as pd
import pytest

from bench.espn import figures
from bench.espn.figures import _shared

from .fake_records import write_all


def _check(out, written):
    assert out.stat().st_size > 0 and out.with_suffix(".pdf").exists() and out.with_suffix(".caption.rst") in written
    return out


def _draw(name, inputs, folder):
    out = folder / f"{name}.png"
    return _check(out, figures.FIGURES.draw(name, {k: inputs[k] for k in figures.FIGURES.records_of(name)}, out))


def _cached(figcache, name, recs_ok):
    """The PNG of ``name`` drawn once per session from ``recs_ok`` (its CSV and caption beside it)."""
    d = figcache.draw(figures.FIGURES, name, recs_ok, "ok")
    return _check(d.png, list(d.written))


@pytest.fixture(scope="session")
def recs_ok(tmp_path_factory):
    """The "ok" records (rows measured on the emulated SSD), written once; nothing writes beside them."""
    return write_all(tmp_path_factory.mktemp("espn-ok"), "ok")


@pytest.fixture(scope="module")
def e2e_not_run(tmp_path_factory):
    """The e2e figures drawn with the emulated SSD not run (not root): folder of outputs."""
    folder = tmp_path_factory.mktemp("espn-not-run")
    inputs = write_all(folder, "not_run")
    _draw("tables45", inputs, folder)
    return folder


def test_strict_figures_on():
    assert os.environ.get("BENCH_STRICT_FIGURES") == "1"


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_every_figure_renders(name, recs_ok, figcache):
    _cached(figcache, name, recs_ok)


def test_emulated_ssd_rows_labelled_measured_and_apart(recs_ok, figcache):
    folder = _cached(figcache, "tables45", recs_ok).parent
    tab = pd.read_csv(folder / "tables45.csv")
    assert not tab.backend.str.contains("not measured").any()
    assert tab.backend.str.contains("paper Table 4: ESPN \\(GDS\\)").any()  # the paper's own series name
    assert not tab.backend.str.contains("paper.*direct I/O").any()
    emu = tab[tab.backend.str.contains("measured on an emulated SSD", na=False)]
    assert len(emu) == 3 and emu["0.50"].max() > 200  # ms; the native mmap row stays ~68 ms
    assert tab[tab.backend == _shared.BACKEND_NAMES["mmap"]]["0.50"].iloc[0] == pytest.approx(68, rel=0.1)
    assert tab["0.50 interval"].notna().any()   # the interval the rows judge, over fresh processes
    cap = (folder / "tables45.caption.rst").read_text()
    assert "measured on an emulated SSD" in cap and "GDS" in cap
    # the disk named, the emulated device's latency, parallelism and measured rates, each back end's threads
    assert "disk nvme0n1" in cap and "rotational flag 0" in cap and "queue depth 256" in cap and "QD32 50,000" in cap
    assert "+100 µs per read stated, measured +102 µs" in cap and "32 reads in flight" in cap and "QD1 6,000" in cap
    assert "Threads:" in cap and "threads of mmap" in cap
    assert "0.25: bound" in cap   # each budget says whether it bound


def test_emulated_ssd_not_run_is_blank_with_its_reason(e2e_not_run):
    tab = pd.read_csv(e2e_not_run / "tables45.csv")
    assert not tab.backend.str.contains("measured on an emulated SSD").any()  # none was measured
    emu = tab[tab.backend.str.contains("emulated SSD: not run")]
    assert len(emu) == 3 and emu["0.50"].isna().all() and emu.note.str.contains("not root").all()
    swap = tab[tab.backend == _shared.BACKEND_NAMES["vm_swap"]]
    assert swap.empty or "no swap" in swap.note.iloc[0]


def test_fig6_caption_names_encoder_and_synthetic_text(recs_ok, figcache):
    folder = _cached(figcache, "fig6", recs_ok).parent
    cap = (folder / "fig6.caption.rst").read_text()
    assert "word-hash" in cap and "synthetic text" in cap


def test_a_figure_reads_only_its_record_kinds(recs_ok, tmp_path):
    with pytest.raises(ValueError, match="reads record kind"):
        figures.FIGURES.draw("eq4", {"batch": recs_ok["batch"]}, tmp_path / "x.png")


def test_each_figure_tags_the_source_of_the_ledger_rows_it_backs(recs_ok, figcache):
    """Issue 32 section 5: a figure's measured / modelled / emulated tag equals the ledger's source column for
    the rows it backs (the report's links, bench.core.presenting.report_links): each figure drawn from the same records
    as the claims, then every linked row's source must be among the sources the figure draws."""
    from bench.core.judging import claims as core_claims
    from bench.core.measuring import records as core_records
    from bench.core.presenting.figure_checks import png_sources, tag_mismatches
    from bench.espn import STUDY, claims

    from .fake_records import PARAMS_OVERRIDES

    pngs = [_cached(figcache, name, recs_ok) for name in figures.FIGURES]
    assert all(png_sources(p) for p in pngs)                   # every PNG names what it draws
    rows = core_claims.frame(claims.build(core_records.read_kinds(recs_ok), STUDY.parameters(PARAMS_OVERRIDES), "t"))
    assert tag_mismatches(rows, {"espn": pngs}) == []
    # every ledger row links to a figure, or says it has none (#32): the figures' claims=(...) declarations
    from bench.core.presenting.report_links import link

    unlinked = {c for (_, c), stems in link(rows, {"espn": pngs}).items() if not stems}
    assert unlinked == set()


def test_tables45_draws_the_rows_quantities(recs_ok, figcache):
    """Tables 4/5 draw the memory the ledger's memory-saved row judges (index memory, ours beside the paper's v1
    and v2) and say the speed-up the rows judge, with the paper's definitions quoted."""
    folder = _cached(figcache, "tables45", recs_ok).parent
    cap = (folder / "tables45.caption.rst").read_text()
    assert "memory saved the ledger's row reads (12.2x)" in cap and "at budget 0.25: mmap / ESPN 2.4" in cap
    assert "6 - 19% of the total retrieval indices in memory" in cap and "3.1 - 3.9x faster than mmap" in cap
    assert "17.5 GB IVF-PQ for v2" in cap and "not stated" not in cap


def test_fig7_says_the_lists_it_probed(recs_ok, figcache):
    """Figure 7's curves name the lists they truly probed (the real-passages index probes the same fraction of
    its lists), and the caption gives the values the rows judge with their K/N premise."""
    folder = _cached(figcache, "fig7", recs_ok).parent
    cap = (folder / "fig7.caption.rst").read_text()
    assert "(the K/N premise fails" in cap and "v1 nprobe 1000 0.37%" in cap
    assert "same fraction of its (fewer) lists" in cap and "\"the hit rate achieved by the prefetcher" in cap
    tab = pd.read_csv(folder / "fig7.csv")
    real = tab[tab.corpus == "real passages only"]
    assert set(real.nprobe_used) == {5, 14} and set(real.nlist) == {37}   # 32 and 96 of 256 lists, scaled


@pytest.mark.parametrize("name,quote", [("fig8_9", "improves GDS based embedding retrieval"),
                                        ("eq4", "Query Batch threshold"), ("fig6", "normalized the MRR@10"),
                                        ("table3", "much smaller (7.7x uncompressed)"),
                                        ("fig1", "3.1 - 3.9x faster than mmap")])
def test_each_figure_quotes_the_definition_its_row_judges(recs_ok, figcache, name, quote):
    folder = _cached(figcache, name, recs_ok).parent
    assert quote in (folder / f"{name}.caption.rst").read_text()

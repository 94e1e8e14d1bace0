"""Every registered figure renders from small synthetic records (legend never over data). Each figure is
drawn once per session from the session's records (``recs``: tests/loaders/conftest.py, tests/figcache.py);
a figure from other records draws itself."""
from __future__ import annotations

import pytest

from bench.loaders.figures import FIGURES


@pytest.mark.parametrize("name", list(FIGURES))
def test_figure_renders(name, recs, figcache):
    d = figcache.draw(FIGURES, name, recs, "recs")   # drawn under BENCH_STRICT_FIGURES=1
    written, folder = d.written, d.folder
    assert (folder / f"{name}.png").stat().st_size > 10_000
    assert (folder / f"{name}.caption.rst").exists() and (folder / f"{name}.pdf").exists()
    if name.startswith("table"):
        md = (folder / f"{name}.md").read_text()
        assert "|" in md and "aper" in md
        if name == "table1_samples_per_s":
            assert "OOM" in md.split("## Paper")[0]  # our OOM cell, not only the paper's
    assert all(p.exists() for p in written)


def test_figures_and_claims_of_a_one_gpu_machine(recs, tmp_path, figcache):
    """On one GPU the two-replica grid points are not run: every figure still draws, and claims name them.
    A figure that does not read the train records draws from the session's records unchanged: its drawing is
    the cached one (figcache checks the records are the same files)."""
    from bench.core.measuring import records
    from bench.loaders import STUDY, claims

    from .synthetic_records import train_records

    one = {**recs, "train": [train_records(tmp_path / "train.parquet", gpus=1)]}
    for name in FIGURES:
        if "train" in FIGURES.records_of(name):
            FIGURES.draw(name, {k: one[k] for k in FIGURES.records_of(name)}, tmp_path / f"{name}.png")
        else:
            figcache.draw(FIGURES, name, one, "recs")
    data = records.read_kinds({k: one[k] for k in claims.RECORDS})
    rows = {r.claim_id: r for r in claims.build(data, STUDY.parameters({}), "test")}
    ddp = [r for r in rows.values() if "ddp" in r.claim_id.lower() and "2" in r.claim_id]
    assert all(r.verdict != "reproduced" for r in ddp)


@pytest.mark.parametrize("method, says", [("fork", "Workers are forked"), ("spawn", "started by spawn")])
def test_worker_memory_caption_follows_the_start_method(method, says, tmp_path):
    """Copy-on-read is what forked workers show; spawned or forkserver workers each hold their own copy."""
    import pandas as pd

    from bench.core.measuring import records
    from .synthetic_records import PROV, workers_records

    path = workers_records(tmp_path / "w.parquet")
    df = pd.read_parquet(path)
    path = records.write(tmp_path / "w2.parquet", df, {**PROV, "dataloader_default_start_method": method})
    FIGURES.draw("worker_memory_growth", {"workers": [path]}, tmp_path / "w.png")
    assert says in (tmp_path / "w.caption.rst").read_text()


def test_each_figure_tags_the_source_of_the_ledger_rows_it_backs(recs, figcache):
    """Issue 32 section 5: each ledger row's source is among the sources the figures linked to it draw
    (bench.core.presenting.report_links' links), figures and claims from the same records."""
    from bench.core.judging import claims as core_claims
    from bench.core.measuring import records
    from bench.core.presenting.figure_checks import png_sources, tag_mismatches
    from bench.loaders import STUDY, claims

    pngs = [figcache.draw(FIGURES, name, recs, "recs").png for name in FIGURES]
    assert all(png_sources(p) for p in pngs)
    data = records.read_kinds({k: recs[k] for k in claims.RECORDS})
    rows = core_claims.frame(claims.build(data, STUDY.parameters({}), "test"))
    assert tag_mismatches(rows, {"loaders": pngs}) == []
    # every ledger row links to a figure, or says it has none (#32): the figures' claims=(...) declarations
    from bench.core.presenting.report_links import link

    unlinked = {c for (_, c), stems in link(rows, {"loaders": pngs}).items() if not stems}
    assert unlinked == {"target-pss-agrees-with-smaps"}

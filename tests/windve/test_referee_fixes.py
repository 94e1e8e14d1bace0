"""The referee's findings stay fixed: no legend entry without anything drawn, one colour per thing in a
figure, measured series not labelled emulated, claim reasons in words (no Python tuples), the ledger's
cost and throughput numbers the figure's (one function), the CPU-utilisation claim against the paper's 80%
as a share of all the machine's cores, the accelerator's depth checked at every SLO."""
from __future__ import annotations

import re

import matplotlib.colors as mcolors
import numpy as np
import pytest

from bench.core.judging import claims as C
from bench.core.presenting import plotting
from bench.core.measuring import records
from bench.windve import claims, gains
from bench.windve import paper_values as PV
from bench.windve.figures import FIGURES

from . import synthetic


@pytest.fixture(scope="module")
def rows(recs):
    return C.frame(claims.build(records.read_kinds(recs), synthetic.params(), "tiny")).set_index("claim_id")


def _drawn(fig_name, recs, tmp_path, monkeypatch):
    """Draw one figure, keeping the figure object that ``plotting.save`` gets."""
    kept = {}
    real = plotting.save

    def save(fig, out_png, caption=None):
        kept["fig"], kept["caption"] = fig, caption
        return real(fig, out_png, caption)

    monkeypatch.setattr(plotting, "save", save)
    FIGURES.draw(fig_name, {k: recs[k] for k in FIGURES.records_of(fig_name)}, tmp_path / f"{fig_name}.png")
    return kept["fig"], kept["caption"]


def _cached(fig_name, recs, figcache):
    """The figure object and caption of ``fig_name`` drawn once per session from the session's ``recs``
    (tests/figcache.py: ``plotting.save`` observed as :func:`_drawn` does), to inspect, never to change."""
    d = figcache.draw(FIGURES, fig_name, recs, "recs")
    return d.fig, d.caption


def _empty(handle) -> bool:
    if hasattr(handle, "get_xydata"):
        xy = np.asarray(handle.get_xydata(), dtype=float)
        return xy.size == 0 or not np.isfinite(xy).all(axis=-1).any()
    if hasattr(handle, "patches"):   # a bar container
        return not any(np.isfinite(p.get_height()) and p.get_height() != 0 for p in handle.patches)
    return False


@pytest.mark.parametrize("name", list(FIGURES))
def test_no_legend_entry_without_anything_drawn(recs, figcache, name):
    fig, _ = _cached(name, recs, figcache)
    for ax in fig.axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            assert not _empty(h), f"{name}: legend entry {label!r} has nothing drawn"


def _line_colours(ax):
    return {mcolors.to_hex(l.get_color()) for l in ax.get_lines() if not l.get_label().startswith("_")
            and "paper" not in l.get_label() and "SLO" not in l.get_label() and l.get_label() != "goodput = offered"}


def _bar_colours(ax):
    return {mcolors.to_hex(p.get_facecolor()) for p in ax.patches if p.get_fill()}


def test_openloop_shares_have_their_own_colours(recs, figcache):
    fig, cap = _cached("openloop", recs, figcache)
    a, b, c = fig.axes[:3]
    assert not (_line_colours(a) | _line_colours(b)) & _bar_colours(c)
    labels = fig.legends[0].get_texts()
    text = [t.get_text() for t in labels]
    assert not any("offload" in t and "emulated (not measured)" in t for t in text)
    assert any("offload" in t and "accelerator emulated, CPU measured" in t for t in text)


def test_service_colours_mean_one_thing(recs, figcache):
    fig, cap = _cached("service", recs, figcache)
    a, b, c, d = fig.axes[:4]
    panels = [_bar_colours(a), _bar_colours(b), _line_colours(c), _line_colours(d)]
    for i in range(4):
        for j in range(i + 1, 4):
            assert not panels[i] & panels[j], (i, j, panels[i] & panels[j])
    assert "paired ratios per fresh service process" in a.get_title()


def test_utilisation_bars_measured_and_cost_is_the_claims(recs, rows, figcache):
    fig, cap = _cached("utilisation_cost", recs, figcache)
    text = [t.get_text() for t in fig.legends[0].get_texts()]
    # the CPU's use is measured; where the accelerator beside it is emulated the label says exactly that
    cpu = [t for t in text if "CPU use" in t]
    assert cpu and not any("emulated (not measured)" in t for t in cpu)
    assert all("(measured)" in t or "CPU measured" in t or t.endswith("[accelerator emulated]") for t in cpu)
    assert any("each round" in t for t in text)
    data = records.read_kinds(recs)
    dep = gains.deployment(gains.gains(data["serving"]))
    loose = dep[(dep.pair == "v100-xeon") & (dep.slo_s == max(synthetic.SLOS))].iloc[0]
    assert rows.loc["cost-saving-18.6", "ours"] == pytest.approx(loose.save_peak)
    assert rows.loc["throughput-1.22x", "ours"] == pytest.approx(1 + loose.save_avg)
    heights = {round(p.get_height(), 6) for p in fig.axes[1].patches if p.get_fill()}
    assert round(loose.save_peak * 100, 6) in heights and round(loose.save_avg * 100, 6) in heights
    # panel (a) draws what the row judges: the mean share of all cores, on the same base
    util = {round(p.get_height(), 6) for p in fig.axes[0].patches if p.get_fill()}
    assert round(rows.loc["cpu-utilisation-rises", "ours"] * 100, 6) in util
    assert "8% to 80%" in cap and "all of this machine's cores" in cap


def test_savings_equations():
    avg, peak = gains.savings(72, 90)
    assert float(avg) == pytest.approx(0.25) and float(peak) == pytest.approx(0.2)
    avg, peak = gains.paper_savings("v100-xeon", 2)
    assert peak == pytest.approx(22 / 118) and avg == pytest.approx(22 / 96)


def test_claim_reasons_are_words(rows):
    for cid, r in rows.iterrows():
        assert not re.search(r"\('|np\.|\bnan\b", r.reason), (cid, r.reason)
    assert "absolute difference" in rows.loc["target-regression-within-8", "reason"]


def test_cpu_utilisation_against_the_papers_80(rows):
    """The paper's average CPU utilisation is of the server's CPUs: ours is a share of all the machine's cores
    (never of the CPU instance's one core, which read above 100%), and a configuration whose CPU instance may use
    half the cores cannot reach 80%: a premise, failing here (2 cores)."""
    r = rows.loc["cpu-utilisation-rises"]
    assert r.threshold == pytest.approx(PV.CPU_UTIL["bge"][1]) and r.unit == "share of all cores"
    assert 0 < r.ours <= 1 and "80%" in r.reason and "all 2 cores" in r.reason
    assert "premise 'the CPU instance may use at least 80% of the machine's cores' fails" in r.premise
    assert r.clusters == 3 and not r.fixed_by   # each round lasts about the SLO whatever the accelerator's law
    assert r.verdict == C.OUT_OF_REACH


def test_acc_keeps_its_depth_is_a_premise_at_every_slo(rows):
    for slo in synthetic.SLOS:
        rank = 1 + list(synthetic.SLOS).index(slo)
        r = rows.loc[f"tables-i-ii-v100-xeon-{rank}s"]
        assert "premise 'the accelerator keeps its depth beside the CPU'" in r.premise
    assert "target-acc-not-dropping" not in rows.index


def test_tables_rows_carry_both_thresholds(rows):
    for cid in ("tables-i-ii-v100-xeon-1s", "tables-i-ii-v100-xeon-2s"):
        r = rows.loc[cid]
        assert "bge >=" in r.claim and "jina >=" in r.claim
        assert r.ci_low > -1 and r.ci_low < r.ours < r.ci_high   # never the old sentinel (-100%)


def test_fig2_caption_counts_late_answers(recs, figcache):
    _, cap = _cached("fig2_load_curve", recs, figcache)
    assert "after the SLO" in cap or "within the SLO" in cap


def test_table_3_marks_missing_fine_tuned_slots(tmp_path, monkeypatch):
    """Serving records without the Atlas pair: its fine-tuned slots say "not run" and why."""
    serv = synthetic.serving_df()
    serv = serv[serv.pair.fillna("") != "atlas-kunpeng"]
    recs = {"profile": [records.write(tmp_path / "profile.parquet", synthetic.profile_df(), {"method": "synthetic"})],
            "serving": [records.write(tmp_path / "serving.parquet", serv, {"method": "synthetic"})]}
    fig, _ = _drawn("table_3", recs, tmp_path, monkeypatch)
    for ax in fig.axes[:2]:   # one note over the pair's slots in (a) and (b), saying why
        notes = [t.get_text() for t in ax.texts if t.get_text().startswith("fine-tuned: not run")]
        assert len(notes) == 1 and "(" in notes[0]

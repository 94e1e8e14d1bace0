"""The referee's figure findings stay fixed: enough labelled ticks on every log axis, one dataset order, the
authors' coinciding markers drawn apart, the RALM ratios' noise stated in the panel and the caption (computed
from the records), the paper's band behind the scan's bars."""
from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from bench.chameleon import figures  # noqa: E402
from bench.chameleon.figures import _draw, ralm  # noqa: E402
from bench.core.presenting import plotting  # noqa: E402


def _labels(ax) -> list[str]:
    ax.figure.canvas.draw()
    lo, hi = sorted(ax.get_ylim())
    ticks = list(zip(ax.yaxis.get_majorticklocs(), ax.yaxis.get_ticklabels())) + \
        list(zip(ax.yaxis.get_minorticklocs(), ax.yaxis.get_ticklabels(minor=True)))
    return [t.get_text() for v, t in ticks if lo <= v <= hi and t.get_text()]


@pytest.mark.parametrize("lo,hi", [(0.15, 8), (2600, 15000), (4.5, 16.7), (1.0, 1.4), (11, 89), (0.2, 50),
                                   (0.05, 14000)])
def test_every_log_axis_has_several_plain_labels(lo, hi):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [lo, hi])
    ax.set_yscale("log")
    _draw.plain_log_ticks(ax.yaxis)
    ax.set_ylim(lo, hi)
    labels = _labels(ax)
    plt.close(fig)
    assert len(labels) >= 3, labels
    assert not any("^" in t or "e+" in t for t in labels), labels   # plain numbers, never 10^0 beside 2


def test_nice_log_limits_put_every_value_between_labelled_ticks():
    fig, ax = plt.subplots()
    ax.set_yscale("log")
    _draw.nice_log_limits(ax, [0.41, 2.5, 26])
    assert ax.get_ylim() == pytest.approx((0.2, 50))
    plt.close(fig)


def test_one_dataset_order_the_profiles_then_the_papers():
    names = ["syn-1024", "deep-like", "sift-like", "syn-512"]
    assert _draw.dataset_order(names) == ["sift-like", "deep-like", "syn-512", "syn-1024"]
    prov = {"config": {"datasets": ["syn-512", "sift-like"]}}
    assert _draw.dataset_order(names + ["zz"], prov) == ["syn-512", "sift-like", "deep-like", "syn-1024", "zz"]


def test_ratio_categories_follow_the_grid_small_before_large():
    f = pd.DataFrame({"model": ["Dec-L", "EncDec-L", "Dec-S", "EncDec-S", "EncDec-S"], "interval": [1, 8, 1, 8, 64]})
    assert ralm._cats(f) == ["Dec-S\nint 1", "Dec-L\nint 1", "EncDec-S\nint 8", "EncDec-L\nint 8", "EncDec-S\nint 64"]


def _ralm_frame(slow: float = 2.0) -> pd.DataFrame:
    """One model, intervals 8 and 64, none and cpu; the non-retrieval steps of one run ``slow`` times slower."""
    rows = []
    for interval, cfg in itertools.product((8, 64), ("none", "cpu")):
        base = 0.01 * (slow if (interval, cfg) == (64, "none") else 1.0)
        for step in range(64):
            ret = cfg != "none" and step % interval == 0
            rows.append({"model": "EncDec-S", "config": cfg, "interval": interval, "batch_size": 1, "rep": 0,
                         "source": "measured", "step": step, "retrieval": ret,
                         "step_s": base * (1 + 0.01 * (step % 3)) + (0.02 if ret else 0.0), "machine_busy": True})
    return pd.DataFrame(rows)


def test_machine_noise_and_the_ratios_below_it():
    d = _ralm_frame(2.0)
    noise = ralm.machine_noise(d, {"EncDec-S": 1})
    assert noise == pytest.approx(2.0, rel=0.02)
    med = d.groupby(["model", "interval", "config"]).step_s.median()
    r = pd.DataFrame([{"model": "EncDec-S", "interval": i, "config": "cpu",
                       "ratio": med["EncDec-S", i, "cpu"] / med["EncDec-S", i, "none"]} for i in (8, 64)])
    r = ralm.with_intervals(r, d, np.median, noise)
    assert r.below_noise.all() and (r.lo <= r.ratio).all() and (r.ratio <= r.hi).all()
    cap = ralm.noise_caption(r, noise, "latency")
    assert "2.00x" in cap and "2 of our 2" in cap and "below 1" in cap and "EncDec-S int 64 cpu" in cap
    assert "machine_busy" in _draw.busy_text(d)
    assert _draw.busy_text(d.assign(machine_busy=False)) == ""


@pytest.fixture
def drawn(study_records, figcache):
    """A registered figure, drawn once per session from the study's records (tests/figcache.py): its matplotlib
    figure and caption as ``plotting.save`` got them, to inspect (never to change)."""
    def draw(name):
        d = figcache.draw(figures.FIGURES, name, study_records, "records")
        return d.fig, d.caption
    return draw


def _paper_markers_px(ax) -> list[np.ndarray]:
    out = []
    for line in ax.get_lines():
        if line.get_color() == plotting.PAPER_COLOR and line.get_linestyle() in ("None", "none", ""):
            xy = np.asarray(line.get_xydata(), dtype=float)
            xy = xy[np.isfinite(xy).all(1)]
            if len(xy):
                out.append(line.get_transform().transform(xy))
    return out


@pytest.mark.parametrize("name", ["fig9", "throughput", "fig10", "fig11"])
def test_the_authors_markers_never_sit_on_each_other(drawn, name):
    fig, _ = drawn(name)
    min_px = 6 * fig.dpi / 72   # two markers closer than 6 points would touch
    for ax in fig.axes:
        series = _paper_markers_px(ax)
        for a, b in itertools.combinations(series, 2):
            dist = np.hypot(*(a[:, None, :] - b[None, :, :]).transpose(2, 0, 1))
            assert dist.min() >= min_px, f"{name}: two of the authors' markers touch in '{ax.get_title()}'"


@pytest.mark.parametrize("name", ["fig10", "fig11"])
def test_ralm_ratios_state_the_noise_in_panel_and_caption(drawn, study_records, name):
    fig, caption = drawn(name)
    panel = [ax for ax in fig.axes if ax.get_title().startswith("retrieval's cost")]
    assert panel and any("below this noise" in t.get_text() or "straddle 1" in t.get_text() for t in panel[0].texts)
    assert "straddles 1" in caption and "run-to-run noise" in caption
    busy = bool(pd.concat([pd.read_parquet(p) for p in study_records["ralm"]]).get(
        "machine_busy", pd.Series([False])).any())
    assert ("machine_busy" in caption) == busy
    assert "np.float" not in caption


def test_fig10_distributions_are_labelled(drawn):
    fig, _ = drawn("fig10")
    dist = [ax for ax in fig.axes if ax.get_title().startswith("distribution")]
    assert dist and all(ax.get_ylabel() for ax in dist)


def test_scan_band_is_behind_the_bars(drawn):
    fig, _ = drawn("scan")
    ax = fig.axes[1]
    bars = [p for c in ax.containers for p in getattr(c, "patches", [])]
    band = [p for p in ax.patches if p not in bars]
    assert band and bars and max(p.get_zorder() for p in band) < min(p.get_zorder() for p in bars)


def test_table5_says_what_is_modelled_which_range_and_why_fpga_cpu_is_not_priced(drawn):
    fig, caption = drawn("table5")
    if "Ours are MODELLED" in caption:
        assert "the power the paper's Table 5 implies" in caption and "x our latency" in caption
    assert "The text states 5.8-26.2x; Table 5's own cells give 6.7-26.2x" in caption
    assert "FPGA-CPU is not priced" in caption
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("5.8x" in t for t in labels) and any("6.7x" in t for t in labels)


def test_reader_facing_text_holds_no_config_keys(drawn):
    """Captions, legends and the tables beside the figures say things in words: no profile keys (a dotted
    key such as a section's sequence length setting) and no configuration ids such as 'fpga-*'."""
    import re

    for name in ("fig9", "fig10", "fig12", "table5", "throughput", "model", "fig8"):
        fig, caption = drawn(name)
        texts = [caption] + [t.get_text() for lg in fig.legends for t in lg.get_texts()]
        for t in texts:
            assert not re.search(r"\b(ralm|queue|nodes|scan|fpga|energy)\.[a-z_]+", t), (name, t)
            assert "fpga-*" not in t and "target-" not in t, (name, t)


def test_wide_figure_tables_are_written_narrow(study_records, figcache):
    """The report shows the Markdown table beside a figure in place of its CSV: a few columns, in words."""
    names = ("table5", "tables23", "model", "fig12")
    folders = {name: figcache.draw(figures.FIGURES, name, study_records, "records").folder for name in names}
    for name in names:
        lines = (folders[name] / f"{name}.md").read_text().splitlines()
        heads = [a for a, b in zip(lines, lines[1:]) if b.startswith("|---")]
        assert heads, name
        for line in lines:
            if line.startswith("| "):
                assert line.count("|") - 1 <= 11, (name, line)
        for h in heads:
            assert "_" not in h, (name, h)


def test_fig12_values_sit_off_their_markers(drawn):
    fig, _ = drawn("fig12")
    notes = [t for ax in fig.axes for t in ax.texts if t.get_text() and t.get_bbox_patch() is not None]
    assert notes and all(t.get_position() != t.xy for t in notes if hasattr(t, "xy"))

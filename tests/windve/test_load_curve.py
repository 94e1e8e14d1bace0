"""Figure 2's stand-in (the bursty open-loop trace): the per-request rows the serving step writes turn into
the offered and answered rates over time (:func:`bench.windve.analysis.load_curve`), and the figure draws
them, saying that the paper's curve is a shape without values; old records without the rows give a figure
that says so."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.core.measuring import records
from bench.windve import analysis
from bench.windve.figures import FIGURES

from . import synthetic


def _reqs(rows):
    base = {"kind": "openloop_request", "arrivals": "bursty", "config": "offload", "slo_s": 0.5}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_open_requests_outcomes():
    q = analysis.open_requests(_reqs([
        {"intended_s": 0.0, "done_s": 0.1, "status": 200, "device": "emulated", "answered": True},
        {"intended_s": 0.1, "done_s": 0.3, "status": 200, "device": "cpu", "answered": True},
        {"intended_s": 0.2, "done_s": 0.21, "status": 429, "device": "", "answered": False},
        {"intended_s": 0.3, "done_s": 2.0, "status": -1, "device": "", "answered": False}]))
    assert q.outcome.tolist() == ["accelerator", "CPU", "refused (429)", "lost"]


def test_load_curve_counts_rates_per_bin():
    q = analysis.open_requests(_reqs(
        [{"intended_s": t, "done_s": t + 0.05, "status": 200, "device": "cuda", "answered": True}
         for t in (0.0, 0.01, 0.02, 0.03)]
        + [{"intended_s": 0.31, "done_s": 0.33, "status": 429, "device": "", "answered": False}]))
    c = analysis.load_curve(q, bin_s=0.1)
    assert c.t_s.tolist() == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert c.offered_rps.tolist() == pytest.approx([40, 0, 0, 10])           # 4 sends in the first 0.1 s
    assert c.accelerator_rps.tolist() == pytest.approx([40, 0, 0, 0])        # answered at 0.05 .. 0.08 s
    assert c["refused (429)_rps"].tolist() == pytest.approx([0, 0, 0, 10])
    assert (c.CPU_rps == 0).all() and (c.lost_rps == 0).all()
    # every request is counted once on each side: offered and outcomes integrate to the same number
    assert (c.offered_rps * c.bin_s).sum() == pytest.approx(5)
    assert sum((c[f"{p}_rps"] * c.bin_s).sum() for p in analysis.RATE_PARTS) == pytest.approx(5)


def test_bin_width_and_windows():
    assert analysis.bin_width(4.0, 0.5) == pytest.approx(0.125)
    assert analysis.bin_width(2.4) == pytest.approx(0.1)
    run = pd.Series({"burst_s": 0.5, "period_s": 2.0})
    assert analysis.burst_windows(run, 4.5) == [(0.0, 0.5), (2.0, 2.5), (4.0, 4.5)]
    assert analysis.burst_windows(pd.Series({"offered_rps": 3.0}), 4.0) == []


def test_figure_from_synthetic_trace(recs, figcache):
    """Drawn once per session from the session's synthetic records (tests/windve/conftest.py, tests/figcache.py)."""
    png = figcache.draw(FIGURES, "fig2_load_curve", recs, "recs").png
    cap = png.with_suffix(".caption.rst").read_text()
    assert png.stat().st_size > 10_000
    assert "gives no values" in cap and "not a day" in cap and "4x the mean rate for 0.5 s of every 2 s" in cap
    assert "np." not in cap


def test_figure_without_request_rows_says_so(tmp_path):
    serv = synthetic.serving_df()
    serv = serv[serv.kind != "openloop_request"]
    path = records.write(tmp_path / "serving.parquet", serv, {"method": "synthetic"})
    FIGURES.draw("fig2_load_curve", {"serving": [path]}, tmp_path / "fig2.png")
    assert "not drawn" in (tmp_path / "fig2.caption.rst").read_text()


def test_request_rows_from_outcomes():
    """The step's per-request rows come from the load generator's outcomes as they are (nothing re-timed)."""
    from bench.serving.loadgen import Outcome
    from bench.windve.load import request_rows

    outs = [Outcome(0, 0.0, 0.001, 0.2, True, status={"status": 200, "device": "cpu"}),
            Outcome(1, 0.1, 0.1, 0.11, False, status={"status": 429, "device": ""}),
            Outcome(2, 0.2, 0.2, 10.0, False, error="timeout")]
    rows = request_rows(outs)
    assert [r["status"] for r in rows] == [200, 429, -1]
    assert rows[0]["latency_s"] == pytest.approx(0.2) and rows[2]["error"] == "timeout"
    assert [r["intended_s"] for r in rows] == [0.0, 0.1, 0.2] and np.isclose(rows[1]["done_s"], 0.11)

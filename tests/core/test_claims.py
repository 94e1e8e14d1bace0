"""Verdicts from intervals: a pass within noise is inconclusive; modelled values need hardware."""
from __future__ import annotations

import numpy as np
import pytest

from bench.core import claims


def test_judge_uses_the_whole_interval():
    assert claims.judge(3.2, 3.6, 3.1) == claims.REPRODUCED
    assert claims.judge(2.0, 3.0, 3.1) == claims.NOT_REPRODUCED
    assert claims.judge(3.0, 3.2, 3.1) == claims.INCONCLUSIVE
    assert claims.judge(0.9, 0.99, 1.0, "<=") == claims.REPRODUCED
    assert claims.judge(0.99, 1.02, 1.0, "<=") == claims.INCONCLUSIVE
    assert claims.judge(None, None, 1.0) == claims.INCONCLUSIVE


def test_noisy_ratio_near_one_is_inconclusive():
    rng = np.random.default_rng(0)
    a, b = rng.normal(50, 15, 50), rng.normal(50, 15, 50)   # the same distribution: no speed-up
    est, lo, hi = claims.ratio_ci(a, b)
    assert lo < 1.0 < hi
    row = claims.claim("s", "c", "no slower", "1x", ours=est, ci=(lo, hi), threshold=1.0, direction="<=")
    assert row.verdict == claims.INCONCLUSIVE


def test_sources_and_busy_machine():
    m = claims.claim("s", "fpga", "x", "2x", ours=3.0, ci=(2.9, 3.1), threshold=2.0, source="modelled")
    assert m.verdict == claims.NEEDS_HARDWARE
    b = claims.claim("s", "b", "x", "2x", ours=3.0, ci=(2.9, 3.1), threshold=2.0, machine_busy=True)
    assert b.verdict == claims.INCONCLUSIVE and "busy" in b.reason
    with pytest.raises(ValueError, match="needs a threshold"):
        claims.claim("s", "c", "x", "1", ours=1.0)


def test_bootstrap_ci_brackets_the_median():
    est, lo, hi = claims.bootstrap_ci(np.arange(101.0))
    assert lo <= est == 50.0 <= hi


def test_write_and_ledger(tmp_path):
    rows = [claims.claim("s", "a", "faster", "3x", ours=3.5, ci=(3.2, 3.8), threshold=3.0, unit="x"),
            claims.claim("s", "b", "on FPGA", "5x", ours=None, source="not_run", reason="no FPGA")]
    p = claims.write(rows, tmp_path / "s" / "claims.parquet", {"profile": "t"})
    assert "**reproduced**" in (tmp_path / "s" / "claims.md").read_text()
    claims.write_ledger([p], tmp_path / "claims.md", tmp_path / "claims.png", "t")
    md = (tmp_path / "claims.md").read_text()
    assert "3.5 [3.2, 3.8] x" in md and "needs hardware we lack" in md
    assert (tmp_path / "claims.html").exists() and (tmp_path / "claims.png").exists()
    with pytest.raises(ValueError, match="duplicate"):
        claims.frame(rows + rows)


def _study(tmp_path, verdict_value):
    rows = [claims.claim("s", "speedup", "faster", "3x", ours=verdict_value, ci=(verdict_value - 0.1, verdict_value + 0.1),
                         threshold=3.0, unit="x", scale="x" * 120),
            claims.claim("s", "target-fast", "target: fast", ">= 3x", ours=3.5, ci=(3.4, 3.6), threshold=3.0,
                         unit="x", scale="x" * 120, reason="np.float64(0.5) of it")]
    return claims.write(rows, tmp_path / "s" / "claims.parquet", {"profile": "t"})


def test_ledger_puts_paper_claims_first_counts_targets_apart_and_marks_unstable_rows(tmp_path):
    from bench.core import ledger

    p = _study(tmp_path, 3.5)
    ledger.write([p], tmp_path / "claims.md", tmp_path / "claims.png", "t")
    p = _study(tmp_path, 2.0)   # the next run: the paper claim's verdict flips
    df = ledger.write([p], tmp_path / "claims.md", tmp_path / "claims.png", "t")
    assert list(df.kind) == [ledger.PAPER, ledger.TARGET]
    assert df.set_index("claim_id").history.to_dict() == {"speedup": "RN", "target-fast": "RR"}
    assert df.set_index("claim_id").unstable.to_dict() == {"speedup": True, "target-fast": False}
    md = (tmp_path / "claims.md").read_text()
    assert md.index("## Paper claims") < md.index("## Harness targets and checks")
    assert "unstable 1" in md and "not reproduced** (unstable)" in md
    assert "np.float64" not in md and "0.5 of it" in md
    assert md.count("x" * 120) == 1  # a long scale text once per study, in the notes
    assert len(list((tmp_path / "history").glob("*.parquet"))) == 2
    html = (tmp_path / "claims.html").read_text()
    assert html.index("Paper claims") < html.index("Harness targets") and "reproduced 0" in html


def test_an_interval_without_its_estimate_is_discarded():
    row = claims.claim("s", "c", "x", "1", ours=0.2, ci=(-1.0, -1.0), threshold=0.1)
    assert row.verdict == claims.INCONCLUSIVE and row.ci_low is None and "discarded" in row.reason


def test_no_numpy_repr_reaches_a_ledger_cell():
    """A reason built from numpy scalars (``f"{key}"`` of a groupby key) is written with plain numbers."""
    c = claims.claim("s", "x", "c", "1", ours=1.0, ci=(1.0, 1.0), threshold=0.5, unit="x", scale="s",
                     reason=f"worst cell {('v100', np.float64(0.5), np.int64(3))}")
    assert "np." not in c.reason and "('v100', 0.5, 3)" in c.reason

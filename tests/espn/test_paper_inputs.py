"""What ESPN takes from the paper (the vector widths of section 3.1, the filler's tokens per passage of Table 3)
is declared as paper inputs and read at call time, so scaling one moves every size that follows from it; the
real-passages hit-rate index probes the fraction of its lists that the full index's nprobe is of its own."""
from __future__ import annotations

import numpy as np
import pytest

from bench.core.judging import fidelity
from bench.espn import STUDY, synthetic
from bench.espn.steps import hitrate
from bench.espn.system import encoders, layout


def test_widths_are_paper_inputs_read_at_call_time():
    assert {i.name for i in layout.PAPER_INPUTS} == {"CLS vector width", "BOW vector width",
                                                     "bytes per vector dimension"}
    assert (layout.cls_dim(), layout.bow_dim(), layout.cls_bytes(), layout.tok_bytes()) == (128, 32, 256, 64)
    assert layout.capacity(4096) == 60 and layout.capacity(8192) == 124
    with fidelity.scaled({"BOW vector width": 1.25}):
        assert layout.bow_dim() == 40 and layout.tok_bytes() == 80 and layout.capacity(4096) == 48
        assert layout.io_size_for(50) == 8192
    assert layout.io_size_for(50) == 4096


def test_the_table_stores_fp16_only():
    with fidelity.scaled({"bytes per vector dimension": 1.25}):
        with pytest.raises(layout.LayoutError, match="fp16"):
            layout.decode(np.zeros((1, 4096), np.uint8), np.array([0]))


def test_the_fillers_tokens_per_passage_are_the_papers():
    assert encoders.MEAN_TOKENS.value == 68.0 and "Table 3" in encoders.MEAN_TOKENS.where
    a = encoders.token_counts(20000, np.random.default_rng(0)).mean()
    with fidelity.scaled({encoders.MEAN_TOKENS.name: 0.8}):
        b = encoders.token_counts(20000, np.random.default_rng(0)).mean()
    assert a == pytest.approx(68, rel=0.05) and b == pytest.approx(0.8 * a, rel=0.05)


def test_synthetic_sizes_move_with_the_widths():
    p = STUDY.parameters({})
    base = synthetic.records(p)["sizes"]
    with fidelity.scaled({"CLS vector width": 1.25}):
        big = synthetic.records(p)["sizes"]
    ann = lambda s: float(s[(s.part == "ann_index") & (s.source == "measured")].bytes.iloc[0])  # noqa: E731
    assert ann(big) == pytest.approx(1.25 * ann(base), rel=0.02)


class _Index:
    def __init__(self, nlist):
        self.nlist = nlist


def test_the_real_passages_probe_the_fraction_of_lists_they_say():
    """The real-passages index (37 lists for 4,000 passages beside 256 for 28,000 records) probes nprobe x
    37/256 of its lists, rounded: 5 and 14 for 32 and 96, never raised to hold 2K candidates (19 of 37,
    51%, against the 12.5% the curve said)."""
    p = STUDY.parameters({"hitrate_nprobe": [32, 96], "k": 1000})
    got = hitrate._etas(_Index(37), 37 / 256, p)
    assert got == [(32, 5), (96, 14)]
    assert [e / 37 for _, e in got] == pytest.approx([32 / 256, 96 / 256], abs=0.02)

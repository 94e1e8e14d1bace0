"""Which figure backs which ledger row (issue 32): a figure column, a caption naming the claim id, or the
paper's figure/table/equation the claim cites; nothing else is guessed."""
from __future__ import annotations

import pandas as pd

from bench.core.presenting import report_links as links


def test_references_in_words_and_ids():
    assert links.references("RALM up to 2.16x lower latency (Figure 10)") == {("fig", 10)}
    assert links.references("as good as the stress test's (Table III)") == {("table", 3)}
    assert links.references("equation 4: on par up to batch 12") == {("eq", 4)}
    assert links.references("18.6% saved (eq. 6)") == {("eq", 6)}
    assert links.references("Figures 8/9") == {("fig", 8), ("fig", 9)}
    assert links.references("", claim_id="tables-i-ii-v100-xeon-1s") == {("table", 1), ("table", 2)}
    assert links.references("5-16x less memory") == set()


def test_stems_and_labels():
    assert links.stem_refs("fig8_9") == ("fig", [8, 9], "")
    assert links.stem_refs("tables45") == ("table", [4, 5], "")
    assert links.stem_refs("tables_1_2") == ("table", [1, 2], "")
    assert links.stem_refs("fig1_roofline") == ("fig", [1], "roofline")
    assert links.stem_refs("iops") == (None, [], "iops")
    assert links.label("fig8_9") == "Figures 8 and 9" and links.label("fig8_9", short=True) == "Figs. 8, 9"
    assert links.label("table1_samples_per_s") == "Table 1: samples/s"
    assert links.label("recall_vs_nprobe") == "recall vs nprobe"


def test_link_order_explicit_then_caption_then_citation(tmp_path):
    for stem in ("fig10", "fig9", "table3", "iops"):
        (tmp_path / f"{stem}.png").write_bytes(b"")
    (tmp_path / "iops.caption.rst").write_text("reader against fio (target-reader-vs-fio)")
    df = pd.DataFrame([
        dict(study="s", claim_id="a", claim="faster (Figure 10)", paper_value="2x", figure="fig9"),
        dict(study="s", claim_id="target-reader-vs-fio", claim="reader", paper_value="80%", figure=None),
        dict(study="s", claim_id="b", claim="faster (Figure 10)", paper_value="2x", figure=None),
        dict(study="s", claim_id="c", claim="smaller", paper_value="7.7x (Table 3)", figure=None),
        dict(study="s", claim_id="d", claim="5-16x less memory", paper_value="5-16x", figure=None)])
    got = links.link(df, {"s": sorted(tmp_path.glob("*.png"))})
    assert got[("s", "a")] == ["fig9"]
    assert got[("s", "target-reader-vs-fio")] == ["iops"]
    assert got[("s", "b")] == ["fig10"] and got[("s", "c")] == ["table3"] and got[("s", "d")] == []

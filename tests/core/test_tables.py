"""Tables on the report page (issue 32, "tables as tables"): headers in words with units, blanks for NaN,
yes/no for booleans, numbers without scientific notation, one copy per figure."""
from __future__ import annotations

import pytest

from bench.core.presenting import tables


@pytest.mark.parametrize("name, words", [
    ("crit_read_s", "critical read (s)"), ("prefetch_budget_ms", "prefetch budget (ms)"),
    ("size_bytes", "size (bytes)"), ("paper_throughput_ms_per_query", "paper throughput (ms per query)"),
    ("tokens_per_s", "tokens/s"), ("median_tokens_per_s", "median (tokens/s)"), ("bw_MBps", "bandwidth (MB/s)"),
    ("norm_mrr@10", "normalised MRR@10"), ("observed_knee_batch", "observed knee batch"), ("series", "series"),
    ("ir_datasets", "ir_datasets")])
def test_headers_in_words_with_units(name, words):
    assert tables.header_words(name) == words


@pytest.mark.parametrize("value, text", [
    (1.024e6, "1,024,000"), ("1.024e+06", "1,024,000"), ("5.97e+03", "5,970"), (0.000131, "0.000131"),
    (1.31e-5, "0.0000131"), (3.14159, "3.14"), (1234.5, "1,234"), (-0.25, "-0.25"), (float("nan"), ""),
    ("nan", ""), ("NaN", ""), (None, ""), (True, "yes"), ("False", "no"), ("0.50", "0.5"), ("007", "007"),
    ("direct_prefetch (emulated SSD)", "direct prefetch (emulated SSD)"), ("ir_datasets", "ir_datasets"),
    ("espn-reader QD32", "espn-reader QD32")])
def test_cells_for_reading(value, text):
    assert tables.cell(value) == text


def test_numeric_columns_right_aligned_and_rows_capped():
    out = tables.to_html(["n", "name"], [[1, "a"], [2000, "b"], [None, "c"]], max_rows=2)
    assert "<th class=num>n</th><th>name</th>" in out and "<td class=num>2,000</td>" in out
    assert "1 more rows" in out


def test_one_table_per_figure_markdown_first(tmp_path):
    png = tmp_path / "fig1.png"
    (tmp_path / "fig1.md").write_text("# Fig 1\n\nA note.\n\n| crit_read_s | ok |\n|---|---|\n| 1e-3 | True |\n")
    (tmp_path / "fig1.csv").write_text("crit_read_s,ok\n0.001,True\n")
    name, body = tables.for_figure(png)
    assert name == "fig1.md" and body.count("<table") == 1 and "critical read (s)" in body and ">yes<" in body
    (tmp_path / "fig1.md").unlink()
    name, body = tables.for_figure(png)
    assert name == "fig1.csv" and "0.001" in body
    assert tables.for_figure(tmp_path / "none.png") is None

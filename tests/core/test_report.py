"""The report page (reports/<profile>/index.html, issue 32): it opens on the verdict counts and the ledger;
claims are named in words with their ids only as anchors; rows link to the figure that backs them (or say
"no figure" and link to their study) and figures link back; main results first, a figure of ours not run at
all last; one readable copy of each table; no internal identifiers in the text the page itself writes; in a
headless browser at 1280x800 the first ledger rows are on the first screen, no number breaks, nothing lies
above the scrollable area or past its right edge."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import matplotlib.pyplot as plt
import pytest

from bench import cli
from bench.core.judging import claims, fidelity
from bench.core.presenting import ledger_page
from bench.core.presenting import report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Internal identifiers the issue lists: none may appear in the text the page writes (chrome and ledger).
INTERNAL = ("not_run", "serving_pairs", "profile ``tiny``", "(RAPL: None, NVML: None)", "``", "np.float64",
            "C_CPU", "ralm.seq_len", "d_model", ".caption.rst", "table: ")


DECL = {"definition": fidelity.Definition("end-to-end latency", "section 5.3", "per-query latency"), "needs": (),
        "clusters": 3}


def _rows():
    return [claims.claim("espn", "faster-than-mmap", "ESPN is 3.1-3.9x faster than mmap (Figure 10)", "3.1-3.9x",
                         ours=3.5, ci=(3.2, 3.8), threshold=3.0, unit="x over mmap",
                         reason="median per-query latency; " + "a long reason that runs on and on " * 12, **DECL),
            claims.claim("espn", "memory-cut", "offloading cuts the memory 5-16x", "5-16x", ours=1024000.0,
                         ci=(1000000.0, 1050000.0), threshold=5.0, unit="x",
                         reason="not_run elsewhere; serving_pairs and d_model named in a study's words", **DECL),
            claims.claim("espn", "fpga-resources", "FPGA resources (Table 6)", "30%", ours=None, threshold=None,
                         source="not_run", verdict=claims.NEEDS_HARDWARE, reason="needs an FPGA", **DECL),
            claims.claim("espn", "target-io", "target: reads", ">= 1", ours=0.5, ci=(0.4, 0.6), threshold=1.0, clusters=3),
            # an id ESPN's Tables 4/5 figure declares (claims=...): linked by the declaration, nothing cited
            claims.claim("espn", "target-within-1.2x-cached", "target: within 1.2x of cached", "<= 1.2", ours=1.1,
                         ci=(1.0, 1.2), threshold=1.2, direction="<=", clusters=3)]


@pytest.fixture
def page(tmp_path):
    p = claims.write(_rows(), tmp_path / "espn" / "claims.parquet", {"profile": "t"})
    ledger_page.write([p], tmp_path / "claims.md", tmp_path / "claims.png", "t")
    figs = tmp_path / "figures" / "espn"
    figs.mkdir(parents=True)
    for name in ("tables45", "fig10", "fig5", "iops", "table4", "table6"):
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.plot([1, 2], [1, 2])
        fig.savefig(figs / f"{name}.png")
        plt.close(fig)
        (figs / f"{name}.caption.rst").write_text(f"caption of {name} np.float64(0.5)")
    (figs / "table4.caption.rst").write_text("Table 4 of the paper (FPGA resources). Ours: not run, needs an FPGA.")
    (figs / "fig5.caption.rst").write_text("What figure 5 shows. " + "A detail sentence that goes on. " * 30)
    (figs / "tables45.md").write_text("# Table 4\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    (figs / "tables45.csv").write_text("a,b\n1,2\n")
    (figs / "iops.csv").write_text("crit_read_s,ok,size_bytes,note\n0.000131,True,1.024e+06,\n,False,12,x\n")
    out = tmp_path / "reports" / "index.html"
    assert cli.main(["report", "--claims", str(tmp_path / "claims.parquet"), "--figures", str(tmp_path / "figures"),
                     "--profile", "t", "--out", str(out)]) == 0
    return out


class _Text(HTMLParser):
    """The visible text of a page outside what the studies wrote (captions and their data tables)."""

    def __init__(self):
        super().__init__()
        self.skip, self.parts = 0, []

    def handle_starttag(self, tag, attrs):
        if tag in ("figcaption", "script", "style") or (tag == "table" and ("class", "data") in attrs):
            self.skip += 1

    def handle_endtag(self, tag):
        if tag in ("figcaption", "script", "style", "table") and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def test_opens_on_the_counts_and_ledger_then_main_results_first(page):
    text = page.read_text()
    assert text.index("class=bar") < text.index("<h2 id='paper-claims'>Paper claims (3)") \
        < text.index("<h2 id='targets'>Harness targets and checks (2)") < text.index("<figure")
    order = re.findall(r"<figure id='espn-(\w+)'", text)
    assert order == ["fig5", "fig10", "tables45", "iops", "table4", "table6"]   # ours not run at all: last
    assert "caption of fig10 0.5" in text and "np.float64" not in text
    assert "<details><summary>more</summary>" in text                  # a long caption folds its details


def test_rows_named_in_words_link_to_their_figures_and_back(page):
    text = page.read_text()
    assert "id='claim-espn-faster-than-mmap'" in text
    row = re.search(r"<tr id='claim-espn-faster-than-mmap'>(.*?)</tr>", text).group(1)
    assert "href='#espn-fig10'" in row and "Fig. 10" in row
    assert re.search(r"<tr id='claim-espn-memory-cut'>.*?<a href='#espn'>no figure</a>", text)
    declared = re.search(r"<tr id='claim-espn-target-within-1.2x-cached'>(.*?)</tr>", text).group(1)
    assert "href='#espn-tables45'" in declared                   # the figure's own claims=(...) declaration
    fig10 = re.search(r"<figure id='espn-fig10'>(.*?)</figure>", text, re.S).group(1)
    assert "href='#claim-espn-faster-than-mmap'" in fig10
    assert "3 of 5 rows link to their figure; 2 have none" in text   # memory-cut and target-io: none
    table6 = re.search(r"<figure id='espn-table6'>(.*?)</figure>", text, re.S).group(1)
    assert "href='#claim-espn-fpga-resources'" in table6
    assert text.count("href='#top'") >= 2 * 1 + 2   # every study section and ledger part links back to the top
    assert "<details><summary>" in row                # the long reason folds


def test_numbers_stay_whole_and_tables_read_as_tables(page):
    text = re.sub(r"src='data:[^']*'", "", page.read_text())
    assert "<span class=n>1,024,000 [1,000,000, 1,050,000]</span>" in text
    assert "e+06" not in text and "NaN" not in text and ">True<" not in text
    iops = re.search(r"<figure id='espn-iops'>(.*?)</figure>", text, re.S).group(1)
    assert "critical read (s)" in iops and "size (bytes)" in iops and ">yes<" in iops and "1,024,000" in iops
    t45 = re.search(r"<figure id='espn-tables45'>(.*?)</figure>", text, re.S).group(1)
    assert t45.count("<table") == 1                   # the .md and the .csv: one copy shown


def test_the_page_writes_no_internal_identifiers(page):
    parser = _Text()
    parser.feed(page.read_text())
    visible = " ".join(parser.parts)
    for word in INTERNAL:
        assert word not in visible, word
    for slug in ("faster-than-mmap", "memory-cut", "fpga-resources", "target-io", "target-within-1.2x-cached"):
        assert slug not in visible, slug          # ids are anchors, never text
    assert not re.search(r"\b[a-z]+_[a-z_]+\b", visible), re.findall(r"\b[a-z]+_[a-z_]+\b", visible)
    assert "CPU:" in visible and "Disk:" in visible and "GPU:" in visible


def test_bad_report_inputs(tmp_path, capsys):
    assert cli.main(["report", "--claims", str(tmp_path / "none.parquet"), "--figures", str(tmp_path), "--profile",
                     "t", "--out", str(tmp_path / "i.html")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_in_a_browser_the_ledger_is_on_the_first_screen_and_nothing_is_clipped(page, tmp_path):
    out = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--disable-background-networking", "--disable-component-update", "--no-first-run",
                          "--disable-quic", "--disable-sync", f"--user-data-dir={tmp_path / 'chrome'}",
                          "--window-size=1280,800", "--virtual-time-budget=3000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    m = re.search(r'data-layout="([^"]+)"', out.stdout)
    assert m, out.stderr[-2000:]
    layout = json.loads(m.group(1).replace("&quot;", '"'))
    assert layout["minTop"] >= 0            # nothing above the scrollable area
    assert layout["ledgerTop"] < 800        # the ledger on the first screen
    assert layout["firstRowTop"] < 800      # and its first row
    assert layout["brokenNumbers"] == []    # no number breaks across lines
    assert layout["scrollWidth"] <= 1280    # nothing clipped sideways


def test_the_machine_block_names_the_cpu_and_disk_the_records_name(tmp_path):
    import pandas as pd

    from bench.core.measuring import provenance, records

    rec = records.write(tmp_path / "espn" / "e2e.parquet", pd.DataFrame({"x": [1]}),
                        provenance.collect(profile="t", config={}, seed=0))
    p = claims.write(_rows(), tmp_path / "espn" / "claims.parquet", {"profile": "t", "inputs": {"e2e": [str(rec)]}})
    ledger_page.write([p], tmp_path / "claims.md", tmp_path / "claims.png", "t")
    (tmp_path / "figures").mkdir()
    found, recorded = report.machines(tmp_path / "claims.parquet")
    assert recorded and len(found) == 1
    out = report.build(tmp_path / "claims.parquet", tmp_path / "figures", tmp_path / "index.html", "t")
    block = re.search(r"<div class=machine id=machine>(.*?)</div>", out.read_text()).group(1)
    assert "Measured on" in block and found[0]["cpu"].split(" (")[0] in block and "Disk:" in block

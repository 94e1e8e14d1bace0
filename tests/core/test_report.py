"""The report page (reports/<profile>/index.html): it opens on the ledger, counts first, figures in the
paper's order with their captions under them and their tables; in a headless browser at 1280x800 the
ledger is on the first screen and nothing lies above the scrollable area."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import matplotlib.pyplot as plt
import pytest

from bench import cli
from bench.core import claims, report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def page(tmp_path):
    rows = [claims.claim("espn", "speedup", "faster than mmap", "3.1x", ours=3.5, ci=(3.2, 3.8), threshold=3.0, unit="x"),
            claims.claim("espn", "target-io", "target: reads", ">= 1", ours=0.5, ci=(0.4, 0.6), threshold=1.0)]
    p = claims.write(rows, tmp_path / "espn" / "claims.parquet", {"profile": "t"})
    claims.write_ledger([p], tmp_path / "claims.md", tmp_path / "claims.png", "t")
    figs = tmp_path / "figures" / "espn"
    figs.mkdir(parents=True)
    for name in ("tables45", "fig10", "fig5", "iops"):
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.plot([1, 2], [1, 2])
        fig.savefig(figs / f"{name}.png")
        plt.close(fig)
        (figs / f"{name}.caption.rst").write_text(f"caption of {name} np.float64(0.5)")
    (figs / "tables45.md").write_text("# Table 4\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    out = tmp_path / "reports" / "index.html"
    assert cli.main(["report", "--claims", str(tmp_path / "claims.parquet"), "--figures", str(tmp_path / "figures"),
                     "--profile", "t", "--out", str(out)]) == 0
    return out


def test_opens_on_the_ledger_with_counts_then_figures_in_paper_order(page):
    text = page.read_text()
    assert text.index("Paper claims (1)") < text.index("Harness targets and checks (1)") < text.index("<figure")
    order = re.findall(r"<figure id='espn-(\w+)'", text)
    assert order == ["fig5", "fig10", "tables45", "iops"]
    assert "caption of fig5 0.5" in text and "np.float64" not in text
    assert "<td>1</td><td>2</td>" in text  # the Markdown table is in the page


def test_bad_report_inputs(tmp_path, capsys):
    assert cli.main(["report", "--claims", str(tmp_path / "none.parquet"), "--figures", str(tmp_path), "--profile",
                     "t", "--out", str(tmp_path / "i.html")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_in_a_browser_the_ledger_is_on_the_first_screen_and_nothing_is_clipped(page, tmp_path):
    out = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--disable-background-networking", "--disable-component-update", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'chrome'}", "--window-size=1280,800",
                          "--virtual-time-budget=3000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    m = re.search(r'data-layout="([^"]+)"', out.stdout)
    assert m, out.stderr[-2000:]
    layout = json.loads(m.group(1).replace("&quot;", '"'))
    assert layout["minTop"] >= 0            # nothing above the scrollable area
    assert layout["ledgerTop"] < 800        # the ledger on the first screen
    assert layout["scrollWidth"] <= 1280    # nothing clipped sideways

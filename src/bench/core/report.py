"""The report a reader opens first (``reports/<profile>/index.html``): one self-contained page that opens
on the claims ledger, counts first (paper claims and the harness's targets apart, unstable rows counted),
then each study in the papers' order with every figure and its caption under it, figures in the paper's
order, and the Markdown and CSV tables the figures wrote. Built from the ledger and the figure files
only (restyling never reruns a measurement). Snakemake's own report (``report.html``) stays beside it.

The page is plain flowing HTML (nothing centred vertically, nothing fixed), so nothing can sit above the
scrollable area at any window size; a small script records the layout for the browser test.
"""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import pandas as pd

from . import ledger, records
from .atomic import write_text

TITLES = {"espn": "ESPN: re-ranking embeddings offloaded to SSD", "chameleon": "Chameleon: IVF-PQ on CPU, GPU and FPGA",
          "loaders": "Moving Stuff Around: document loaders under DP and DDP",
          "windve": "WindVE: embedding service with CPU offload", "trinity": "Trinity: batching for graph vector search",
          "ivf_recall": "IVF-PQ recall (the harness's own check)"}
_NUM = re.compile(r"^(fig|table)s?_?(\d+)", re.I)
LAYOUT_PROBE = ("<script>window.addEventListener('load',()=>{let top=0;for(const e of document.body.querySelectorAll('*'))"
                "{top=Math.min(top,e.getBoundingClientRect().top+window.scrollY)}const l=document.getElementById('ledger')"
                ".getBoundingClientRect();document.body.dataset.layout=JSON.stringify({minTop:top,ledgerTop:l.top,"
                "scrollWidth:document.documentElement.scrollWidth})});</script>")


def paper_order(name: str) -> tuple:
    """Figures and tables by their number in the paper (fig7 before fig10), the study's extras after."""
    m = _NUM.match(name)
    return (0, int(m.group(2)), name) if m else (1, 0, name)


def _md_table(text: str) -> str:
    """A Markdown file (title, notes, pipe tables) as HTML."""
    out, rows = [], []

    def flush():
        if rows:
            cells = [[html.escape(c.strip()) for c in r.strip().strip("|").split("|")] for r in rows
                     if not set(r.replace("|", "").strip()) <= set("-: ")]
            head, body = cells[0], cells[1:]
            out.append("<table><tr>" + "".join(f"<th>{c}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in body) + "</table>")
            rows.clear()
    for line in text.splitlines():
        if line.startswith("|"):
            rows.append(line)
            continue
        flush()
        if line.startswith("#"):
            out.append(f"<h4>{html.escape(line.lstrip('#').strip())}</h4>")
        elif line.strip():
            out.append(f"<p>{html.escape(line)}</p>")
    flush()
    return "".join(out)


def _csv_table(path: Path, max_rows: int = 40) -> str:
    df = pd.read_csv(path)
    more = f"<p class='note'>{len(df) - max_rows} more rows in {html.escape(path.name)}</p>" if len(df) > max_rows else ""
    return df.head(max_rows).to_html(index=False, border=0, float_format=lambda v: f"{v:.4g}") + more


def _figure(png: Path) -> str:
    caption = png.with_suffix(".caption.rst")
    cap = caption.read_text() if caption.exists() else ""
    img = base64.b64encode(png.read_bytes()).decode()
    parts = [f"<figure id='{html.escape(png.parent.name)}-{html.escape(png.stem)}'><img alt='{html.escape(png.stem)}' "
             f"src='data:image/png;base64,{img}'><figcaption><b>{html.escape(png.stem)}</b>: "
             f"{html.escape(ledger.clean(cap.replace('``', '')))}</figcaption>"]
    for extra in (png.with_suffix(".md"), png.with_suffix(".csv")):
        if extra.exists():
            body = _md_table(extra.read_text()) if extra.suffix == ".md" else _csv_table(extra)
            parts.append(f"<details><summary>table: {html.escape(extra.name)}</summary>{body}</details>")
    return "".join(parts) + "</figure>"


def _studies(figures_dir: Path) -> list[str]:
    found = [d.name for d in sorted(figures_dir.iterdir()) if d.is_dir()] if figures_dir.is_dir() else []
    order = list(ledger.STUDY_ORDER) + list(ledger.CHECK_STUDIES)
    return sorted(found, key=lambda s: order.index(s) if s in order else len(order))


def _counts(df: pd.DataFrame) -> str:
    rows = []
    for kind in ledger.KINDS:
        part = df[df.kind == kind]
        unstable = int(part.unstable.sum()) if "unstable" in part else 0
        rows.append(f"<li><b>{html.escape(ledger.HEADINGS[kind])} ({len(part)})</b>: {html.escape(ledger.counts(part))}; "
                    f"unstable across runs: {unstable}</li>")
    return "<ul class='counts'>" + "".join(rows) + "</ul>"


def build(claims_parquet: str | Path, figures_dir: str | Path, out: str | Path, profile: str) -> Path:
    """Write the report page from the ledger's Parquet and the figures folder."""
    df = records.read(claims_parquet)
    if "kind" not in df:
        df["kind"] = [ledger.kind_of(c, s) for c, s in zip(df.claim_id, df.study)]
    figures_dir = Path(figures_dir)
    table = ledger.to_html(df, f"Claims ledger, profile {profile}")
    table = table[table.index("<h1>"):].replace("<h1>", "<h2>").replace("</h1>", "</h2>")
    nav, sections = [], []
    for study in _studies(figures_dir):
        pngs = sorted((p for p in (figures_dir / study).glob("*.png")), key=lambda p: paper_order(p.stem))
        nav.append(f"<a href='#{study}'>{html.escape(TITLES.get(study, study))}</a>")
        sections.append(f"<section id='{study}'><h2>{html.escape(TITLES.get(study, study))}</h2>"
                        + "".join(_figure(p) for p in pngs) + "</section>")
    style = ("body{font-family:sans-serif;font-size:14px;color:#111;max-width:1500px;margin:0 auto;padding:16px}"
             "img{max-width:100%;height:auto;border:1px solid #ddd}figure{margin:24px 0}figcaption{font-size:13px;"
             "line-height:1.45;max-width:1100px}table{border-collapse:collapse;font-size:12px}td,th{border:1px solid "
             "#bbb;padding:3px;vertical-align:top;overflow-wrap:anywhere}#ledger table{width:100%}.counts{font-size:16px}.v{color:#fff;padding:2px 6px;margin-right:4px;"
             "border-radius:3px}nav a{margin-right:14px}.note{color:#444}"
             "td:nth-child(1),td:nth-child(5),td:nth-child(7),td:nth-child(8),td:nth-child(9){white-space:nowrap}")
    page = (f"<!doctype html><meta charset='utf-8'><title>Benchmark report, profile {html.escape(profile)}</title>"
            f"<style>{style}</style><h1>Retrieval-for-RAG benchmark: claims ledger, profile {html.escape(profile)}</h1>"
            f"<div id='ledger'>{_counts(df)}<nav>{''.join(nav)}</nav>{table}</div>{''.join(sections)}{LAYOUT_PROBE}\n")
    return write_text(Path(out), page)

"""The report a reader opens first (``reports/<profile>/index.html``): one self-contained page that opens
on the claims ledger, then each study with its figures, captions and tables.

- At the top: the verdict counts per study as a small HTML bar chart (the HTML equivalent of
  ``claims.png``), the machine that measured (CPU and disk, from the records' provenance), the studies.
- The ledger: claims named in words (the claim's id kept only as the row's ``id``, its anchor), numbers
  that never break (``ours [95% CI]`` compact, its unit under it), the reason folded into an expandable
  cell with the scale, interval and premises; each row links to the figure that backs it, or says it has
  none and links to its study (:mod:`bench.core.presenting.report_links`).
- Each study: its main results first (paper figures, then paper tables, then the study's extras; a
  figure whose rows are all "not run" last), each figure with its caption (what it shows first, the
  details folded below), the ledger rows it backs, and one readable copy of its table
  (:mod:`bench.core.presenting.tables`), and its legibility warning where the figure wrote one; every section ends
  with a link back to the top.

Built from the ledger and the figure files only (restyling never reruns a measurement). Snakemake's own
report (``report.html``) stays beside it. The page is plain flowing HTML (nothing fixed or centred), so
nothing can sit above the scrollable area; a small script records the layout for the browser test.
"""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import pandas as pd

from ..machine import hardware

from ..judging import ledger

from ..measuring import records

from . import report_links, tables
from ..base.atomic import write_text

def _title(study: str) -> str:
    """The study's heading, from its own declaration (core names no study)."""
    from ..declaring.study import by_name

    st = by_name().get(study)
    return st.heading if st else study.replace("_", " ")


def _short(study: str) -> str:
    from ..declaring.study import by_name

    st = by_name().get(study)
    return st.label if st else study.replace("_", " ")


SOURCE_WORDS = {"not_run": "not run", "measured": "measured", "emulated": "emulated", "modelled": "modelled"}
DIRECTION = {">=": "≥", "<=": "≤", ">": ">", "<": "<"}
CAPTION_SHOWN = 420       # characters of a caption shown before "more" (about 3 lines at 1100 px)
SUMMARY_CHARS = 90        # characters of a reason shown in its folded cell
_SCI = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?[eE][-+]?\d+)(?![\w.])")
_NUMERIC_TOKEN = re.compile(r"(\S*\d\S*)")
_NOT_RUN_CAPTION = re.compile(r"\bours:?\s+not run\b|^\s*[\w ]+:\s*not run\b", re.I)
LAYOUT_PROBE = ("<script>window.addEventListener('load',()=>{let top=0;"
                "for(const e of document.body.querySelectorAll('*'))"
                "{top=Math.min(top,e.getBoundingClientRect().top+window.scrollY)}"
                "const l=document.getElementById('ledger').getBoundingClientRect();"
                "const row=document.querySelector('table.ledger tbody tr:not(.study)');"
                "const broken=[...document.querySelectorAll('table.ledger .n')].filter(e=>e.getClientRects().length>1)"
                ".map(e=>e.textContent);document.body.dataset.layout=JSON.stringify({minTop:top,ledgerTop:l.top,"
                "firstRowTop:row?row.getBoundingClientRect().top+window.scrollY:null,brokenNumbers:broken,"
                "scrollWidth:document.documentElement.scrollWidth,"
                "scrollHeight:document.documentElement.scrollHeight})});"
                "</script>")
STYLE = """
body{font-family:system-ui,sans-serif;font-size:14px;color:#111;max-width:1500px;margin:0 auto;padding:12px 16px}
h1{font-size:22px;margin:4px 0 8px}h2{font-size:19px;margin:22px 0 6px}h3{font-size:16px;margin:18px 0 4px}
a{color:#0b57a4}.top{font-size:12px;font-weight:normal;margin-left:12px}
.head{display:flex;gap:20px;align-items:flex-start;flex-wrap:wrap}.panel{flex:1 1 420px}
.bars{font-size:12px;border-collapse:collapse}.bars td{border:0;padding:1px 4px}
.bar{display:flex;width:300px;height:16px}
.bar span{color:#fff;font-size:11px;text-align:center;line-height:16px;overflow:hidden}
.machine{font-size:12px;color:#333;margin:6px 0;line-height:1.4}.machine summary{cursor:pointer}
.key span{display:inline-block;color:#fff;padding:1px 6px;margin:2px 3px 2px 0;border-radius:3px;font-size:12px}
nav{margin:6px 0 2px}nav a{margin-right:14px}
table.ledger{border-collapse:collapse;font-size:12.5px;width:100%}
.ledger td,.ledger th{border:1px solid #c8c8c8;padding:3px 5px;vertical-align:top;text-align:left}
.ledger th{background:#f2f2f2;white-space:nowrap}.ledger tr.study td{background:#fafafa;font-weight:bold}
.ledger tr:target td{background:#fff7d6}.n{white-space:nowrap}.u{display:block;color:#555;font-size:11.5px}
.claim{min-width:220px}.why{min-width:230px;max-width:360px}.verdict{font-weight:bold}.runs{font-family:monospace}
.why summary{cursor:pointer}.why details[open] .s{display:none}.why p{margin:4px 0}
.why details[open] summary::after{content:"fold";color:#0b57a4}
img{max-width:100%;height:auto;border:1px solid #ddd}figure{margin:18px 0 28px}
figcaption{font-size:13.5px;line-height:1.45;max-width:1100px}figcaption details summary{cursor:pointer;color:#0b57a4}
.rows{font-size:13px;margin:4px 0}.note{color:#444;font-size:12px}
table.data{border-collapse:collapse;font-size:12px;margin:4px 0}
.data td,.data th{border:1px solid #c8c8c8;padding:2px 6px}
.data th{background:#f2f2f2;text-align:left;vertical-align:bottom}.data td.num,.data th.num{text-align:right}
.data td.num{white-space:nowrap;font-variant-numeric:tabular-nums}
"""


def paper_order(name: str) -> tuple:
    """Paper figures by number, then paper tables and equations by number, then the study's extras."""
    kind, nums, _ = report_links.stem_refs(name)
    rank = {"fig": 0, "table": 1, "eq": 1}.get(kind, 2)
    return (rank, nums[0] if nums else 0, name)


def _words(text: object) -> str:
    """Ledger text as words: numpy reprs and scientific notation as plain numbers (1e+06 -> 1,000,000),
    ``not_run`` as "not run", other snake_case with spaces."""
    return tables.snake_words(_SCI.sub(lambda m: tables.number(float(m.group(1))),
                                       ledger.clean(text).replace("``", "")))


def _nowrap_numbers(text: str) -> str:
    """Escaped text whose tokens holding a digit never break inside ("99.3%-99.7%", "1000/3000")."""
    return "".join(f"<span class=n>{html.escape(p)}</span>" if i % 2 else html.escape(p)
                   for i, p in enumerate(_NUMERIC_TOKEN.split(text)))


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and x != x)


def _ours(r) -> str:
    if _nan(r.ours):
        return "<span class=n>–</span>"
    txt = tables.number(float(r.ours))
    if not _nan(r.ci_low) and not _nan(r.ci_high):
        txt += f" [{tables.number(float(r.ci_low))}, {tables.number(float(r.ci_high))}]"
    unit = f"<span class=u>{_nowrap_numbers(_words(r.unit))}</span>" if str(r.unit or "").strip() else ""
    return f"<span class=n>{html.escape(txt)}</span>{unit}"


def _threshold(r) -> str:
    if _nan(r.threshold):
        return "–"
    t = tables.number(float(r.threshold))
    hi = getattr(r, "band_high", None)
    if r.direction == "within" and not _nan(hi):
        return f"<span class=n>within [{t}, {tables.number(float(hi))}]</span>"
    also = getattr(r, "threshold_also", None)
    sign = DIRECTION.get(r.direction, r.direction)
    if not _nan(also):
        return f"<span class=n>{html.escape(sign)} {tables.number(float(also))}</span> and <span class=n>{t}</span>"
    return f"<span class=n>{html.escape(sign)} {t}</span>"


def _summary(text: str) -> str:
    """The reason's first clause (at least 40 characters), cut at a word near :data:`SUMMARY_CHARS`."""
    first = ""
    for clause in re.split(r"(?<=[.;])\s", text):
        first = f"{first} {clause}".strip()
        if len(first) >= 40:
            break
    if len(first) > SUMMARY_CHARS:
        first = first[:SUMMARY_CHARS].rsplit(" ", 1)[0] + " …"
    return first


def _why(r) -> str:
    """The reason, folded: why the verdict follows shown (not the method), and inside it the whole reason, the
    paper's definition beside ours, the hardware the claim needs and where it ran, the scale, the interval
    and the premises."""
    reason = _words(r.reason)
    verdict_why = _words(getattr(r, "why", "") or "")
    more = [f"<p>{_nowrap_numbers(reason)}</p>"]
    for name, text in (("Definition", getattr(r, "definition", "")), ("Needs", _needs(r)),
                       ("Scale", getattr(r, "scale", "")), ("Interval", getattr(r, "interval", "")),
                       ("Premises", getattr(r, "premise", ""))):
        if not _nan(text) and str(text).strip():
            more.append(f"<p><b>{name}:</b> {_nowrap_numbers(_words(text))}</p>")
    shown = _summary(verdict_why) if verdict_why.strip() else _summary(reason)
    return (f"<details><summary><span class=s>{_nowrap_numbers(shown)}</span></summary>{''.join(more)}"
            f"</details>")


def _needs(r) -> str:
    """The hardware the claim's mechanism needs and what the records ran on, in words."""
    from ..judging import fidelity

    needs = getattr(r, "needs", None)
    if _nan(needs) or needs is None or not str(needs).strip():
        return ""
    ran = str(getattr(r, "ran_on", "") or "").strip()
    have = fidelity.words(ran.split(",")) if ran else "none of it (a stand-in here)"
    return f"{fidelity.words(str(needs).split(','))}; these records ran on {have}"


def row_id(study: str, claim_id: str) -> str:
    return f"claim-{study}-{claim_id}"


def _figure_cell(study: str, stems: list[str], sections: set[str]) -> str:
    if stems:
        return "<br>".join(f"<a class=n href='#{html.escape(study)}-{html.escape(s)}'>"
                           f"{html.escape(report_links.label(s, short=True))}</a>" for s in stems)
    if study in sections:
        return f"<a href='#{html.escape(study)}'>no figure</a>"
    return "no figure"


LEDGER_HEAD = ("claim", "paper", "ours [95% CI]", "threshold", "source", "verdict", "last runs", "figure", "why")


def _ledger_rows(part: pd.DataFrame, links, sections: set[str]) -> str:
    rows, study = [], None
    for r in part.itertuples(index=False):
        if r.study != study:
            study = r.study
            rows.append(f"<tr class=study><td colspan={len(LEDGER_HEAD)}>"
                        f"{html.escape(_short(study))}</td></tr>")
        colour = ledger.VERDICT_COLORS.get(r.verdict, "#111")
        unstable = " (unstable)" if bool(getattr(r, "unstable", False)) else ""
        hist = getattr(r, "history", "") or "–"
        cells = [f"<td class=claim>{_nowrap_numbers(_words(r.claim))}</td>",
                 f"<td>{_nowrap_numbers(_words(r.paper_value))}</td>", f"<td>{_ours(r)}</td>",
                 f"<td>{_threshold(r)}</td>",
                 f"<td class=n>{html.escape(SOURCE_WORDS.get(r.source, _words(r.source)))}</td>",
                 f"<td class=verdict style='color:{colour}'>{html.escape(r.verdict)}{unstable}</td>",
                 f"<td class='n runs'>{html.escape(str(hist))}</td>",
                 f"<td class=n>{_figure_cell(r.study, links.get((r.study, r.claim_id), []), sections)}</td>",
                 f"<td class=why>{_why(r)}</td>"]
        rows.append(f"<tr id='{html.escape(row_id(r.study, r.claim_id))}'>{''.join(cells)}</tr>")
    return "".join(rows)


def _ledger(df: pd.DataFrame, links, sections: set[str]) -> str:
    head = "".join(f"<th>{h}</th>" for h in LEDGER_HEAD)
    out = []
    for kind in ledger.KINDS:
        part = df[df.kind == kind]
        if part.empty:
            continue
        unstable = int(part.unstable.sum()) if "unstable" in part else 0
        anchor = "paper-claims" if kind == ledger.PAPER else "targets"
        out.append(f"<h2 id='{anchor}'>{html.escape(ledger.HEADINGS[kind])} ({len(part)})<a class=top href='#top'>"
                   f"back to top</a></h2><p class=note>{html.escape(ledger.counts(part))}; unstable across runs: "
                   f"{unstable}</p><table class=ledger><thead><tr>{head}</tr></thead><tbody>"
                   f"{_ledger_rows(part, links, sections)}</tbody></table>")
    return "".join(out)


def _bars(df: pd.DataFrame, studies: list[str], sections: set[str]) -> str:
    """Verdict counts per study, paper claims and the harness's checks side by side (claims.png in HTML)."""
    verdicts = [v for v in ledger.VERDICT_COLORS]
    most = max([1, *df.groupby(["kind", "study"]).size().tolist()])
    panels = []
    for kind in ledger.KINDS:
        part = df[df.kind == kind]
        rows = []
        for s in studies:
            counts = part[part.study == s].verdict.value_counts()
            segs = "".join(f"<span title='{html.escape(v)}: {counts[v]}' style='background:"
                           f"{ledger.VERDICT_COLORS[v]};width:{300 * counts[v] / most:.0f}px'>{counts[v]}</span>"
                           for v in verdicts if counts.get(v, 0))
            name = _short(s)
            name = f"<a href='#{s}'>{html.escape(name)}</a>" if s in sections else html.escape(name)
            rows.append(f"<tr><td>{name}</td><td><div class=bar>{segs or '<i>none</i>'}</div></td></tr>")
        panels.append(f"<div class=panel><b>{html.escape(ledger.HEADINGS[kind])} ({len(part)})</b>"
                      f"<table class=bars>{''.join(rows)}</table></div>")
    key = "".join(f"<span style='background:{c}'>{html.escape(v)}</span>" for v, c in ledger.VERDICT_COLORS.items())
    return f"<div class=head>{''.join(panels)}</div><div class=key>{key}</div>"


# ---------------------------------------------------------------------------------------- the machine
def _provenances(claims_parquet: Path) -> list[dict]:
    """The provenance of the records behind the ledger: ledger -> each study's claims -> their records."""
    seen, out = set(), []

    def prov(p) -> dict:
        path = Path(p)
        if str(path) in seen or not records.paths(path)["provenance"].exists():
            return {}
        seen.add(str(path))
        try:
            return records.read_provenance(path)
        except (OSError, ValueError):
            return {}
    for study_claims in prov(claims_parquet).get("inputs", []) or []:
        inputs = prov(study_claims).get("inputs", {}) or {}
        for paths in (inputs.values() if isinstance(inputs, dict) else [inputs]):
            for p in (paths if isinstance(paths, list) else [paths]):
                pr = prov(p)
                if pr:
                    out.append(pr)
    return out


def machines(claims_parquet: Path) -> tuple[list[dict[str, str]], bool]:
    """The machines the records name (CPU and disk in words), and whether they came from the records
    (False: none named one, so this machine, the one building the page, is shown instead)."""
    found: list[dict[str, str]] = []
    for p in _provenances(claims_parquet):
        if p.get("hardware"):
            w = hardware.words(p["hardware"])
        elif p.get("cpu_model"):
            c = p.get("cpu") or {}
            vm = "; a virtual machine" if c.get("hypervisor") else ""
            w = {"cpu": hardware.cpu_words({"model_name": p["cpu_model"], "family": c.get("family"),
                                           "model": c.get("model"), "usable_cpus": p.get("cpu_cores")}) + vm,
                 "disk": "not recorded (records older than the disk's provenance)"}
        else:
            continue
        gpu = p.get("gpu") or {}
        w["gpu"] = f"{gpu.get('gpu_count', 1)} x {gpu['gpu_model']}" if gpu.get("gpu_model") else "no GPU"
        w["host"] = str(p.get("hostname") or "")
        if w not in found:
            found.append(w)
    if found:   # one line per host: the one naming the disk where records of two code versions meet
        best: dict[str, dict[str, str]] = {}
        for w in found:
            if w["host"] not in best or "not recorded" in best[w["host"]]["disk"]:
                best[w["host"]] = w
        return list(best.values()), True
    here = hardware.words(hardware.collect("."))
    here["gpu"] = "not recorded"
    return [here], False


def _machine_block(claims_parquet: Path, profile: str) -> str:
    found, recorded = machines(claims_parquet)
    head = "Measured on" if recorded else "Built on (the records name no machine)"
    lines = [f"<b>CPU:</b> {html.escape(m['cpu'])}. <b>Disk:</b> {html.escape(m['disk'])}. "
             f"<b>GPU:</b> {html.escape(m.get('gpu', 'not recorded'))}." for m in found]
    body = lines[0] if len(lines) == 1 else "".join(f"<br>Machine {i + 1}: {line}" for i, line in enumerate(lines))
    return f"<div class=machine id=machine><b>{head}</b> (run profile {html.escape(profile)}): {body}</div>"


# ---------------------------------------------------------------------------------------- figures
def _caption(png: Path) -> str:
    """The figure's caption: what it shows first, the rest folded under "more"."""
    f = png.with_suffix(".caption.rst")   # the study's words, shown as written (numpy reprs and rst quotes aside)
    text = ledger.clean(f.read_text().strip()).replace("``", "") if f.exists() else ""
    if len(text) <= CAPTION_SHOWN:
        return html.escape(text)
    cut = max(text.rfind(". ", 0, CAPTION_SHOWN), text.rfind("; ", 0, CAPTION_SHOWN))
    cut = cut + 1 if cut > 80 else text.rfind(" ", 0, CAPTION_SHOWN)
    return (f"{html.escape(text[:cut])} <details><summary>more</summary>{html.escape(text[cut:].strip())}"
            f"</details>")


def _legibility(png: Path) -> str:
    """The figure's legibility warning (``NAME.legibility.txt``, written by :func:`bench.core.presenting.plotting.save` when
    its smallest text shows under 10 px on this page), shown under the figure; nothing when it has none."""
    note = png.with_suffix(".legibility.txt")
    if not note.exists():
        return ""
    text = note.read_text(errors="replace").strip().removeprefix("warning:").strip()
    return f"<p class='note legibility'>Text too small as shown: {html.escape(text)}</p>"


def _not_run_only(png: Path, rows: pd.DataFrame) -> bool:
    """Whether a figure shows nothing of ours: its rows are all not run, or its caption or CSV says so."""
    if len(rows) and (rows.source == "not_run").all():
        return True
    cap = png.with_suffix(".caption.rst")
    if cap.exists() and _NOT_RUN_CAPTION.search(cap.read_text()):
        return True
    csv = png.with_suffix(".csv")
    if csv.exists():
        try:
            d = pd.read_csv(csv)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
            return False
        return "source" in d and len(d) > 0 and d.source.astype(str).isin(["not_run", "not run"]).all()
    return False


def _figure(study: str, png: Path, rows: pd.DataFrame) -> str:
    img = base64.b64encode(png.read_bytes()).decode()
    title = report_links.label(png.stem)
    title = title[:1].upper() + title[1:]
    back = ("Ledger rows this figure backs: " + "; ".join(
        f"<a href='#{html.escape(row_id(r.study, r.claim_id))}'>{html.escape(_summary(_words(r.claim)))}</a> "
        f"(<span style='color:{ledger.VERDICT_COLORS.get(r.verdict, '#111')}'>{html.escape(r.verdict)}</span>)"
        for r in rows.itertuples(index=False))) if len(rows) else "No ledger row cites this figure."
    parts = [f"<figure id='{html.escape(study)}-{html.escape(png.stem)}'><h3>{html.escape(title)}</h3>"
             f"<img alt='{html.escape(title)}' src='data:image/png;base64,{img}'>{_legibility(png)}"
             f"<figcaption>{_caption(png)}</figcaption><p class=rows>{back}</p>"]
    table = tables.for_figure(png)
    if table:
        parts.append(f"<details><summary>the figure's data as a table</summary>{table[1]}</details>")
    return "".join(parts) + "</figure>"


def _studies(figures_dir: Path) -> list[str]:
    found = [d.name for d in sorted(figures_dir.iterdir()) if d.is_dir()] if figures_dir.is_dir() else []
    return sorted(found, key=ledger.rank)


def _order(pngs: list[Path], rows_of) -> list[Path]:
    """Main results first: paper figures, paper tables, extras; a figure of ours not run at all last."""
    return sorted(pngs, key=lambda p: (_not_run_only(p, rows_of(p)), paper_order(p.stem)))


def build(claims_parquet: str | Path, figures_dir: str | Path, out: str | Path, profile: str) -> Path:
    """Write the report page from the ledger's Parquet and the figures folder."""
    claims_parquet = Path(claims_parquet)
    df = records.read(claims_parquet)
    if "kind" not in df:
        df["kind"] = [ledger.kind_of(c, s) for c, s in zip(df.claim_id, df.study)]
    figures_dir = Path(figures_dir)
    studies = _studies(figures_dir)
    figs = {s: sorted((figures_dir / s).glob("*.png")) for s in studies}
    links = report_links.link(df, figs)
    backs: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(df.itertuples(index=False)):
        for stem in links[(r.study, r.claim_id)]:
            backs.setdefault((r.study, stem), []).append(i)

    def rows_of(study):
        return lambda p: df.iloc[backs.get((study, p.stem), [])]
    sections = set(studies)
    all_studies = sorted(dict.fromkeys([*df.study, *studies]), key=ledger.rank)
    nav = "".join(f"<a href='#{s}'>{html.escape(_short(s))}</a>" for s in studies)
    body = []
    for s in studies:
        figures = "".join(_figure(s, p, rows_of(s)(p)) for p in _order(figs[s], rows_of(s)))
        body.append(f"<section id='{s}'><h2>{html.escape(_title(s))}<a class=top href='#top'>back to top</a>"
                    f"</h2>{figures or '<p>No figures.</p>'}<p><a href='#top'>back to top</a></p></section>")
    linked = sum(bool(links[k]) for k in links)
    page = (f"<!doctype html><html lang=en><meta charset='utf-8'><meta name=viewport content='width=device-width'>"
            f"<title>Benchmark report: {html.escape(profile)} run</title><style>{STYLE}</style>"
            f"<h1 id=top>Retrieval-for-RAG benchmark: which paper claims reproduced</h1>"
            f"<div id='ledger'>{_bars(df, all_studies, sections)}{_machine_block(claims_parquet, profile)}"
            f"<nav>Studies: {nav}</nav>"
            f"<p class=note>Ours: estimate [95% interval], unit below. Last runs: verdicts of the last "
            f"{ledger.HISTORY_RUNS} runs on this machine, oldest first (R reproduced, N not reproduced, I "
            f"inconclusive, H needs hardware we lack, T needs a tool we lack, O out of reach at this scale, S sanity "
            f"check: set by the paper's own numbers, not judged). "
            f"{linked} of {len(df)} rows link to their figure; {len(df) - linked} have none. Click a reason to read "
            f"it whole.</p>"
            f"{_ledger(df, links, sections)}</div>{''.join(body)}{LAYOUT_PROBE}\n")
    return write_text(Path(out), page)


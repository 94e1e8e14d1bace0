"""The data tables beside each figure, formatted for reading on the report page ("tables as
tables"): one copy per figure (a study's Markdown table when it wrote one, else its CSV), blanks instead
of NaN, yes/no instead of True/False, numbers without scientific notation (thousands separators, three
significant digits), and column names in words with their units (``crit_read_s`` -> "critical read (s)").

The figure's files are never changed: this only decides how the page shows them.
"""
from __future__ import annotations

import html
import io
import math
import re
from pathlib import Path

import pandas as pd

# Words for the abbreviations column names use; anything else is kept as written.
WORDS = {"crit": "critical", "ann": "ANN", "bw": "bandwidth", "mrr": "MRR", "ndcg": "nDCG", "norm": "normalised",
         "qd": "queue depth", "pss": "PSS", "uss": "USS", "rss": "RSS", "lat": "latency", "tput": "throughput",
         "cfg": "configuration", "config": "configuration", "num": "number of", "n": "n", "ci": "95% CI",
         "lo": "low", "hi": "high", "pct": "%", "eq4": "equation 4", "qps": "queries/s", "iops": "IOPS",
         "gpu": "GPU", "cpu": "CPU", "fpga": "FPGA", "ssd": "SSD", "dram": "DRAM", "id": "id", "ids": "ids",
         "acc": "accelerator", "slo": "SLO", "ttft": "TTFT", "tpot": "TPOT", "p50": "p50", "p95": "p95",
         "p99": "p99", "irds": "ir_datasets", "dp": "DP", "ddp": "DDP", "pq": "PQ", "ivf": "IVF", "k": "K",
         "kb": "KB", "mb": "MB", "gb": "GB", "nprobe": "nprobe", "nlist": "nlist", "cls": "CLS", "bow": "BOW",
         "max": "max", "min": "min", "std": "std", "rerank": "re-rank", "io": "I/O", "lm": "LM", "ralm": "RALM"}
# Unit suffixes: the last tokens of a column name, written in brackets.
UNITS = {"s": "s", "sec": "s", "ms": "ms", "us": "µs", "ns": "ns", "bytes": "bytes", "b": "bytes", "kb": "KB",
         "kib": "KiB", "mb": "MB", "mib": "MiB", "gb": "GB", "gib": "GiB", "mbps": "MB/s", "gbps": "GB/s",
         "pct": "%", "percent": "%", "w": "W", "j": "J", "qps": "queries/s", "tps": "tokens/s", "x": "x"}
# Whole names that read better written out.
NAMES = {"crit_read_s": "critical read (s)", "prefetch_wait_s": "prefetch wait (s)", "encode_s": "encode (s)",
         "ann_s": "ANN search (s)", "rerank_s": "re-rank (s)", "rerank_n": "re-ranked top n",
         "bw_MBps": "bandwidth (MB/s)", "threshold_eq4": "equation 4 threshold (queries)",
         "ci_low": "95% CI low", "ci_high": "95% CI high", "paper_value": "paper", "n_base": "database vectors",
         "dim": "dimension", "d_model": "model dimension", "seq_len": "sequence length", "batch_size": "batch size"}
KEEP = {"ir_datasets", "ir_measures"}          # names whose underscore is part of the name
_SNAKE = re.compile(r"(?<![\w/.-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w/-])")


def snake_words(text: str) -> str:
    """snake_case words in a text written with spaces (``direct_prefetch`` -> "direct prefetch"), names
    in :data:`KEEP` (``ir_datasets``) kept."""
    return _SNAKE.sub(lambda m: m.group(1) if m.group(1) in KEEP else m.group(1).replace("_", " "), text)


def _word(token: str) -> str:
    """One token of a column name in words (``mrr@10`` -> "MRR@10")."""
    head, at, tail = token.partition("@")
    return WORDS.get(head.lower(), head) + at + tail


def header_words(name: object) -> str:
    """A column name in words with its unit: explicit names first, else split on ``_`` and read a
    trailing unit (``_s`` -> "(s)", ``_ms_per_query`` -> "(ms per query)")."""
    raw = str(name).strip()
    if raw in NAMES:
        return NAMES[raw]
    if raw in KEEP or not raw:
        return raw
    tokens = [t for t in raw.split("_") if t]
    if len(tokens) >= 3 and tokens[-2] == "per" and tokens[-1].lower() in UNITS:   # tokens_per_s -> tokens/s
        rate = f"{_word(tokens[-3])}/{UNITS[tokens[-1].lower()]}"
        rest = " ".join(_word(t) for t in tokens[:-3])
        return f"{rest} ({rate})" if rest else rate
    unit = ""
    for i in range(1, len(tokens)):   # the first unit token after which only "per <thing>" follows
        tail = tokens[i + 1:]
        if tokens[i].lower() in UNITS and (not tail or (tail[0] == "per" and len(tail) >= 2)):
            unit = " ".join([UNITS[tokens[i].lower()], *tail])
            tokens = tokens[:i]
            break
    text = " ".join(_word(t) for t in tokens)
    return f"{text} ({unit})" if unit else text


def number(v: float) -> str:
    """A number for reading: integers with thousands separators, others to three significant digits,
    never in scientific notation (1.024e+06 -> 1,024,000; 0.000131 -> 0.000131)."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "" if v is None or math.isnan(v) else ("∞" if v > 0 else "−∞")
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    decimals = max(0, 2 - int(math.floor(math.log10(a))))
    text = f"{v:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def cell(v: object) -> str:
    """One cell as text: blank for NaN/None, yes/no for booleans, numbers via :func:`number`, snake_case
    words with spaces."""
    if v is None:
        return ""
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return "yes" if v else "no"
    if isinstance(v, (int, float)) or type(v).__module__ == "numpy":
        try:
            return number(float(v))
        except (TypeError, ValueError):
            return str(v)
    s = str(v).strip()
    low = s.lower()
    if low in ("nan", "none", "<na>", "nat", "null"):
        return ""
    if low in ("true", "false"):
        return "yes" if low == "true" else "no"
    try:
        f = float(s.replace(",", ""))
    except ValueError:
        return snake_words(s)
    if re.fullmatch(r"[-+]?[\d,]*\.?\d+(?:[eE][-+]?\d+)?", s) and not re.fullmatch(r"[-+]?0\d+", s):
        return number(f)
    return s


def _numeric(values: list[str]) -> bool:
    vals = [v for v in values if v]
    return bool(vals) and all(re.fullmatch(r"[-−+]?[\d,]*\.?\d*|∞|−∞", v) for v in vals)


def to_html(header: list[object], rows: list[list[object]], max_rows: int | None = None) -> str:
    """A table with readable headers and cells; numeric columns right-aligned and never wrapped."""
    head = [header_words(h) for h in header]
    body = [[cell(v) for v in r] for r in rows]
    shown = body[:max_rows] if max_rows else body
    num = [_numeric([r[j] for r in body if j < len(r)]) for j in range(len(head))]
    th = "".join(f"<th{' class=num' if num[j] else ''}>{html.escape(h)}</th>" for j, h in enumerate(head))
    tr = "".join("<tr>" + "".join(f"<td{' class=num' if j < len(num) and num[j] else ''}>{html.escape(c)}</td>"
                                  for j, c in enumerate(r)) + "</tr>" for r in shown)
    more = (f"<p class='note'>{len(body) - len(shown)} more rows in the figure's CSV file</p>"
            if len(shown) < len(body) else "")
    return f"<table class='data'><thead><tr>{th}</tr></thead><tbody>{tr}</tbody></table>{more}"


def _split(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def markdown(text: str, max_rows: int | None = 60) -> str:
    """A Markdown file (a title, notes, pipe tables) as HTML, its tables through :func:`to_html`."""
    out: list[str] = []
    rows: list[str] = []

    def flush():
        if rows:
            cells = [_split(r) for r in rows if not set(r.replace("|", "").strip()) <= set("-: ")]
            if cells:
                out.append(to_html(cells[0], cells[1:], max_rows))
            rows.clear()
    for line in text.splitlines():
        if line.lstrip().startswith("|"):
            rows.append(line)
            continue
        flush()
        if line.startswith("#"):
            out.append(f"<h4>{html.escape(line.lstrip('#').strip())}</h4>")
        elif line.strip():
            bullet = line.lstrip()[:2] in ("- ", "* ")
            out.append(f"<p>{html.escape(line.strip()[2:].strip() if bullet else line)}</p>")
    flush()
    return "".join(out)


def csv(text: str, max_rows: int | None = 60) -> str:
    """A CSV file as HTML through :func:`to_html` (types as pandas reads them)."""
    df = pd.read_csv(io.StringIO(text))
    return to_html(list(df.columns), df.astype(object).values.tolist(), max_rows)


def for_figure(png: Path) -> tuple[str, str] | None:
    """The one table to show beside a figure: its Markdown (the study's own layout and notes) when it
    wrote one, else its CSV. Returns (file name, HTML), or None without a table."""
    md, c = png.with_suffix(".md"), png.with_suffix(".csv")
    if md.exists() and "|" in md.read_text():
        return md.name, markdown(md.read_text())
    if c.exists():
        try:
            return c.name, csv(c.read_text())
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
            return None
    if md.exists():
        return md.name, markdown(md.read_text())
    return None

"""Which figure backs which ledger row, for the report page ("each row links to its figure, each
figure links back to its rows"), and how a figure is named in words.

A claim row names no figure, so the link is found from what the row and the figures already say, in this
order, the first that finds any:

1. the figure's own declaration: ``claims=(...)`` in its :func:`bench.core.presenting.figures.figure` (the ids of the
   rows whose numbers it shows; a pattern such as ``target-vs-hnsw-*`` for ids made per dataset), read from
   the study's registry ``bench.<study>.figures.FIGURES``;
   a ``figure`` (or ``figures``) column in the ledger, if a study fills one (figure stems, comma-separated);
2. the figure's caption, description or table naming the claim's id;
3. the paper's figure, table or equation the claim cites ("(Figure 10)", "Table III", "equation 4",
   "eq. 6", an id such as ``tables-i-ii-...``) matched to the figure stems of the same study
   (``fig8_9`` is Figures 8 and 9, ``tables45`` Tables 4 and 5, ``table_3`` Table 3).

Nothing else is guessed: a row none of these finds says "no figure" and links to its study's section.
"""
from __future__ import annotations

import re
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Iterable

import pandas as pd

from .tables import header_words

ROMAN = {"i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5, "vi": 6, "vii": 7, "viii": 8, "ix": 9, "x": 10, "xi": 11,
         "xii": 12}
_KIND = {"fig": "fig", "figs": "fig", "figure": "fig", "figures": "fig", "table": "table", "tables": "table",
         "eq": "eq", "eqs": "eq", "equation": "eq", "equations": "eq"}
_NUM = r"(?:\d+|[ivxIVX]+)\b"
_REF = re.compile(rf"\b(fig(?:ure)?s?|tables?|eq(?:uation)?s?)\.?\s*({_NUM}(?:\s*(?:[-–/,&]|and)\s*{_NUM})*)",
                  re.I)
_ID_REF = re.compile(r"(?:^|-)(fig(?:ure)?s?|tables?|eq(?:uation)?s?)-?((?:\d+|[ivx]+)(?:-(?:\d+|[ivx]+))*)(?=-|$)")
_STEM = re.compile(r"^(fig|figure|table|eq|equation)(s?)_?(\d+(?:_\d+)*)(?:_(.*))?$", re.I)
LABEL = {"fig": ("Figure", "Figures"), "table": ("Table", "Tables"), "eq": ("Equation", "Equations")}
SHORT = {"fig": ("Fig.", "Figs."), "table": ("Table", "Tables"), "eq": ("Eq.", "Eqs.")}


def _num(tok: str) -> int | None:
    t = tok.strip().lower()
    if t.isdigit():
        return int(t)
    return ROMAN.get(t)


def _numbers(text: str) -> list[int]:
    """"8/9" -> [8, 9]; "I-II" and "1-3" -> the range; "4, 5 and 6" -> [4, 5, 6]."""
    toks = re.split(r"\s*([-–/,&]|\band\b)\s*", text.strip())
    out: list[int] = []
    prev, rng = None, False
    for t in toks:
        if t in ("-", "–"):
            rng = True
            continue
        n = _num(t)
        if n is None:
            rng = False
            continue
        if rng and prev is not None and 0 < n - prev <= 20:
            out.extend(range(prev + 1, n + 1))
        else:
            out.append(n)
        prev, rng = n, False
    return out


def references(*texts: object, claim_id: str = "") -> set[tuple[str, int]]:
    """The paper's figures, tables and equations cited in the texts and the claim id: {("fig", 10), ...}."""
    refs: set[tuple[str, int]] = set()
    for text in texts:
        for kind, nums in _REF.findall(str(text or "")):
            if kind.lower().startswith("eq") and not re.fullmatch(r"[\d\s,/&and–-]+", nums):
                continue   # "eq. IV" is not an equation number anyone writes
            refs |= {(_KIND[kind.lower()], n) for n in _numbers(nums)}
    for kind, nums in _ID_REF.findall(claim_id.lower()):
        refs |= {(_KIND[kind], n) for n in _numbers(nums)}
    return refs


def stem_refs(stem: str) -> tuple[str | None, list[int], str]:
    """A figure stem's kind, numbers and rest: ``fig8_9`` -> ("fig", [8, 9], ""), ``tables45`` -> ("table",
    [4, 5], ""), ``fig1_roofline`` -> ("fig", [1], "roofline"), ``iops`` -> (None, [], "iops")."""
    m = _STEM.match(stem)
    if not m:
        return None, [], stem
    kind, plural, digits, rest = _KIND[m.group(1).lower()], m.group(2), m.group(3), m.group(4) or ""
    parts = digits.split("_")
    nums: list[int] = []
    for p in parts:
        if plural and len(p) == 2 and int(p[1]) == int(p[0]) + 1:   # tables45, tables23: two tables
            nums += [int(p[0]), int(p[1])]
        else:
            nums.append(int(p))
    return kind, nums, rest


def label(stem: str, short: bool = False) -> str:
    """A figure's name in words: ``fig8_9`` -> "Figures 8 and 9", ``fig1_roofline`` -> "Figure 1: roofline",
    ``recall_vs_nprobe`` -> "recall vs nprobe"; short: "Fig. 8, 9"."""
    kind, nums, rest = stem_refs(stem)
    if kind is None:
        return header_words(stem)
    if short:
        return f"{SHORT[kind][len(nums) > 1]} {', '.join(map(str, nums))}"
    one, many = LABEL[kind]
    head = f"{one} {nums[0]}" if len(nums) == 1 else f"{many} {', '.join(map(str, nums[:-1]))} and {nums[-1]}"
    return f"{head}: {header_words(rest)}" if rest else head


def _mentions(text: str, claim_id: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(claim_id)}(?![\w-])", text) is not None


def figure_text(png: Path) -> str:
    """What a figure says about itself: caption, the report's description, its tables."""
    parts = []
    for suffix in (".caption.rst", ".report.rst", ".md"):
        f = png.with_suffix(suffix)
        if f.exists():
            parts.append(f.read_text(errors="replace"))
    return "\n".join(parts)


def declared(study: str) -> dict[str, tuple[str, ...]]:
    """{figure stem: the claim ids it declares} from the study's figure registry (empty where it has none)."""
    import importlib

    try:
        reg = importlib.import_module(f"bench.{study}.figures").FIGURES
    except (ImportError, AttributeError):
        return {}
    return {name: tuple(getattr(reg[name], "claims", ()) or ()) for name in reg}


def link(df: pd.DataFrame, figures: dict[str, list[Path]]) -> dict[tuple[str, str], list[str]]:
    """(study, claim_id) -> the stems of the figures backing the row (empty: no figure)."""
    texts = {(s, p.stem): figure_text(p) for s, pngs in figures.items() for p in pngs}
    decl = {s: declared(s) for s in figures}
    out: dict[tuple[str, str], list[str]] = {}
    for r in df.itertuples(index=False):
        stems = [p.stem for p in figures.get(r.study, [])]
        own = [s for s in stems if any(fnmatchcase(r.claim_id, pat) for pat in decl.get(r.study, {}).get(s, ()))]
        out[(r.study, r.claim_id)] = (own or _explicit(r, stems) or
                                      [s for s in stems if _mentions(texts[(r.study, s)], r.claim_id)] or
                                      _cited(r, stems))
    return out


def _explicit(r, stems: Iterable[str]) -> list[str]:
    raw = getattr(r, "figure", None) or getattr(r, "figures", None)
    if raw is None or (isinstance(raw, float) and raw != raw):
        return []
    named = [s.strip() for s in str(raw).replace(";", ",").split(",") if s.strip()]
    return [s for s in named if s in set(stems)]


def _cited(r, stems: list[str]) -> list[str]:
    refs = references(r.claim, r.paper_value, claim_id=r.claim_id)
    if not refs:
        return []
    hits = []
    for s in stems:
        kind, nums, _ = stem_refs(s)
        if kind and any((kind, n) in refs for n in nums):
            hits.append(s)
    return hits

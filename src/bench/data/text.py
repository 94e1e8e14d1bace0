"""Text collections in MS MARCO style: TSV passages (id \\t text), TSV queries, TREC qrels.

Readers report the file and line number of anything unreadable. Empty passages are kept (an empty
text), never dropped silently.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pandas as pd

from ..core.base.atomic import atomic_path
from ..core.base.errors import DataFormatError


@dataclasses.dataclass
class TextDataset:
    """A text retrieval dataset: passages, queries and graded relevance judgments."""

    doc_ids: list[str]
    docs: list[str]
    query_ids: list[str]
    queries: list[str]
    qrels: pd.DataFrame  # columns: query_id, doc_id, relevance (int)
    id: str = "text"
    checksum: str | None = None

    def __post_init__(self):
        if len(self.doc_ids) != len(self.docs):
            raise DataFormatError(f"{self.id}: {len(self.doc_ids)} doc ids but {len(self.docs)} docs")
        if len(self.query_ids) != len(self.queries):
            raise DataFormatError(f"{self.id}: {len(self.query_ids)} query ids but {len(self.queries)} queries")

    @property
    def empty_doc_ids(self) -> list[str]:
        return [i for i, t in zip(self.doc_ids, self.docs) if not t.strip()]


def _read_tsv_pairs(path: str | os.PathLike, what: str) -> tuple[list[str], list[str]]:
    ids, texts, seen = [], [], set()
    with open(path, encoding="utf-8", newline="") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if not line:
                continue
            parts = line.split("\t", 1)
            if len(parts) == 1:  # an id with no tab: an empty text
                parts.append("")
            pid, text = parts[0].strip(), parts[1]
            if not pid:
                raise DataFormatError(f"{path}:{lineno}: {what} line has an empty id")
            if pid in seen:
                raise DataFormatError(f"{path}:{lineno}: duplicate {what} id {pid!r}")
            seen.add(pid)
            ids.append(pid)
            texts.append(text)
    return ids, texts


def read_collection_tsv(path: str | os.PathLike) -> tuple[list[str], list[str]]:
    """MS MARCO collection.tsv: ``pid \\t passage`` per line."""
    return _read_tsv_pairs(path, "passage")


def read_queries_tsv(path: str | os.PathLike) -> tuple[list[str], list[str]]:
    """MS MARCO queries.tsv: ``qid \\t query`` per line."""
    return _read_tsv_pairs(path, "query")


def write_tsv_pairs(path: str | os.PathLike, ids, texts) -> Path:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
        for i, t in zip(ids, texts):
            if "\t" in str(i) or "\n" in t or "\t" in t:
                raise DataFormatError(f"{path}: id {i!r} or its text contains a tab or newline")
            fh.write(f"{i}\t{t}\n")
    return Path(path)


def read_qrels(path: str | os.PathLike) -> pd.DataFrame:
    """TREC qrels: ``qid iter docid rel`` per line (whitespace separated); MS MARCO's
    ``qid \\t 0 \\t pid \\t rel`` is the same layout. Returns query_id, doc_id, relevance."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 4:
                raise DataFormatError(
                    f"{path}:{lineno}: a qrels line needs 4 fields (qid iter docid rel), got {len(parts)}: {line.strip()!r}")
            try:
                rel = int(parts[3])
            except ValueError:
                raise DataFormatError(f"{path}:{lineno}: relevance {parts[3]!r} is not an integer") from None
            rows.append((parts[0], parts[2], rel))
    if not rows:
        raise DataFormatError(f"{path}: no qrels")
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def write_qrels(path: str | os.PathLike, qrels: pd.DataFrame) -> Path:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for q, d, r in qrels[["query_id", "doc_id", "relevance"]].itertuples(index=False):
            fh.write(f"{q} 0 {d} {int(r)}\n")
    return Path(path)


def read_text_dataset(collection: str | os.PathLike, queries: str | os.PathLike,
                      qrels: str | os.PathLike, id: str = "text") -> TextDataset:
    doc_ids, docs = read_collection_tsv(collection)
    query_ids, qtexts = read_queries_tsv(queries)
    return TextDataset(doc_ids, docs, query_ids, qtexts, read_qrels(qrels), id=id)

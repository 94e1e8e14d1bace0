"""The document collection every loader reads (Moving Stuff Around, section 2.2): MS MARCO-style
documents ``doc_id \\t text`` in one TSV, the queries and qrels of the training set, and the files each
loader needs, built once: the offsets table (indexed), the lz4 docstore (ir_datasets) and a
memory-mapped Arrow table (beyond the paper).

For the synthetic profile the documents are MS MARCO-like passages joined into documents of about
``doc_words`` words (MS MARCO documents are long), plus ``filler_docs`` unjudged documents, so that the
in-memory copy is large enough to measure.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from ...core.base.atomic import atomic_path, write_text
from ...data import text as textio
from .errors import ConfigError, DataFormatError

BUNDLE = "bundle.json"
MODEL = "model"   # the folder beside bundle.json where the build saves the encoder checkpoint
DOCS, QUERIES, QRELS, OFFSETS, ARROW = "docs.tsv", "queries.tsv", "qrels.trec", "offsets.npz", "arrow"
IRDS_STORE = DOCS + ".pklz4"   # where ir_datasets.create_dataset(docs_tsv=...) builds its docstore


def make_documents(ds: textio.TextDataset, doc_words: int, filler_docs: int, seed: int):
    """Documents of about ``doc_words`` words: each passage of ``ds`` followed by random other passages
    (its id kept, so the qrels still hold), then ``filler_docs`` documents made of random passages."""
    if doc_words < 1 or filler_docs < 0:
        raise ConfigError(f"doc_words must be >= 1 and filler_docs >= 0, got {doc_words}, {filler_docs}")
    rng = np.random.default_rng(seed)
    n = len(ds.docs)
    words = np.array([max(1, len(d.split())) for d in ds.docs])
    per_doc = max(1, int(round(doc_words / max(1.0, words.mean()))))
    picks = rng.integers(0, n, size=(n + filler_docs, per_doc))
    ids, docs = [], []
    for i in range(n + filler_docs):
        head = [ds.docs[i]] if i < n else []
        docs.append(" ".join(head + [ds.docs[j] for j in picks[i, : per_doc - len(head)]]).strip())
        ids.append(ds.doc_ids[i] if i < n else f"F{i - n}")
    return ids, docs


def check_qrels(qrels: pd.DataFrame, doc_ids) -> None:
    """Every judged document must be in the collection; name the missing ones (before training)."""
    known = set(doc_ids)
    missing = sorted(set(qrels.doc_id.astype(str)) - known)
    if missing:
        raise DataFormatError(f"{len(missing)} qrels document id(s) missing from the collection, "
                              f"e.g. {', '.join(map(repr, missing[:5]))}")


def _sample_digest(path: Path) -> str:
    """sha256 of a file's size, first and last 64 KiB: cheap identity of a collection file."""
    h = hashlib.sha256(str(path.stat().st_size).encode())
    with open(path, "rb") as fh:
        h.update(fh.read(1 << 16))
        fh.seek(max(0, path.stat().st_size - (1 << 16)))
        h.update(fh.read(1 << 16))
    return h.hexdigest()


def write_offsets(docs_tsv: Path, out: Path) -> Path:
    """The offsets table of the indexed loader (the paper's Listing 2): the byte offset of every
    document's line, with the size and digest of the file it was built from."""
    ids, offs = [], []
    with open(docs_tsv, "rb") as fh:
        pos = 0
        for line in fh:
            ids.append(line.split(b"\t", 1)[0])
            offs.append(pos)
            pos += len(line)
    with atomic_path(out) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, ids=np.array(ids, dtype=bytes), offsets=np.array(offs, dtype=np.int64),
                     file_size=np.int64(pos), digest=np.array(_sample_digest(docs_tsv)))
    return out


def irds_dataset(docs_tsv: Path):
    """An offline ir_datasets dataset over a TSV (its docstore lives in ``<docs_tsv>.pklz4/``)."""
    os.environ.setdefault("IR_DATASETS_HOME", str(Path(docs_tsv).parent / "ir_datasets_home"))
    import ir_datasets

    logging.getLogger("ir_datasets").setLevel(logging.WARNING)
    return ir_datasets.create_dataset(docs_tsv=str(docs_tsv))


def build_irds_store(docs_tsv: Path) -> Path:
    """Build ir_datasets' lz4 docstore next to the TSV (``<docs>.tsv.pklz4/``)."""
    store = irds_dataset(docs_tsv).docs_store()
    store.build()
    return Path(str(docs_tsv) + ".pklz4")


def build_arrow(ids, docs, out: Path) -> Path:
    """A memory-mapped HF ``datasets`` table (doc_id, text); rows in the TSV's order."""
    import datasets

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    datasets.Dataset.from_dict({"doc_id": list(ids), "text": list(docs)}).save_to_disk(str(tmp))
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return out


def build_bundle(ds: textio.TextDataset, out: str | os.PathLike, *, doc_words: int = 0,
                 filler_docs: int = 0, seed: int = 0, source: dict | None = None) -> Path:
    """Write the collection and every loader's files under ``out``; ``bundle.json`` last."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ids, docs = (make_documents(ds, doc_words, filler_docs, seed) if doc_words
                 else (list(ds.doc_ids), list(ds.docs)))
    check_qrels(ds.qrels[ds.qrels.relevance > 0], ids)
    shutil.rmtree(out / IRDS_STORE, ignore_errors=True)  # stale store of an older collection
    textio.write_tsv_pairs(out / DOCS, ids, [d.replace("\t", " ").replace("\n", " ") for d in docs])
    textio.write_tsv_pairs(out / QUERIES, ds.query_ids, ds.queries)
    textio.write_qrels(out / QRELS, ds.qrels)
    write_offsets(out / DOCS, out / OFFSETS)
    build_irds_store(out / DOCS)
    build_arrow(ids, docs, out / ARROW)
    size = (out / DOCS).stat().st_size
    meta = {"n_docs": len(ids), "n_queries": len(ds.query_ids), "collection_bytes": size,
            "doc_words": doc_words, "filler_docs": filler_docs, "seed": seed,
            "checksum": _sample_digest(out / DOCS), "source": source or {"id": ds.id}}
    write_text(out / BUNDLE, json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return out / BUNDLE


def read_bundle(path: str | os.PathLike) -> dict:
    """``bundle.json`` (or its folder) with the folder added as ``dir``."""
    p = Path(path)
    p = p / BUNDLE if p.is_dir() else p
    try:
        meta = json.loads(p.read_text())
    except FileNotFoundError:
        raise DataFormatError(f"{p}: no collection bundle (run `bench loaders build` first)") from None
    meta["dir"] = str(p.parent)
    return meta


def load_pairs(bundle_dir: str | os.PathLike) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Queries (id -> text) and the (query id, positive doc id) pairs of the training set."""
    d = Path(bundle_dir)
    qids, qtexts = textio.read_queries_tsv(d / QUERIES)
    qrels = textio.read_qrels(d / QRELS)
    pos = qrels[qrels.relevance > 0]
    queries = dict(zip(qids, qtexts))
    unknown = sorted(set(pos.query_id) - set(queries))
    if unknown:
        raise DataFormatError(f"{d / QRELS}: query id(s) without a query text, e.g. {unknown[:5]}")
    return queries, list(zip(pos.query_id.astype(str), pos.doc_id.astype(str)))

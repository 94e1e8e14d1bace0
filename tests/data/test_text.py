"""MS MARCO style TSV collections/queries and TREC qrels."""
from __future__ import annotations

import pandas as pd
import pytest

from bench.core.base.errors import DataFormatError
from bench.data import text


def test_collection_keeps_empty_passages(tmp_path):
    p = tmp_path / "c.tsv"
    p.write_text("1\tfirst passage\n2\t\n3\n4\tlast\n")
    ids, docs = text.read_collection_tsv(p)
    assert ids == ["1", "2", "3", "4"] and docs[1] == "" and docs[2] == ""


def test_duplicate_id_names_file_and_line(tmp_path):
    p = tmp_path / "q.tsv"
    p.write_text("1\ta\n2\tb\n1\tc\n")
    with pytest.raises(DataFormatError, match=r"q.tsv:3: duplicate query id '1'"):
        text.read_queries_tsv(p)


def test_qrels_bad_line_names_file_and_line(tmp_path):
    p = tmp_path / "qrels"
    p.write_text("1 0 7 1\n1 0 8\n")
    with pytest.raises(DataFormatError, match=r"qrels:2: a qrels line needs 4 fields"):
        text.read_qrels(p)
    p.write_text("1 0 7 1\n1 0 8 high\n")
    with pytest.raises(DataFormatError, match=r"qrels:2: relevance 'high' is not an integer"):
        text.read_qrels(p)


def test_round_trip(tmp_path):
    ds = text.TextDataset(["a", "b"], ["x y", ""], ["q1"], ["x"],
                          pd.DataFrame([("q1", "a", 2)], columns=["query_id", "doc_id", "relevance"]))
    text.write_tsv_pairs(tmp_path / "c.tsv", ds.doc_ids, ds.docs)
    text.write_tsv_pairs(tmp_path / "q.tsv", ds.query_ids, ds.queries)
    text.write_qrels(tmp_path / "qrels", ds.qrels)
    back = text.read_text_dataset(tmp_path / "c.tsv", tmp_path / "q.tsv", tmp_path / "qrels")
    assert back.doc_ids == ds.doc_ids and back.docs == ds.docs and back.empty_doc_ids == ["b"]
    assert back.qrels.to_dict("records") == [{"query_id": "q1", "doc_id": "a", "relevance": 2}]
    with pytest.raises(DataFormatError, match="tab or newline"):
        text.write_tsv_pairs(tmp_path / "bad.tsv", ["1"], ["a\tb"])

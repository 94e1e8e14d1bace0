"""The four loaders return the collection's texts; bad input is named before training."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from bench.data import text as textio
from bench.loaders.system import collection as C
from bench.loaders.system.errors import ConfigError, DataFormatError, StoreError
from bench.loaders.system.stores import LOADERS, make_store


def test_every_loader_returns_the_collection_texts(bundle):
    ids, docs = textio.read_collection_tsv(bundle / C.DOCS)
    probe = [0, 1, len(ids) // 2, len(ids) - 1]
    for name in LOADERS:
        store = make_store(name, bundle).open()
        assert [store.get(ids[i]) for i in probe] == [docs[i] for i in probe], name
        with pytest.raises(KeyError):
            store.get("no-such-doc")
        store.close()


def test_every_opened_loader_survives_pickling_for_a_spawned_worker(bundle):
    """DataLoader workers started by spawn or forkserver receive the store pickled; its open file handles
    stay behind and the copy opens its own (the gpu, small and paper profiles time spawned workers)."""
    ids, docs = textio.read_collection_tsv(bundle / C.DOCS)
    for name in LOADERS:
        store = make_store(name, bundle).open()
        store.get(ids[1])   # handles opened in this process
        copy = pickle.loads(pickle.dumps(store))
        assert copy.get(ids[-1]) == docs[-1], name
        assert store.get(ids[0]) == docs[0], name
        copy.close()
        store.close()


def test_bundle_metadata(bundle):
    meta = C.read_bundle(bundle)
    assert meta["n_docs"] == 320 and meta["collection_bytes"] == (bundle / C.DOCS).stat().st_size


def test_unknown_loader():
    with pytest.raises(ConfigError, match="unknown loader 'redis'.*in-memory"):
        make_store("redis", ".")


def test_offsets_table_not_matching_its_file_names_the_offset(copy_bundle):
    with np.load(copy_bundle / C.OFFSETS) as z:
        tab = dict(z)
    tab["offsets"] = tab["offsets"] + 3  # same file size, every offset wrong
    with open(copy_bundle / C.OFFSETS, "wb") as fh:
        np.savez(fh, **tab)
    for name in ("indexed", "indexed-mmap"):
        with pytest.raises(StoreError, match=r"offset \d+ of document"):
            make_store(name, copy_bundle).open()


def test_offsets_table_for_another_file_size(copy_bundle):
    with open(copy_bundle / C.DOCS, "a") as fh:
        fh.write("extra\tdocument\n")
    with pytest.raises(StoreError, match="built for a .*-byte collection"):
        make_store("indexed", copy_bundle).open()


def test_missing_or_corrupt_irds_store(copy_bundle):
    store = copy_bundle / C.IRDS_STORE
    (store / "bin").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(StoreError, match="corrupt ir_datasets docstore"):
        make_store("ir_datasets", copy_bundle).open()
    (store / "idx.doc_id.key").unlink()
    with pytest.raises(StoreError, match="missing .*idx.doc_id.key"):
        make_store("ir_datasets", copy_bundle).open()


def test_missing_arrow_table(copy_bundle):
    import shutil

    shutil.rmtree(copy_bundle / C.ARROW)
    with pytest.raises(StoreError, match="no readable Arrow table"):
        make_store("arrow", copy_bundle).open()


def test_qrels_document_missing_from_collection_is_named(text_ds, tmp_path):
    import pandas as pd

    bad = textio.TextDataset(text_ds.doc_ids, text_ds.docs, text_ds.query_ids, text_ds.queries,
                             pd.concat([text_ds.qrels, pd.DataFrame([{"query_id": "0", "doc_id": "D404",
                                                                     "relevance": 1}])]))
    with pytest.raises(DataFormatError, match="1 qrels document id.*'D404'"):
        C.build_bundle(bad, tmp_path / "bad")
    assert not (tmp_path / "bad" / C.BUNDLE).exists()


def test_missing_bundle(tmp_path):
    with pytest.raises(DataFormatError, match="no collection bundle"):
        C.read_bundle(tmp_path)

"""Samples are identical across loaders for a seed; the collate function builds BERT_CAT pairs."""
from __future__ import annotations

import numpy as np
import pytest

from bench.loaders.system import collection as C
from bench.loaders.system.bert_cat import load_tokenizer
from bench.loaders.system.errors import ConfigError, DataFormatError
from bench.loaders.system.samples import Collate, TripletDataset
from bench.loaders.system.stores import LOADERS, make_store


def _ds(bundle, loader, seed=7, n=24):
    queries, pairs = C.load_pairs(bundle)
    with np.load(bundle / C.OFFSETS) as z:
        ids = z["ids"]
    return TripletDataset(make_store(loader, bundle).open(), queries, pairs, ids, n, seed)


def test_identical_samples_across_loaders(bundle):
    ref = [_ds(bundle, "in-memory")[i] for i in range(24)]
    for name in LOADERS[1:]:
        assert [_ds(bundle, name)[i] for i in range(24)] == ref, name
    assert [_ds(bundle, "in-memory", seed=8)[i] for i in range(24)] != ref


def test_positive_missing_from_collection_is_named_before_training(bundle):
    queries, pairs = C.load_pairs(bundle)
    with np.load(bundle / C.OFFSETS) as z:
        ids = z["ids"]
    with pytest.raises(DataFormatError, match="'D404'"):
        TripletDataset(make_store("in-memory", bundle), queries, pairs + [(pairs[0][0], "D404")], ids, 4, 0)


def test_collate_makes_two_truncated_pairs_per_sample(bundle, model_dir):
    ds = _ds(bundle, "in-memory")
    batch = Collate(load_tokenizer(model_dir), 32)([ds[0], ds[1], ds[2]])
    assert batch["input_ids"].shape[0] == 6 and batch["input_ids"].shape[1] <= 32
    assert batch["labels"].tolist() == [1.0, 0.0] * 3
    with pytest.raises(ConfigError, match="max_length"):
        Collate(None, 2)


def test_collate_matches_the_transformers_tokenizer(bundle, model_dir):
    from transformers import AutoTokenizer

    ds = _ds(bundle, "in-memory")
    batch = [ds[i] for i in range(4)]
    ours = Collate(load_tokenizer(model_dir), 24)(batch)
    hf = AutoTokenizer.from_pretrained(str(model_dir / "tokenizer"))(
        [q for q, _, _ in batch for _ in (0, 1)], [d for _, p, n in batch for d in (p, n)],
        truncation="longest_first", max_length=24, padding="longest", return_tensors="pt")
    for k in ("input_ids", "token_type_ids", "attention_mask"):
        assert ours[k].tolist() == hf[k].tolist(), k

"""Training samples of Moving Stuff Around (section 2.2): (query, positive, random negative), the
negative drawn uniformly from all document ids; two cross-encoder pairs per sample, tokenized in the
collate function with truncation at ``max_length``.

Negatives are drawn once for the whole run from the seed, so every loader sees identical samples.
"""
from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from .errors import ConfigError, DataFormatError


class TripletDataset(Dataset):
    """Sample ``i``: the ``i mod P``-th (query, positive) pair and a random negative, texts from ``store``."""

    def __init__(self, store, queries: dict[str, str], pairs: list[tuple[str, str]], doc_ids: np.ndarray,
                 n_samples: int, seed: int):
        if not pairs:
            raise DataFormatError("no (query, positive document) pairs to train on")
        if n_samples < 1:
            raise ConfigError(f"n_samples must be >= 1, got {n_samples}")
        known = set(doc_ids.tolist())
        missing = sorted({d for _, d in pairs if d.encode() not in known})
        if missing:
            raise DataFormatError(f"{len(missing)} qrels document id(s) missing from the collection, "
                                  f"e.g. {', '.join(map(repr, missing[:5]))}")
        self.store, self.queries, self.pairs = store, queries, pairs
        self.doc_ids = doc_ids  # numpy bytes: shared by forked workers without copy-on-read
        self.negatives = np.random.default_rng(seed).integers(0, len(doc_ids), size=n_samples)

    def __len__(self) -> int:
        return len(self.negatives)

    def __getitem__(self, i: int) -> tuple[str, str, str]:
        qid, pos = self.pairs[i % len(self.pairs)]
        neg = self.doc_ids[self.negatives[i]].decode()
        return self.queries[qid], self.store.get(pos), self.store.get(neg)


class Collate:
    """Tokenize a batch of samples into 2 x batch ``[CLS] query [SEP] document`` pairs, labels 1, 0
    (truncation of the longest part first at ``max_length``, padding to the longest pair).

    ``tokenizer``: a ``tokenizers.Tokenizer`` (the fast tokenizer transformers wraps); ``doc_chars``:
    cut each document to its first characters before tokenizing (a fast tokenizer tokenizes the whole
    text before truncating it); None keeps the paper's behaviour."""

    def __init__(self, tokenizer, max_length: int, doc_chars: int | None = None):
        if max_length < 8:
            raise ConfigError(f"max_length must be >= 8, got {max_length}")
        if doc_chars is not None and doc_chars < 1:
            raise ConfigError(f"doc_chars must be >= 1 or null, got {doc_chars}")
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_str(tokenizer.to_str())  # a copy: settings below are this collate's
        self.tokenizer.enable_truncation(max_length, strategy="longest_first")
        pad = self.tokenizer.padding or {}
        self.tokenizer.enable_padding(pad_id=pad.get("pad_id", 0), pad_token=pad.get("pad_token", "[PAD]"))
        self.max_length, self.doc_chars = max_length, doc_chars

    def __call__(self, batch):
        queries = [q for q, _, _ in batch for _ in (0, 1)]
        docs = [d for _, p, n in batch for d in (p, n)]
        if self.doc_chars:
            docs = [d[: self.doc_chars] for d in docs]
        enc = self.tokenizer.encode_batch(list(zip(queries, docs)))
        return {"input_ids": torch.tensor([e.ids for e in enc]),
                "token_type_ids": torch.tensor([e.type_ids for e in enc]),
                "attention_mask": torch.tensor([e.attention_mask for e in enc]),
                "labels": torch.tensor([1.0, 0.0] * len(batch))}

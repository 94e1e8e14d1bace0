"""Query texts of an exact token length (Section V-A3: "the length rather than the content of input
queries matters"; 75 tokens by default, 75 to 500 for Figure 5), generated with the model's tokenizer.

Each text is a sequence of whole vocabulary words that the tokenizer maps to exactly one token each,
so a text of ``length`` words is ``length`` tokens (plus [CLS] and [SEP]); every text is checked by
re-tokenising it.
"""
from __future__ import annotations

import re

import numpy as np

from bench.core.base.errors import ConfigError

_WORD = re.compile(r"^[a-z]{3,12}$")


def load_fast_tokenizer(model_path: str | None = None):
    """The model's ``tokenizer.json`` through the ``tokenizers`` library (no torch or transformers
    import: the load generator stays light); it gives the same ids as the service's AutoTokenizer."""
    from pathlib import Path

    from tokenizers import Tokenizer

    from .encoder import default_model_path

    path = Path(model_path or default_model_path()) / "tokenizer.json"
    if not path.is_file():
        raise ConfigError(f"no tokenizer.json in {path.parent}: give a local Hugging Face model folder")
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()      # tokenizer.json may carry the padding/truncation of its training setup
    tok.no_truncation()
    return tok


def _ids(tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids without special tokens, from a ``tokenizers.Tokenizer`` or a transformers tokenizer."""
    if hasattr(tokenizer, "encode_batch"):
        return [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    return tokenizer(texts, add_special_tokens=False)["input_ids"]


def single_token_words(tokenizer) -> list[str]:
    """Lower-case alphabetic vocabulary entries that tokenise to themselves, one token each."""
    vocab = sorted(w for w in tokenizer.get_vocab() if _WORD.match(w))
    return [w for w, i in zip(vocab, _ids(tokenizer, vocab)) if len(i) == 1]


def exact_length_texts(tokenizer, n: int, length: int, seed: int) -> list[str]:
    """``n`` distinct texts of exactly ``length`` tokens each (special tokens not counted)."""
    if n < 1:
        raise ConfigError(f"number of query texts must be >= 1, got {n}")
    if length < 1:
        raise ConfigError(f"query length must be >= 1 token, got {length}")
    words = np.asarray(single_token_words(tokenizer))
    rng = np.random.default_rng(seed)
    texts = [" ".join(words[rng.integers(0, len(words), size=length)]) for _ in range(n)]
    got = [len(i) for i in _ids(tokenizer, texts)]
    bad = [g for g in got if g != length]
    if bad:  # pragma: no cover - single-token words concatenate to one token each in WordPiece
        raise ConfigError(f"could not build texts of exactly {length} tokens (got {bad[:3]})")
    return texts

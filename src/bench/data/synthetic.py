"""Synthetic datasets for the tiny profile, deterministic from a seed.

- SIFT-like: 128-d uint8 vectors with SIFT's skewed, non-negative components and low intrinsic
  dimension (a mixture of overlapping clusters in a 32-d latent space mapped to 128 dims), so IVF-PQ
  recall rises with nprobe and plateaus at the PQ error, as on real descriptors.
- Deep-like: 96-d float32 unit-norm vectors built the same way (Deep1B's shape).
- SYN-512 / SYN-1024: Chameleon's synthetic sets, SIFT vectors replicated to 512 / 1024 dims.
- MS MARCO-like text: passages with MS MARCO's length distribution over a Zipfian background
  vocabulary plus topic words, queries built from a target passage's topic words, and planted
  graded judgments (the target passage is highly relevant; same-topic passages holding most of the
  query's words are relevant), so a better retriever scores higher.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .text import TextDataset

SIFT_DIM, DEEP_DIM = 128, 96


def _latent_mixture(rng: np.random.Generator, dim: int, n_clusters: int, latent: int):
    """A sampler of points with low intrinsic dimension, as real descriptors have: a Gaussian mixture
    of overlapping clusters in a ``latent``-d space, mapped linearly to ``dim`` dimensions."""
    mix = np.abs(rng.normal(0, 1, size=(latent, dim))) * rng.gamma(0.6, 1.0, size=(1, dim))
    centres = rng.normal(0.0, 1.5, size=(n_clusters, latent))
    mix, centres = mix.astype(np.float32), centres.astype(np.float32)

    def draw(m: int) -> np.ndarray:
        z = centres[rng.integers(0, n_clusters, size=m)] + rng.normal(0, 1, (m, latent)).astype(np.float32)
        return z @ mix
    return draw


def sift_like(n: int, seed: int, n_queries: int = 0, n_clusters: int = 200, latent: int = 32,
              dim: int = SIFT_DIM) -> tuple[np.ndarray, np.ndarray]:
    """(base (n, 128) uint8, queries (n_queries, 128) uint8) shaped like SIFT descriptors:
    non-negative, skewed components, low intrinsic dimension, overlapping clusters."""
    rng = np.random.default_rng(seed)
    draw_latent = _latent_mixture(rng, dim, n_clusters, latent)

    def draw(m):
        x = 6.0 * draw_latent(m) + 30.0 + rng.normal(0.0, 3.0, size=(m, dim)).astype(np.float32)
        return np.clip(np.rint(np.abs(x)), 0, 255).astype(np.uint8)
    return draw(n), draw(n_queries)


def deep_like(n: int, seed: int, n_queries: int = 0, n_clusters: int = 200, latent: int = 32,
              dim: int = DEEP_DIM) -> tuple[np.ndarray, np.ndarray]:
    """(base (n, 96) float32, queries (n_queries, 96) float32), unit norm like Deep1B's CNN features,
    low intrinsic dimension, overlapping clusters."""
    rng = np.random.default_rng(seed)
    draw_latent = _latent_mixture(rng, dim, n_clusters, latent)
    signs = np.where(rng.random(dim) < 0.5, -1.0, 1.0).astype(np.float32)

    def draw(m):
        x = (draw_latent(m) - 1.0) * signs + rng.normal(0.0, 0.3, size=(m, dim)).astype(np.float32)
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return draw(n), draw(n_queries)


def syn_replicate(x: np.ndarray, dim: int) -> np.ndarray:
    """Chameleon's SYN-512/SYN-1024: vectors tiled to ``dim`` dimensions (float32)."""
    d = x.shape[1]
    if dim % d:
        raise ValueError(f"target dimension {dim} is not a multiple of the source dimension {d}")
    return np.tile(np.asarray(x, dtype=np.float32), (1, dim // d))


# --------------------------------------------------------------------------- text
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"] + ["an", "el", "or", "is", "um"]


def _vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        w = "".join(rng.choice(_SYLLABLES, size=rng.integers(2, 5)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def msmarco_like(n_passages: int, n_queries: int, seed: int, n_topics: int = 50,
                 vocab_size: int = 5000, empty_passages: int = 0,
                 id: str = "synthetic/msmarco-like") -> TextDataset:
    """An MS MARCO-like collection with planted relevance.

    Passage lengths follow a log-normal fitted to MS MARCO passages (median about 50 words, long
    tail to about 200). ``empty_passages`` passages are left empty on purpose (for bad-input tests).
    """
    if n_topics < 1 or vocab_size < 4 * n_topics:
        raise ValueError(f"need vocab_size >= 4 * n_topics, got {vocab_size} and {n_topics}")
    rng = np.random.default_rng(seed)
    vocab = _vocabulary(rng, vocab_size)
    n_topic_words = max(4, int(0.4 * vocab_size) // n_topics)
    topic_words = [vocab[t * n_topic_words:(t + 1) * n_topic_words] for t in range(n_topics)]
    background = vocab[n_topics * n_topic_words:]
    bg_p = 1.0 / np.arange(1, len(background) + 1) ** 1.05
    bg_p /= bg_p.sum()
    tw_p = 1.0 / np.arange(1, n_topic_words + 1) ** 0.7
    tw_p /= tw_p.sum()

    topics = rng.integers(0, n_topics, size=n_passages)
    lengths = np.clip(rng.lognormal(mean=np.log(50), sigma=0.45, size=n_passages), 5, 220).astype(int)
    docs, doc_words = [], []
    for t, L in zip(topics, lengths):
        n_top = rng.binomial(L, 0.3)
        words = list(rng.choice(topic_words[t], size=n_top, p=tw_p)) + \
            list(rng.choice(background, size=L - n_top, p=bg_p))
        rng.shuffle(words)
        docs.append(" ".join(words))
        doc_words.append(set(words))
    empty = rng.choice(n_passages, size=min(empty_passages, n_passages), replace=False) if empty_passages else []
    for i in empty:
        docs[i], doc_words[i] = "", set()
    doc_ids = [str(i) for i in range(n_passages)]

    by_topic: dict[int, np.ndarray] = {t: np.flatnonzero(topics == t) for t in range(n_topics)}
    queries, qrels = [], []
    candidates = np.array([i for i in range(n_passages) if doc_words[i]])
    targets = rng.choice(candidates, size=n_queries, replace=n_queries > len(candidates))
    for qi, target in enumerate(targets):
        t = topics[target]
        own = [w for w in topic_words[t] if w in doc_words[target]] or list(doc_words[target])
        q = list(rng.choice(own, size=min(len(own), int(rng.integers(3, 6))), replace=False))
        queries.append(" ".join(q))
        qid = str(qi)
        qrels.append((qid, str(target), 2))
        same = by_topic[t]
        overlap = np.array([sum(w in doc_words[j] for w in q) for j in same])
        for j in same[(overlap >= max(2, int(np.ceil(0.75 * len(q))))) & (same != target)][:5]:
            qrels.append((qid, str(j), 1))
    return TextDataset(
        doc_ids=doc_ids, docs=docs,
        query_ids=[str(i) for i in range(n_queries)], queries=queries,
        qrels=pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]),
        id=id,
    )

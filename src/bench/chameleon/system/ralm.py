"""ChamLM: RALM serving with random-weight models from transformers (paper sections 2.1, 6.3; Table 2).

- Decoder-only (Dec-S 512-d / 24 layers / 8 heads, Dec-L 1024 / 96 / 16), a Llama-architecture model:
  retrieves every token with the last hidden state as the query (kNN-LM): the next-token distribution
  is interpolated with the distribution of the retrieved neighbours' next tokens.
- Encoder-decoder (EncDec-S/L, a 2-layer encoder), a T5-architecture model: every ``interval`` tokens the
  retrieved chunks' tokens are encoded and the decoder cross-attends to them (RETRO/FiD style).

The models come from :mod:`bench.serving.lm` (transformers configs at the profile's sizes, random weights,
SDPA attention): the decoder's self-attention KV cache is a preallocated static cache, the cross-attention
keys/values are recomputed after each retrieval. The query is the last hidden state projected to the
index dimension, standardised and mapped onto the dataset's per-dimension mean and spread, so it probes
the index the way a real query would. Retrieval goes through any configuration of
:mod:`bench.chameleon.system.backends` (its ``seconds`` is the retrieval latency: measured, or modelled
for the FPGA configurations). Token ids of retrieved neighbours come from a dummy content generator
(id -> tokens), like the authors' ChamTS.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from ...core.base.errors import ConfigError
from ...serving.lm import Generator, LMSpec, build_model  # noqa: F401  (re-exported)


def tokens_of(ids: np.ndarray, n_tokens: int, vocab: int) -> np.ndarray:
    """Dummy content generator (the authors' ChamTS): neighbour ids -> ``n_tokens`` token ids per row."""
    ids = np.asarray(ids, dtype=np.int64)
    reps = -(-n_tokens // ids.shape[1])
    t = np.tile(ids, (1, reps))[:, :n_tokens]
    t = (t * 2654435761 + np.arange(n_tokens)[None]) % vocab
    return np.where(t < 0, 0, t)


def generate(spec: LMSpec, model, batch: int, seq_len: int, interval: int | None,
             retrieve: Callable[[np.ndarray, int], tuple[np.ndarray, float]] | None,
             query_mean: np.ndarray | None = None, query_std: np.ndarray | None = None,
             seed: int = 0, lam: float = 0.75) -> list[dict]:
    """Generate ``seq_len`` tokens; returns one record per step.

    ``retrieve(queries (B, index_dim) float32, k) -> (ids (B, k), seconds)``; ``interval=None`` means
    no retrieval (inference only).
    """
    import torch

    from ...core.measuring.measure import Timer

    if seq_len < 1:
        raise ConfigError(f"seq_len must be >= 1, got {seq_len}")
    if interval is not None and interval < 1:
        raise ConfigError(f"retrieval interval must be >= 1, got {interval}")
    g = Generator(spec, model, batch, seq_len + 1)
    rng = np.random.default_rng(seed)
    token = torch.from_numpy(rng.integers(0, spec.vocab, size=batch))
    # Prompt step (not a generation step): gives the first hidden state for the first query.
    if spec.arch == "encdec":
        g.set_memory(torch.from_numpy(tokens_of(rng.integers(0, 1 << 30, (batch, spec.k)),
                                                spec.retrieved_tokens, spec.vocab)))
    logits, hidden = g.step(token)
    token = logits.argmax(-1)
    records = []
    for step in range(seq_len - 1):
        retr_s, retrieved = 0.0, None
        t_step = time.perf_counter()
        if interval is not None and retrieve is not None and step % interval == 0:
            with torch.inference_mode():
                q = model.proj(hidden)
                q = (q - q.mean(1, keepdim=True)) / (q.std(1, keepdim=True) + 1e-6)
            qn = q.cpu().numpy().astype(np.float32)
            if query_mean is not None:
                qn = (query_mean[None] + qn * query_std[None]).astype(np.float32)
            retrieved, retr_s = retrieve(qn, spec.k)
        with Timer() as t_inf:
            if retrieved is not None and spec.arch == "encdec":
                g.set_memory(torch.from_numpy(tokens_of(retrieved, spec.retrieved_tokens, spec.vocab)))
            logits, hidden = g.step(token)
            if retrieved is not None and spec.arch == "dec":
                # kNN-LM: interpolate with the distribution of the neighbours' next tokens
                nxt = torch.from_numpy(tokens_of(retrieved, spec.k, spec.vocab))
                knn = torch.zeros_like(logits).scatter_add_(1, nxt, torch.ones_like(nxt, dtype=logits.dtype))
                p = lam * torch.softmax(logits, -1) + (1 - lam) * knn / spec.k
                token = p.argmax(-1)
            else:
                token = logits.argmax(-1)
        wall = time.perf_counter() - t_step
        records.append({"step": step, "retrieval": retrieved is not None, "retrieval_s": retr_s,
                        "inference_s": t_inf.seconds, "step_s": t_inf.seconds + retr_s,
                        "wall_s": wall})
    return records

"""ChamLM: RALM serving with random-weight transformers in torch (paper sections 2.1, 6.3; Table 2).

- Decoder-only (Dec-S 512-d / 24 layers / 8 heads, Dec-L 1024 / 96 / 16): retrieves every token with
  the last hidden state as the query (kNN-LM): the next-token distribution is interpolated with the
  distribution of the retrieved neighbours' next tokens.
- Encoder-decoder (EncDec-S/L, a 2-layer encoder): every ``interval`` tokens the retrieved chunks'
  tokens are encoded and the decoder cross-attends to them (RETRO/FiD style).

Weights are random (timing needs no trained weights); the KV cache of the decoder's self-attention is
preallocated, the cross-attention keys/values are recomputed after each retrieval. The query is the
last hidden state projected to the index dimension, standardised and mapped onto the dataset's
per-dimension mean and spread, so it probes the index the way a real query would. Retrieval goes
through any configuration of :mod:`bench.chameleon.configs` (its ``seconds`` is the retrieval latency:
measured, or modelled for the FPGA configurations). Token ids of retrieved neighbours come from a
dummy content generator (id -> tokens), like the authors' ChamTS.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np

from ..core.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class LMSpec:
    name: str
    arch: str              # "dec" or "encdec"
    d_model: int
    layers: int
    heads: int
    enc_layers: int = 0
    vocab: int = 50_000
    k: int = 100
    retrieved_tokens: int = 64
    ffn_mult: int = 4

    def __post_init__(self):
        if self.arch not in ("dec", "encdec"):
            raise ConfigError(f"model {self.name}: arch must be dec or encdec, got {self.arch!r}")
        if self.d_model % self.heads:
            raise ConfigError(f"model {self.name}: {self.heads} heads do not divide d_model={self.d_model}")
        if self.arch == "encdec" and self.enc_layers < 1:
            raise ConfigError(f"model {self.name}: an encoder-decoder needs enc_layers >= 1")


def build_model(spec: LMSpec, index_dim: int, max_len: int, seed: int):
    """A random-weight model for ``spec`` (torch module in eval mode)."""
    import torch
    from torch import nn
    import torch.nn.functional as F

    torch.manual_seed(seed)

    class Attn(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.h, self.hd = h, d // h
            self.q, self.kv, self.o = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)

        def split(self, x):
            b, t, _ = x.shape
            return x.view(b, t, self.h, self.hd).transpose(1, 2)

        def kv_of(self, x):
            k, v = self.kv(x).chunk(2, dim=-1)
            return self.split(k), self.split(v)

        def forward(self, x, k, v, causal=False):
            q = self.split(self.q(x))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            b, _, t, _ = y.shape
            return self.o(y.transpose(1, 2).reshape(b, t, -1))

    class Block(nn.Module):
        def __init__(self, d, h, cross):
            super().__init__()
            self.ln1, self.att = nn.LayerNorm(d), Attn(d, h)
            self.cross = Attn(d, h) if cross else None
            self.ln2 = nn.LayerNorm(d) if cross else None
            self.ln3 = nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, spec.ffn_mult * d), nn.GELU(), nn.Linear(spec.ffn_mult * d, d))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            d = spec.d_model
            self.emb = nn.Embedding(spec.vocab, d)
            self.pos = nn.Embedding(max_len + 1, d)
            self.blocks = nn.ModuleList(Block(d, spec.heads, spec.arch == "encdec") for _ in range(spec.layers))
            self.enc = nn.ModuleList(Block(d, spec.heads, False) for _ in range(spec.enc_layers))
            self.ln_f = nn.LayerNorm(d)
            self.head = nn.Linear(d, spec.vocab, bias=False)
            self.proj = nn.Linear(d, index_dim, bias=False)   # hidden state -> query vector

        def encode(self, tokens):
            x = self.emb(tokens)
            for blk in self.enc:
                h = blk.ln1(x)
                k, v = blk.att.kv_of(h)
                x = x + blk.att(h, k, v)
                x = x + blk.ff(blk.ln3(x))
            return x

    return Model().eval()


class Generator:
    """Token-by-token generation with a KV cache; retrieval every ``interval`` steps."""

    def __init__(self, spec: LMSpec, model, batch: int, max_len: int):
        import torch

        self.spec, self.model, self.batch, self.max_len = spec, model, batch, max_len
        d, h = spec.d_model, spec.heads
        self.kc = [torch.zeros(batch, h, max_len, d // h) for _ in range(spec.layers)]
        self.vc = [torch.zeros(batch, h, max_len, d // h) for _ in range(spec.layers)]
        self.cross_kv = None
        self.len = 0

    def set_memory(self, tokens) -> None:
        """Encoder-decoder: encode the retrieved tokens, precompute cross-attention keys/values."""
        import torch

        with torch.inference_mode():
            mem = self.model.encode(tokens)
            self.cross_kv = [blk.cross.kv_of(blk.ln2(mem)) for blk in self.model.blocks]

    def step(self, token):
        """One decoder step for (batch,) tokens; returns (logits (B, vocab), hidden (B, d))."""
        import torch

        if self.len >= self.max_len:
            raise ConfigError(f"sequence longer than max_len={self.max_len}")
        m, t = self.model, self.len
        with torch.inference_mode():
            x = m.emb(token[:, None]) + m.pos.weight[t][None, None]
            for li, blk in enumerate(m.blocks):
                h = blk.ln1(x)
                k, v = blk.att.kv_of(h)
                self.kc[li][:, :, t:t + 1] = k
                self.vc[li][:, :, t:t + 1] = v
                x = x + blk.att(h, self.kc[li][:, :, :t + 1], self.vc[li][:, :, :t + 1])
                if blk.cross is not None and self.cross_kv is not None:
                    ck, cv = self.cross_kv[li]
                    x = x + blk.cross(blk.ln2(x), ck, cv)
                x = x + blk.ff(blk.ln3(x))
            hidden = m.ln_f(x)[:, 0]
            logits = m.head(hidden)
        self.len += 1
        return logits, hidden


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

    from ..core.measure import Timer

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
            qn = q.numpy().astype(np.float32)
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

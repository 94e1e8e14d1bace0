"""A small random-weight transformer with explicit prefill and decode steps, shared by the studies that
time language-model stages: Chameleon's RALM serving (paper sections 2.1, 6.3; decoder-only and
encoder-decoder models) and Trinity's roofline of prefill and decode against batch size (Figure 1).

Weights are random (timing needs no trained weights). :class:`Generator` keeps a preallocated KV cache
on the model's device (CPU or CUDA) and in its dtype; inputs given on another device are moved there:
:meth:`Generator.prefill` runs a whole prompt in one forward pass (the prefill stage, compute-bound),
:meth:`Generator.step` one token per sequence (the decode stage, memory-bound).
"""
from __future__ import annotations

import dataclasses

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
        w = model.emb.weight  # the cache lives where the model runs, in its dtype
        self.device = w.device
        d, h = spec.d_model, spec.heads
        self.kc = [torch.zeros(batch, h, max_len, d // h, device=w.device, dtype=w.dtype) for _ in range(spec.layers)]
        self.vc = [torch.zeros(batch, h, max_len, d // h, device=w.device, dtype=w.dtype) for _ in range(spec.layers)]
        self.cross_kv = None
        self.len = 0

    def set_memory(self, tokens) -> None:
        """Encoder-decoder: encode the retrieved tokens, precompute cross-attention keys/values."""
        import torch

        with torch.inference_mode():
            mem = self.model.encode(tokens.to(self.device))
            self.cross_kv = [blk.cross.kv_of(blk.ln2(mem)) for blk in self.model.blocks]

    def step(self, token):
        """One decoder step for (batch,) tokens; returns (logits (B, vocab), hidden (B, d))."""
        import torch

        if self.len >= self.max_len:
            raise ConfigError(f"sequence longer than max_len={self.max_len}")
        m, t = self.model, self.len
        token = token.to(self.device)
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

    def prefill(self, tokens):
        """The prefill stage: a (batch, T) prompt in one forward pass; fills the KV cache for positions
        0..T-1 and returns (logits (B, vocab), hidden (B, d)) of the last position."""
        import torch

        b, t = tokens.shape
        if self.len + t > self.max_len:
            raise ConfigError(f"prompt of {t} tokens exceeds max_len={self.max_len}")
        if self.len and t > 1:
            raise ConfigError("prefill runs on an empty cache (decode continues with step)")
        m, t0 = self.model, self.len
        tokens = tokens.to(self.device)
        with torch.inference_mode():
            x = m.emb(tokens) + m.pos.weight[t0:t0 + t][None]
            for li, blk in enumerate(m.blocks):
                h = blk.ln1(x)
                k, v = blk.att.kv_of(h)
                self.kc[li][:, :, t0:t0 + t] = k
                self.vc[li][:, :, t0:t0 + t] = v
                x = x + blk.att(h, self.kc[li][:, :, :t0 + t], self.vc[li][:, :, :t0 + t], causal=True)
                if blk.cross is not None and self.cross_kv is not None:
                    ck, cv = self.cross_kv[li]
                    x = x + blk.cross(blk.ln2(x), ck, cv)
                x = x + blk.ff(blk.ln3(x))
            hidden = m.ln_f(x)[:, -1]
            logits = m.head(hidden)
        self.len += t
        return logits, hidden

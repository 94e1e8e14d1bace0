"""Random-weight language models from transformers, with explicit prefill and decode steps, shared by the
studies that time language-model stages: Chameleon's RALM serving (paper sections 2.1, 6.3; Table 2's
decoder-only and encoder-decoder models) and Trinity's roofline of prefill and decode against batch size
(Figure 1).

- A decoder-only model is a Llama-architecture ``LlamaForCausalLM``; an encoder-decoder model is a
  T5-architecture ``T5ForConditionalGeneration``. Both are built from a config at the profile's sizes
  (:func:`config_of`) with random weights from a fixed seed (timing needs no trained weights); nothing is
  downloaded. Attention runs through PyTorch's scaled-dot-product attention (``attn_implementation="sdpa"``).
- :class:`Generator` holds a transformers ``StaticCache`` allocated up front on the model's device and in its
  dtype (an ``EncoderDecoderCache`` of two for T5: self-attention and cross-attention). Inputs given on another
  device are moved there. :meth:`Generator.prefill` runs a whole prompt in one forward pass (the prefill
  stage, compute-bound); :meth:`Generator.step` one token per sequence (the decode stage, memory-bound).
  A static cache keeps fixed shapes and addresses, so the decode step can be captured in a CUDA graph.
- The language-model head runs on the last position only (what generation needs), and a linear
  ``proj`` maps the last hidden state to a query vector of the index's dimension (Chameleon's retrieval).

The MLP keeps the weight count of a ``ffn_mult`` x d GELU MLP: Llama's gated MLP has three matrices, so
its intermediate size is 2/3 x ffn_mult x d (Llama's own convention, 8/3 d for ffn_mult 4); T5's
ReLU MLP has two, of size ffn_mult x d. :func:`layer_weights` counts what a token multiplies per layer.
"""
from __future__ import annotations

import dataclasses
import os

from ..core.base.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class LMSpec:
    name: str
    arch: str              # "dec" (Llama) or "encdec" (T5)
    d_model: int
    layers: int            # decoder layers
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

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def intermediate(self) -> int:
        """The MLP's inner size: gated (Llama) 2/3 x ffn_mult x d rounded to 8, plain (T5) ffn_mult x d."""
        if self.arch == "dec":
            return max(8, int(round(2 * self.ffn_mult * self.d_model / 3 / 8)) * 8)
        return self.ffn_mult * self.d_model


def layer_weights(spec: LMSpec) -> int:
    """Weights one token multiplies in one decoder layer (self-attention q, k, v, o and the MLP; a T5
    decoder layer's cross-attention query and output add 2 d^2). FLOPs per token per layer: 2 x this."""
    d, i = spec.d_model, spec.intermediate
    if spec.arch == "dec":
        return 4 * d * d + 3 * d * i
    return 4 * d * d + 2 * d * d + 2 * d * i


def config_of(spec: LMSpec, max_len: int):
    """The transformers config of ``spec``: a ``LlamaConfig`` (dec) or a ``T5Config`` (encdec)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import LlamaConfig, T5Config

    if spec.arch == "dec":
        return LlamaConfig(vocab_size=spec.vocab, hidden_size=spec.d_model, intermediate_size=spec.intermediate,
                           num_hidden_layers=spec.layers, num_attention_heads=spec.heads,
                           num_key_value_heads=spec.heads, max_position_embeddings=max_len, rms_norm_eps=1e-6,
                           tie_word_embeddings=False, use_cache=True, pad_token_id=0, bos_token_id=1,
                           eos_token_id=2, attn_implementation="sdpa")
    return T5Config(vocab_size=spec.vocab, d_model=spec.d_model, d_kv=spec.head_dim, d_ff=spec.intermediate,
                    num_layers=spec.enc_layers, num_decoder_layers=spec.layers, num_heads=spec.heads,
                    dropout_rate=0.0, feed_forward_proj="relu", tie_word_embeddings=False, use_cache=True,
                    is_encoder_decoder=True, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
                    attn_implementation="sdpa")


def build_model(spec: LMSpec, index_dim: int, max_len: int, seed: int):
    """A random-weight model for ``spec`` (a torch module in eval mode): ``.lm`` the transformers model,
    ``.proj`` the hidden state -> query vector map, ``.max_len`` the longest sequence it is built for."""
    import torch
    from torch import nn

    from transformers import LlamaForCausalLM, T5ForConditionalGeneration
    from transformers.utils import logging as hf_logging

    if max_len < 1:
        raise ConfigError(f"model {spec.name}: max_len must be >= 1, got {max_len}")
    hf_logging.set_verbosity_error()
    cfg = config_of(spec, max_len)
    torch.manual_seed(seed)

    class RandomLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = (LlamaForCausalLM if spec.arch == "dec" else T5ForConditionalGeneration)(cfg)
            self.proj = nn.Linear(spec.d_model, index_dim, bias=False)
            self.spec, self.max_len = spec, max_len

    return RandomLM().eval()


class Generator:
    """Prefill and token-by-token decode of ``batch`` sequences with a static KV cache on the model's device."""

    def __init__(self, spec: LMSpec, model, batch: int, max_len: int):
        from transformers import EncoderDecoderCache, StaticCache

        self.spec, self.model, self.batch, self.max_len = spec, model, batch, max_len
        w = next(model.parameters())     # the cache lives where the model runs, in its dtype
        self.device, self.dtype = w.device, w.dtype
        self._stack = model.lm.model if spec.arch == "dec" else model.lm.decoder
        self.cache = self._static(StaticCache, max_len)
        if spec.arch == "encdec":
            self.cache = EncoderDecoderCache(self.cache, StaticCache(config=self._stack.config, max_cache_len=1))
        self.memory = None
        self.len = 0

    def _static(self, cls, length: int):
        c = cls(config=self._stack.config, max_cache_len=length)
        c.early_initialization(self.batch, self.spec.heads, self.spec.head_dim, self.dtype, self.device)
        return c

    def reset(self) -> None:
        """Empty the self-attention cache (a new prompt on the same buffers); the memory stays."""
        cache = self.cache.self_attention_cache if self.spec.arch == "encdec" else self.cache
        cache.reset()
        self.len = 0

    def set_memory(self, tokens) -> None:
        """Encoder-decoder: encode the retrieved tokens (B, L); the decoder's next call recomputes the
        cross-attention keys/values from them (into a static cache of L positions)."""
        import torch
        from transformers import StaticCache

        if self.spec.arch != "encdec":
            raise ConfigError(f"model {self.spec.name}: only an encoder-decoder has a memory")
        tokens = tokens.to(self.device)
        with torch.inference_mode():
            self.memory = self.model.lm.encoder(input_ids=tokens).last_hidden_state
        cross = self.cache.cross_attention_cache
        if cross.get_max_length() != tokens.shape[1]:
            cross = self.cache.cross_attention_cache = self._static(StaticCache, tokens.shape[1])
        else:
            cross.reset()
        for layer in self.cache.is_updated:
            self.cache.is_updated[layer] = False

    def _run(self, ids):
        import torch

        with torch.inference_mode():
            if self.spec.arch == "dec":
                out = self._stack(input_ids=ids, past_key_values=self.cache, use_cache=True)
            else:
                out = self._stack(input_ids=ids, encoder_hidden_states=self.memory, past_key_values=self.cache,
                                  use_cache=True)
            hidden = out.last_hidden_state[:, -1]
            logits = self.model.lm.lm_head(hidden)
        self.len += ids.shape[1]
        return logits, hidden

    def step(self, token):
        """The decode stage: one token for each of the (batch,) sequences; returns (logits (B, vocab),
        hidden (B, d)) of that position."""
        if self.len >= self.max_len:
            raise ConfigError(f"sequence longer than max_len={self.max_len}")
        return self._run(token.to(self.device)[:, None])

    def prefill(self, tokens):
        """The prefill stage: a (batch, T) prompt in one forward pass; fills the cache for positions 0..T-1
        and returns (logits (B, vocab), hidden (B, d)) of the last position."""
        t = tokens.shape[1]
        if self.len + t > self.max_len:
            raise ConfigError(f"prompt of {t} tokens exceeds max_len={self.max_len}")
        if self.len and t > 1:
            raise ConfigError("prefill runs on an empty cache (decode continues with step)")
        return self._run(tokens.to(self.device))

"""Exact brute-force K-nearest-neighbour search the way torch does it best on a GPU: the fair anchor every
approximate GPU search is measured against (shared by the studies and ``scripts/gpu_targets.py``; not part of
any paper's system).

Per chunk of queries the base is streamed in chunks: one matmul (``||y||^2 - 2 x.y``, the query norm added
at the end, where it does not change the order), one top-K of the chunk, and a merge of the running top-K
(the candidates of the chunks so far, 2K wide): no distance block larger than ``q_chunk x b_chunk`` is ever
written, and each block is read once by the top-K.

Precision, stated by :func:`describe`:

- ``fp32``: float32 products and sums, TF32 off (``torch.backends.cuda.matmul.allow_tf32`` is pinned False
  for the call and restored): the exact anchor;
- ``fp16``: the vectors scaled by one constant (so every product fits fp16) and stored in fp16, the matmul
  on fp16 tensor cores (fp32 accumulation), distances rounded to fp16 before the top-K; the anchor for a
  kernel that computes in fp16. Its recall against ``fp32`` is below 1; the caller states it.
"""
from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

from ..core.base.errors import ConfigError

PRECISIONS = ("fp32", "fp16")


@dataclasses.dataclass
class Base:
    """Base vectors on one device in the anchor's precision, with their float32 squared norms."""

    y: "object"
    norms: "object"
    scale: float
    precision: str

    @classmethod
    def build(cls, base, device: str = "cpu", precision: str = "fp32") -> "Base":
        import torch

        if precision not in PRECISIONS:
            raise ConfigError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        y = torch.as_tensor(np.ascontiguousarray(base, dtype=np.float32), device=device)
        if y.ndim != 2 or not len(y):
            raise ConfigError(f"exact search needs a non-empty (N, d) base, got shape {tuple(y.shape)}")
        scale = float(y.abs().max().clamp(min=1e-30)) * float(np.sqrt(y.shape[1])) if precision == "fp16" else 1.0
        y = y / scale
        norms = (y * y).sum(1)
        return cls(y.half() if precision == "fp16" else y, norms, scale, precision)


def describe(precision: str) -> str:
    return {"fp32": "fp32 matmul (TF32 off) + streamed top-K",
            "fp16": "fp16 tensor-core matmul (fp32 accumulation, scaled vectors) + streamed top-K"}[precision]


@contextlib.contextmanager
def no_tf32():
    """TF32 off for matmuls inside the block (restored after)."""
    import torch

    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


def search(base: Base, xq, k: int, q_chunk: int = 2048, b_chunk: int = 1 << 15):
    """(D, I) (nq, k) squared L2 distances (in the base's precision, float32 tensors) and ids, ascending."""
    import torch

    n = base.y.shape[0]
    if not 1 <= k <= n:
        raise ConfigError(f"K={k} must be between 1 and the {n} base vectors")
    x = torch.as_tensor(xq, dtype=torch.float32, device=base.y.device) / base.scale
    if x.ndim != 2 or x.shape[1] != base.y.shape[1]:
        raise ConfigError(f"queries must be (n, {base.y.shape[1]}), got {tuple(x.shape)}")
    outs = []
    with no_tf32():
        for q0 in range(0, len(x), q_chunk):
            outs.append(_query_chunk(base, x[q0:q0 + q_chunk], k, b_chunk))
    D = torch.cat([o[0] for o in outs]) * (base.scale ** 2)
    return D, torch.cat([o[1] for o in outs])


def _query_chunk(base: Base, x, k: int, b_chunk: int):
    import torch

    xq = x.to(base.y.dtype)
    best_d = best_i = None
    for b0 in range(0, base.y.shape[0], b_chunk):
        y = base.y[b0:b0 + b_chunk]
        dot = torch.mm(xq, y.T).float()
        d = torch.add(base.norms[b0:b0 + b_chunk][None], dot, alpha=-2.0)
        v, i = torch.topk(d, min(k, d.shape[1]), dim=1, largest=False, sorted=False)
        i += b0
        if best_d is not None:
            v, i = torch.cat([best_d, v], 1), torch.cat([best_i, i], 1)
            v, at = torch.topk(v, k, dim=1, largest=False, sorted=False)
            i = i.gather(1, at)
        best_d, best_i = v, i
    v, order = torch.sort(best_d, dim=1, stable=True)
    return (v + (x * x).sum(1, keepdim=True)).clamp_min_(0.0), best_i.gather(1, order)

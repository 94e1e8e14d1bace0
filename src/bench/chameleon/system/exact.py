"""Exact brute-force K-nearest-neighbour search in torch, the anchor of the vector-search comparison.

Not part of the Chameleon paper's systems: section 2.2 motivates IVF-PQ as the approximate search that
avoids "linearly scanning through a large vector set"; this module is that linear scan, done the way an
accelerator does it best (one fp32 matmul per chunk of queries, ``||x||^2 - 2 x.y + ||y||^2``, then one
top-K), so the figures can show where an approximate engine (IVF or graph) loses to it. Squared L2
distances, as faiss reports them; the queries are chunked so the distance block stays within
``CHUNK_ELEMS`` floats.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...core.base.errors import ConfigError

# Bound on the (queries x base vectors) distance block per chunk. CPU: 64 MB; CUDA: 1 GB.
CHUNK_ELEMS = {"cpu": 1 << 24, "cuda": 1 << 28}


@dataclasses.dataclass
class Base:
    """Database vectors on one device, with their squared norms (computed once, untimed)."""

    y: "object"       # (N, d) float32
    norms: "object"   # (N,) float32

    @classmethod
    def from_numpy(cls, base, device: str = "cpu") -> "Base":
        import torch

        y = torch.from_numpy(np.array(base, dtype=np.float32, order="C")).to(device)   # a writable copy (a memmap is not)
        if y.ndim != 2 or len(y) == 0:
            raise ConfigError(f"exact search needs a non-empty (N, d) base, got shape {tuple(y.shape)}")
        return cls(y=y, norms=(y * y).sum(1))

    @property
    def device(self):
        return self.y.device


def search(base: Base, xq, k: int):
    """The exact K nearest base vectors of each query: (D, I) (nq, k) tensors on the base's device, ascending."""
    import torch

    n, d = base.y.shape
    if not 1 <= k <= n:
        raise ConfigError(f"K={k} must be between 1 and the {n} base vectors")
    x = torch.as_tensor(np.array(xq, dtype=np.float32, copy=True) if isinstance(xq, np.ndarray) else xq,
                        dtype=torch.float32, device=base.device)
    if x.ndim != 2 or x.shape[1] != d:
        raise ConfigError(f"queries must be (n, {d}), got {tuple(x.shape)}")
    if len(x) == 0:
        return torch.empty((0, k), device=base.device), torch.empty((0, k), dtype=torch.int64, device=base.device)
    step = max(1, CHUNK_ELEMS.get(base.device.type, CHUNK_ELEMS["cuda"]) // n)
    parts = [_chunk(base, x[q0:q0 + step], k) for q0 in range(0, len(x), step)]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def _chunk(base: Base, x, k: int):
    """One matmul and one top-K for a chunk of queries."""
    import torch

    dist = torch.addmm(base.norms[None, :], x, base.y.T, alpha=-2.0)
    dist += (x * x).sum(1, keepdim=True)
    v, i = torch.topk(dist, k, dim=1, largest=False, sorted=True)
    return v.clamp_min_(0.0), i

"""MaxSim (ESPN equation 1) against a candidate table resident on the device: the re-ranking table of the
paper's "memory" configuration (all BOW embeddings in accelerator memory, section 5's upper bound), uploaded
once in fp16, each query scored against the ids of its candidates with no host packing and no copy of the
table per query.

``S(q, d) = sum_i max_j E_q[i] . E_d[j]`` over the first ``lengths[d]`` token vectors of candidate d (a
candidate with none scores 0). The products are fp32 from the fp16 table (as :func:`.maxsim.maxsim`, TF32
off), so scores agree with it to float rounding (the summation order differs).

Two ways, the same scores:

- the Triton kernel (:mod:`.maxsim_kernel`): one program per candidate, its query matrix and the
  candidate's token block on chip, one fp32 dot (``ieee``: no TF32), the masked row maximum and the sum;
  one launch per query (``triton-cuda``, or ``triton-interpreter`` in the tests);
- the torch path (no CUDA and no interpreter, or Triton missing; its reason is in ``mode``): a gather of
  the candidates' rows, one batched matmul, the masked maximum and the sum, all on the table's device.
"""
from __future__ import annotations

import numpy as np

from ...ann import kernels
from ...core.base.errors import ConfigError

KERNEL = "bench.espn.system.maxsim_kernel"


class ResidentTable:
    """The BOW table ``bow`` [n, t, 32] (fp16) and ``lengths`` [n], uploaded once to ``device``."""

    def __init__(self, bow: np.ndarray, lengths: np.ndarray, device: str = "cpu"):
        import torch

        bow = np.asarray(bow)
        if bow.ndim != 3:
            raise ConfigError(f"the BOW table must be [n, t, dim], got shape {bow.shape}")
        lens = np.minimum(np.asarray(lengths, dtype=np.int64), bow.shape[1])
        if len(lens) != len(bow) or (lens < 0).any():
            raise ConfigError(f"{len(lens)} lengths for {len(bow)} passages, or a negative length")
        self.table = torch.from_numpy(np.ascontiguousarray(bow, dtype=np.float16)).to(device)
        self.lengths = torch.from_numpy(lens.astype(np.int32)).to(device)
        self.device = self.table.device
        self.t, self.dim = bow.shape[1], bow.shape[2]

    def score(self, q_tok, cand, force_torch: bool = False):
        """(scores [len(cand)] fp32 on the device, mode) of one query's token vectors ``q_tok`` [tq, dim]
        against the table rows ``cand`` (ids, host or device)."""
        import torch

        q = torch.as_tensor(q_tok, dtype=torch.float32, device=self.device)
        ids = torch.as_tensor(cand, dtype=torch.int64, device=self.device)
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise ConfigError(f"query token vectors must be [tq, {self.dim}], got {tuple(q.shape)}")
        how, why = kernels.mode(self.device)
        if force_torch or how is None or q.shape[0] == 0 or self.t == 0:
            return self._torch(q, ids), f"torch ({'forced' if force_torch else why or 'empty input'})"
        return self._kernel(q, ids), how

    def _torch(self, q, ids):
        import torch

        if q.shape[0] == 0 or self.t == 0 or ids.numel() == 0:
            return torch.zeros(ids.numel(), dtype=torch.float32, device=self.device)
        rows = self.table.index_select(0, ids).float()                         # [n, t, dim]
        sim = torch.matmul(rows, q.T)                                           # [n, t, tq]
        real = torch.arange(self.t, device=self.device) < self.lengths.index_select(0, ids)[:, None].long()
        best = sim.masked_fill(~real[..., None], float("-inf")).amax(1)         # [n, tq]
        return torch.where(torch.isinf(best), 0.0, best).sum(1)

    def _kernel(self, q, ids):
        import torch

        mod = kernels.module(KERNEL)
        n, tq = ids.numel(), q.shape[0]
        out = torch.empty(n, dtype=torch.float32, device=self.device)
        if n:
            kernels.launch(mod.maxsim, (n,), q, ids, self.table, self.lengths, out, tq, self.t,
                           DIM=self.dim, TQ=max(16, kernels.next_pow2(tq)), TT=max(16, kernels.next_pow2(self.t)),
                           outputs=(out,))
        return out

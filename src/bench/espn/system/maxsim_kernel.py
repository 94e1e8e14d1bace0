"""ESPN's MaxSim (equation 1) as one Triton kernel over a resident candidate table (the kernel of
:mod:`.maxsim_resident`; import it through :func:`bench.ann.kernels.module`).

One program per candidate: the query's token vectors (TQ x DIM fp32, rows past ``tq`` zero) and the
candidate's token block (TT x DIM, fp16 loaded and widened to fp32, rows past its length zero) on chip,
the similarities by one fp32 dot (``input_precision="ieee"``: no TF32), each query token's maximum over
the candidate's real tokens, their sum over the real query tokens; a candidate without tokens scores 0.
"""
from __future__ import annotations

import triton
import triton.language as tl

from ...ann import kernels

_INTERPRETED = kernels.interpreting()   # how the kernel below was decorated


@triton.jit
def maxsim(q_ptr, ids_ptr, table_ptr, len_ptr, out_ptr, tq, t,
           DIM: tl.constexpr, TQ: tl.constexpr, TT: tl.constexpr):
    c = tl.program_id(0)
    row = tl.load(ids_ptr + c)
    n = tl.load(len_ptr + row)
    qi = tl.arange(0, TQ)
    ti = tl.arange(0, TT)
    di = tl.arange(0, DIM)
    q = tl.load(q_ptr + qi[:, None] * DIM + di[None, :], mask=(qi < tq)[:, None], other=0.0)
    d = tl.load(table_ptr + row * t * DIM + ti[:, None] * DIM + di[None, :], mask=(ti < n)[:, None], other=0.0)
    sim = tl.dot(q, tl.trans(d.to(tl.float32)), input_precision="ieee")      # (TQ, TT)
    sim = tl.where((ti < n)[None, :], sim, float("-inf"))
    best = tl.max(sim, 1)
    best = tl.where((qi < tq) & (n > 0), best, 0.0)
    tl.store(out_ptr + c, tl.sum(best, 0))

"""The fused IVF-PQ scan in Triton (the kernel of :mod:`bench.ann.ivfpq_fused`; import it through
:func:`bench.ann.kernels.module`, which re-imports it when the interpreter setting changes).

One program per (query, probed list), as faiss GPU and cuVS IVF-PQ build theirs (Johnson et al.,
arXiv 1702.08734, section 5): the program loads its query's lookup table (``MP`` x 256 fp32) once into
registers (``LUT_ON_CHIP``: ``tl.gather`` reads it there; otherwise from global memory, where it stays in
L1/L2), then walks its list ``KP`` vectors at a time: the 1-byte codes of each tile come from the
interleaved layout (blocks of ``BV`` vectors, each sub-quantizer's ``BV`` codes contiguous, so a tile's
loads coalesce), each vector's distance is the sum of its ``MP`` looked-up entries in a fixed pairwise
order (halves added elementwise: :func:`bench.ann.knn.tree_sum`'s order, so the torch reference gives the
same bits) plus its norm term plus the query-to-centroid distance, and the tile is merged into a sorted
top-``KP`` buffer held in registers. The buffer and a tile are int64 keys (sortable distance bits << 32 |
position in the list): the merge is the bitonic step (the elementwise minimum of the ascending buffer and
the descending tile (both ``KP`` long) holds the ``KP`` smallest of both, then one sort), skipped when no key of the tile
beats the buffer's largest. Ties therefore go to the smaller position in the list. Nothing but the
buffer's ``KP`` (distance, row) pairs leaves the program.
"""
from __future__ import annotations

import triton
import triton.language as tl

from . import kernels
from .kernel_lib import KEY_NONE, _halves_sum, _merge, _sortable, _unsortable

_INTERPRETED = kernels.interpreting()   # how the kernels below were decorated


@triton.jit
def ivfpq_scan(lut_ptr, lists_ptr, coarse_ptr, block_start_ptr, sizes_ptr, codes_ptr, norm_ptr,
               out_d_ptr, out_r_ptr, nprobe, nq, empty_row,
               MP: tl.constexpr, LOG_MP: tl.constexpr, BV: tl.constexpr, KP: tl.constexpr, LOG_KP: tl.constexpr,
               LUT_ON_CHIP: tl.constexpr):
    """Program (q, p): the top-KP (distance, row) of query q's p-th probed list, ascending, ties by row;
    an empty slot (a list shorter than KP) holds (+inf, ``empty_row``)."""
    q = tl.program_id(0)
    p = tl.program_id(1)
    lst = tl.load(lists_ptr + q * nprobe + p).to(tl.int32)
    cd = tl.load(coarse_ptr + q * nprobe + p)
    start = tl.load(block_start_ptr + lst)
    n = tl.load(sizes_ptr + lst)
    j = tl.arange(0, MP)
    lut_q = lut_ptr + q.to(tl.int64) * 256 + (j.to(tl.int64) * nq * 256)[:, None]     # table (MP, nq, 256)
    if LUT_ON_CHIP:
        lut = tl.load(lut_q + tl.arange(0, 256)[None, :])
    t = tl.arange(0, KP)
    buf = tl.full((KP,), KEY_NONE, tl.int64)
    for t0 in range(0, n, KP):
        pos = t0 + t
        valid = pos < n
        row = (start + pos // BV).to(tl.int64) * BV + pos % BV
        blk = (start + pos // BV).to(tl.int64) * (MP * BV) + pos % BV
        c = tl.load(codes_ptr + blk[None, :] + j[:, None] * BV, mask=valid[None, :], other=0).to(tl.int32)
        if LUT_ON_CHIP:
            vals = tl.gather(lut, c, 1)
        else:
            vals = tl.load(lut_q + c)
        s = _halves_sum(vals, MP, LOG_MP, KP)
        nrm = tl.load(norm_ptr + row, mask=valid, other=float("inf"))
        d = tl.where(valid, (s + nrm) + cd, float("inf"))
        key = _sortable(d, pos)
        if tl.min(key, 0) < tl.max(buf, 0):
            buf = _merge(buf, key, KP, LOG_KP)
    k = tl.arange(0, KP)
    none = buf == KEY_NONE
    kpos = (buf & 0xFFFFFFFF).to(tl.int32)
    krow = (start + kpos // BV).to(tl.int64) * BV + kpos % BV
    out = (q.to(tl.int64) * nprobe + p) * KP + k
    tl.store(out_d_ptr + out, tl.where(none, float("inf"), _unsortable(buf)))
    tl.store(out_r_ptr + out, tl.where(none, empty_row, krow))

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

_INTERPRETED = kernels.interpreting()   # how the kernels below were decorated
KEY_NONE = tl.constexpr(0x7FFFFFFFFFFFFFFF)   # an empty buffer slot: sorts after every real key


def _helper(fn):
    """A kernel's helper: compiled inline by Triton, or, under the interpreter, a plain Python function
    (the interpreter re-patches ``tl`` on every call of a jitted helper: milliseconds a call)."""
    return fn if kernels.interpreting() else triton.jit(fn)


@_helper
def _halves_sum(v, MP: tl.constexpr, LOG_MP: tl.constexpr, TV: tl.constexpr):
    """(MP, TV) -> (TV,): rows summed in pairs of halves (row i + row i + h), h = MP/2, MP/4, ... 1."""
    for r in tl.static_range(LOG_MP):
        a, b = tl.split(tl.permute(tl.reshape(v, (2, MP >> (r + 1), TV)), (1, 2, 0)))
        v = a + b
    return tl.reshape(v, (TV,))


@_helper
def _bitonic(x, N: tl.constexpr, LOG_N: tl.constexpr, FIRST: tl.constexpr, DESC: tl.constexpr):
    """Bitonic sorting network on (N,) keys, phases FIRST..log2(N) (FIRST = 1: a full sort; FIRST =
    log2(N): the final merge of a bitonic sequence). A compare-exchange pairs elements ``st`` apart by a
    reshape to (N / 2st, 2, st); in phase ph, block o keeps its pair ascending when bit ``sub`` of o is
    clear (every block of the last phase: the whole order)."""
    for ph in tl.static_range(FIRST, LOG_N + 1):
        for sub in tl.static_range(ph):
            a, b = tl.split(tl.permute(tl.reshape(x, (N >> (ph - sub), 2, 1 << (ph - 1 - sub))), (0, 2, 1)))
            lo = tl.minimum(a, b)
            hi = tl.maximum(a, b)
            if DESC:
                lo, hi = hi, lo
            if ph < LOG_N:
                up = ((tl.arange(0, N >> (ph - sub))[:, None] >> sub) & 1) == 0
                lo, hi = tl.where(up, lo, hi), tl.where(up, hi, lo)
            x = tl.reshape(tl.permute(tl.join(lo, hi), (0, 2, 1)), (N,))
    return x


@_helper
def _merge(buf, key, N: tl.constexpr, LOG_N: tl.constexpr):
    """The N smallest of the ascending buffer and the tile, ascending: the elementwise minimum of the buffer
    and the tile sorted descending is bitonic and holds them; one bitonic merge sorts it."""
    return _bitonic(tl.minimum(buf, _bitonic(key, N, LOG_N, 1, True)), N, LOG_N, LOG_N, False)


@_helper
def _sortable(d, pos):
    """int64 keys ordered as (distance, position): the float's bits made monotonic as int32 (negative
    floats' magnitude bits flipped; -0.0 first made +0.0) in the high word, the position in the low."""
    bits = (d + 0.0).to(tl.int32, bitcast=True)
    key32 = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    return (key32.to(tl.int64) << 32) | pos.to(tl.int64)


@_helper
def _unsortable(key):
    """The distance of a key (the inverse of :func:`_sortable`'s high word)."""
    key32 = (key >> 32).to(tl.int32)
    return (key32 ^ ((key32 >> 31) & 0x7FFFFFFF)).to(tl.float32, bitcast=True)


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

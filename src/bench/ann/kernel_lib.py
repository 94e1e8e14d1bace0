"""Pieces the Triton kernels of :mod:`bench.ann` share (import them only through the kernel modules, which
:func:`bench.ann.kernels.module` imports in the current interpreter setting): the helper decorator, the
int64 sort keys (distance bits made monotonic in the high word) and the bitonic sorting network that
keeps a sorted top-K buffer in registers.
"""
from __future__ import annotations

import triton
import triton.language as tl

from . import kernels

_INTERPRETED = kernels.interpreting()   # how the helpers below were decorated
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

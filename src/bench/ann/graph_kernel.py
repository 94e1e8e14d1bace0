"""Beam search over a fixed-degree graph in Triton, one program per query slot (the kernel of
:mod:`bench.ann.graph_search`; import it through :func:`bench.ann.kernels.module`).

In the spirit of CAGRA's single-CTA search (Ootomo et al., ICDE 2024, section IV-C): a program holds its
query, its candidate list (the internal top-M) and a small visited table in registers and runs up to ``R``
extends without leaving the chip; the state goes back to global memory only between launches, so a host
can refill finished slots (Trinity's continuous batching) between them. An extend (Trinity section 3.2,
steps 1-5):

1. the first ``P`` unexpanded entries of the list (nearest first) are marked expanded (a fresh query
   instead evaluates the fixed entry points);
2. their ``DEG`` graph neighbours each are the candidate lanes;
3. a lane is dropped when its id is in the list, in the visited table, or on an earlier lane;
   the rest are written to the visited table (direct-mapped: a slot keeps the last id hashed to it, so
   the table only forgets; a forgotten node is evaluated again and cannot re-enter a list that held it,
   since the list's M-th key only falls: results never depend on the table, distances counted may);
4. each lane's squared L2 distance, summed in a fixed pairwise order (:func:`bench.ann.knn.tree_sum`'s);
5. the lanes merge into the list (int64 keys: sortable distance bits << 32 | id << 1 | expanded flag, so
   ties go to the smaller id): the bitonic step of :mod:`bench.ann.kernel_lib`, then entries past the
   slot's top-M are cut.

A slot stops when its list (up to its top-M) has no unexpanded entry or at ``MAX_IT`` extends. Counters:
extends (``iters``) and distances computed (``tasks``) per slot, and with ``TRACE`` the distances of each
extend (``steps``): Trinity's stage accounting.
"""
from __future__ import annotations

import triton
import triton.language as tl

from . import kernels
from .kernel_lib import KEY_NONE, _helper, _merge, _sortable

_INTERPRETED = kernels.interpreting()   # how the kernels below were decorated
HASH = tl.constexpr(2654435761)


@_helper
def _halves_sum_rows(v, ROWS: tl.constexpr, D: tl.constexpr, LOG_D: tl.constexpr):
    """(ROWS, D) -> (ROWS,): columns summed in pairs of halves (col i + col i + h), h = D/2 ... 1."""
    for r in tl.static_range(LOG_D):
        a, b = tl.split(tl.permute(tl.reshape(v, (ROWS, 2, D >> (r + 1))), (0, 2, 1)))
        v = a + b
    return tl.reshape(v, (ROWS,))


@_helper
def _parents(keys, mlim, T: tl.constexpr, P: tl.constexpr, DEG: tl.constexpr):
    """Step 1: the first P unexpanded entries (positions < mlim) marked expanded; per lane (T) its
    parent's id and whether it has one."""
    pos = tl.arange(0, T)
    lane = tl.arange(0, T)
    parent = tl.zeros((T,), tl.int32)
    has = tl.zeros((T,), tl.int1)
    for i in tl.static_range(P):
        unexp = (keys != KEY_NONE) & ((keys & 1) == 0) & (pos < mlim)
        at = tl.min(tl.where(unexp, pos, T), 0)
        pid = tl.sum(tl.where(pos == at, (keys >> 1) & 0x7FFFFFFF, 0), 0).to(tl.int32)
        keys = keys | (pos == at).to(tl.int64)
        mine = (lane // DEG == i) & (at < T)
        parent = tl.where(mine, pid, parent)
        has = has | mine
    return keys, parent, has


@_helper
def _admit(cand, ok, keys, vis, T: tl.constexpr, H: tl.constexpr):
    """Step 3: lanes neither listed, nor in the visited table, nor on an earlier lane; the table updated."""
    ids = ((keys >> 1) & 0x7FFFFFFF).to(tl.int32)
    listed = tl.max(((cand[:, None] == ids[None, :]) & (keys != KEY_NONE)[None, :]).to(tl.int32), 1) > 0
    slot = ((cand.to(tl.int64) * HASH) >> 16) & (H - 1)
    hs = tl.arange(0, H)
    hit = slot[:, None] == hs[None, :]                                  # (T, H)
    seen = tl.max(tl.where(hit, vis[None, :], -1), 1) == cand
    lane = tl.arange(0, T)
    twin = tl.max(((cand[:, None] == cand[None, :]) & (lane[None, :] < lane[:, None]) & ok[None, :]).to(tl.int32), 1) > 0
    ok = ok & ~listed & ~seen & ~twin
    put = tl.max(tl.where(hit & ok[:, None], cand[:, None], -1), 0)      # (H,) the largest id hashed here
    return ok, tl.where(put >= 0, put, vis)


@_helper
def _distances(x_ptr, q, cand, ok, T: tl.constexpr, DIM: tl.constexpr, DP: tl.constexpr, LOG_DP: tl.constexpr):
    """Step 4: squared L2 of each admitted lane (+inf elsewhere), pairwise-summed over the dimensions."""
    di = tl.arange(0, DP)
    x = tl.load(x_ptr + cand.to(tl.int64)[:, None] * DIM + di[None, :], mask=ok[:, None] & (di < DIM)[None, :],
                other=0.0)
    diff = x - q[None, :]
    return tl.where(ok, _halves_sum_rows(diff * diff, T, DP, LOG_DP), float("inf"))


@triton.jit
def graph_search(x_ptr, g_ptr, seeds_ptr, q_ptr, keys_ptr, vis_ptr, mlim_ptr, iters_ptr, tasks_ptr,
                 active_ptr, steps_ptr, R, max_it,
                 DIM: tl.constexpr, DP: tl.constexpr, LOG_DP: tl.constexpr, DEG: tl.constexpr, P: tl.constexpr,
                 T: tl.constexpr, LOG_T: tl.constexpr, H: tl.constexpr, TRACE: tl.constexpr):
    """Program s: up to R extends of slot s (nothing when it is not active)."""
    s = tl.program_id(0).to(tl.int64)
    if tl.load(active_ptr + s) != 0:
        lane = tl.arange(0, T)
        q = tl.load(q_ptr + s * DIM + tl.arange(0, DP), mask=tl.arange(0, DP) < DIM, other=0.0)
        keys = tl.load(keys_ptr + s * T + lane)
        vis = tl.load(vis_ptr + s * H + tl.arange(0, H))
        mlim = tl.load(mlim_ptr + s)
        it = tl.load(iters_ptr + s)
        tasks = tl.load(tasks_ptr + s)
        go = it < max_it
        r = 0
        while go & (r < R):
            if it == 0:
                cand = tl.load(seeds_ptr + lane, mask=lane < P * DEG, other=0)
                ok = lane < P * DEG
            else:
                keys, parent, ok = _parents(keys, mlim, T, P, DEG)
                cand = tl.load(g_ptr + parent.to(tl.int64) * DEG + lane % DEG, mask=ok, other=0)
            ok, vis = _admit(cand, ok, keys, vis, T, H)
            d = _distances(x_ptr, q, cand, ok, T, DIM, DP, LOG_DP)
            new = tl.where(ok, _sortable(d, cand.to(tl.int64) << 1), KEY_NONE)
            keys = _merge(keys, new, T, LOG_T)
            keys = tl.where(lane < mlim, keys, KEY_NONE)
            n_ok = tl.sum(ok.to(tl.int64), 0)
            if TRACE:
                tl.store(steps_ptr + s * (max_it + 1) + it, n_ok)
            tasks += n_ok
            it += 1
            r += 1
            go = (tl.sum(((keys != KEY_NONE) & ((keys & 1) == 0)).to(tl.int32), 0) > 0) & (it < max_it)
        tl.store(keys_ptr + s * T + lane, keys)
        tl.store(vis_ptr + s * H + tl.arange(0, H), vis)
        tl.store(iters_ptr + s, it)
        tl.store(tasks_ptr + s, tasks)
        tl.store(active_ptr + s, go.to(tl.int32))

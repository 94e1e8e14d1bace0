"""IVF-PQ search fused on the device: coarse step, lookup tables, one scan kernel, one merge; no host
synchronisation and no host planning between the queries and the result (shared by the studies; it serves
Chameleon's GPU baseline, section 6.2, and any study searching an IVF-PQ index on a GPU).

The index is laid out once (:class:`InterleavedLists`, untimed, like faiss's ``index_cpu_to_gpu``): codes
stay 1 byte per sub-quantizer and are interleaved per list in blocks of ``block`` vectors (faiss GPU
interleaves 32), each sub-quantizer's codes of a block contiguous, so the scan's loads coalesce; the
sub-quantizers are padded to a power of two ``MP`` (code 0 in an all-zero table row adds exactly 0).

:func:`search` for a batch, all on the layout's device:

1. coarse: ``||x||^2 - 2 x.c + ||c||^2`` by one matmul, ``nprobe`` nearest lists by one top-K (fp32; TF32
   is whatever ``torch.backends.cuda.matmul.allow_tf32`` says, False by default, reported by the caller);
2. lookup tables: ``-2 <x_j, C_jk>`` of every query, one einsum, (nq, MP, 256) fp32 (faiss's precomputed
   tables: the norm term ``||q(y)||^2 + 2 <c_l, q(y)>`` is per vector, stored with the layout);
3. scan (:mod:`bench.ann.ivfpq_kernel`): one program per (query, probed list), the table on chip, the
   distances selected in registers; out: ``KP`` (distance, row) pairs per program, ``KP`` the next power of
   two >= K (at least 16), never a distance per code;
4. merge: a stable sort of each query's nprobe x KP candidates, the K first, their ids.

Ties: a distance tie goes to the earlier probed list, then the earlier vector in the list; the reference
(:func:`reference`, one query at a time in plain torch, the same table, the same summation order) breaks
them the same way, so the kernel's ids equal the reference's. The check that every query's probed lists
hold K vectors is computed on the device beside the result (``SearchResult.probed``); the caller reads
it with the result (no extra synchronisation).

Without a way to run the kernel (:func:`bench.ann.kernels.mode`) the scan step runs as :func:`torch_scan`
(the same distances, computed per (query, probed list) pair with a padded gather; more memory traffic),
and ``SearchResult.mode`` says so.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..core.base.errors import ConfigError
from . import kernels

KSUB = 256
KERNEL = "bench.ann.ivfpq_kernel"
MAX_K = 1024          # the kernel keeps a sorted KP-entry buffer in registers: larger K takes the torch path


@dataclasses.dataclass
class InterleavedLists:
    """An IVF-PQ index laid out for the fused scan (tensors on one device)."""

    coarse: "object"        # (nlist, d) fp32 coarse centroids
    coarse_norm: "object"   # (nlist,) fp32
    centroids: "object"     # (MP, 256, dsub) fp32 PQ centroids, sub-quantizers past m all zero
    lut_cents: "object"     # (m, dsub, 256) fp32: -2 x the centroids, transposed (a table is one bmm)
    codes: "object"         # (blocks, MP, block) uint8, list after list, each padded to whole blocks
    norm: "object"          # (blocks * block,) fp32 norm term per row, +inf on padding rows
    ids: "object"           # (blocks * block + 1,) int64 vector id per row, -1 on padding rows and the last
    block_start: "object"   # (nlist,) int32 first block of each list
    sizes: "object"         # (nlist,) int64 vectors per list
    m: int
    dim: int
    block: int
    longest: int = 0        # vectors in the longest list (a host-side int: the torch path's width)

    @property
    def mp(self) -> int:
        return self.centroids.shape[0]

    @property
    def nlist(self) -> int:
        return self.coarse.shape[0]

    @property
    def device(self):
        return self.codes.device

    @classmethod
    def build(cls, coarse, centroids, codes, ids, norm, offsets, block: int = 32,
              device: str = "cpu") -> "InterleavedLists":
        """From an IVF-PQ index's parts: ``coarse`` (nlist, d), PQ ``centroids`` (m, 256, dsub), ``codes``
        (N, m) uint8 and ``ids`` (N,) and ``norm`` (N,) stored list after list, list l at rows
        ``offsets[l]:offsets[l + 1]``."""
        import torch

        codes = np.asarray(codes, dtype=np.uint8)
        centroids = np.asarray(centroids, dtype=np.float32)
        m, offsets = centroids.shape[0], np.asarray(offsets, dtype=np.int64)
        if block < 1 or block & (block - 1):
            raise ConfigError(f"interleave block {block} must be a power of two")
        if codes.ndim != 2 or codes.shape[1] != m or len(codes) != offsets[-1]:
            raise ConfigError(f"codes {codes.shape} do not match m={m} and the {offsets[-1]} listed vectors")
        mp = kernels.next_pow2(m)
        sizes = np.diff(offsets)
        nblk = -(-sizes // block)
        block_start = np.concatenate([[0], np.cumsum(nblk)[:-1]]).astype(np.int64)
        rows = _padded_rows(offsets, block_start, block)          # padded row of each stored vector
        total = int(nblk.sum()) * block
        codes_p = np.zeros((total, mp), np.uint8)
        codes_p[rows, :m] = codes
        inter = codes_p.reshape(-1, block, mp).transpose(0, 2, 1).copy()     # (blocks, MP, block)
        norm_p = np.full(total, np.inf, np.float32)
        norm_p[rows] = np.asarray(norm, dtype=np.float32)
        ids_p = np.full(total + 1, -1, np.int64)        # + the row an empty candidate slot points at
        ids_p[rows] = np.asarray(ids, dtype=np.int64)
        cents = np.zeros((mp,) + centroids.shape[1:], np.float32)
        cents[:m] = centroids
        c = torch.from_numpy(np.ascontiguousarray(coarse, dtype=np.float32))
        cents_t = torch.from_numpy(cents)
        t = {"coarse": c, "coarse_norm": (c * c).sum(1), "centroids": cents_t,
             "lut_cents": (-2.0 * cents_t[:m]).transpose(1, 2).contiguous(),
             "codes": torch.from_numpy(inter), "norm": torch.from_numpy(norm_p), "ids": torch.from_numpy(ids_p),
             "block_start": torch.from_numpy(block_start.astype(np.int32)),
             "sizes": torch.from_numpy(sizes.astype(np.int64))}
        return cls(**{k: v.to(device) for k, v in t.items()}, m=m, dim=c.shape[1], block=block,
                   longest=int(sizes.max()) if len(sizes) else 0)

    def to(self, device) -> "InterleavedLists":
        fields = ("coarse", "coarse_norm", "centroids", "lut_cents", "codes", "norm", "ids", "block_start", "sizes")
        return dataclasses.replace(self, **{f: getattr(self, f).to(device) for f in fields})

    @property
    def empty_row(self) -> int:
        """The row an empty candidate slot points at (its id is -1)."""
        return self.ids.shape[0] - 1

    def row_codes(self, rows) -> "object":
        """(len(rows), MP) codes of padded rows (the reference's view of the interleaved layout)."""
        blk, v = rows // self.block, rows % self.block
        return self.codes[blk, :, v]


def _padded_rows(offsets: np.ndarray, block_start: np.ndarray, block: int) -> np.ndarray:
    sizes = np.diff(offsets)
    within = np.arange(offsets[-1]) - np.repeat(offsets[:-1], sizes)
    return np.repeat(block_start * block, sizes) + within


@dataclasses.dataclass
class SearchResult:
    D: "object"          # (nq, k) fp32 distances, ascending (device)
    I: "object"          # (nq, k) int64 ids (device)
    probed: "object"     # (nq,) int64 vectors in each query's probed lists (device): the caller checks >= k
    mode: str            # triton-cuda, triton-interpreter or torch (with the reason)


def kp_of(k: int) -> int:
    """Entries each program keeps: the next power of two >= K, at least 16 (Triton's smallest tile)."""
    return max(16, kernels.next_pow2(k))


def coarse(lists: InterleavedLists, x, nprobe: int):
    """(distances, list ids) (nq, nprobe) of each query's nearest coarse centroids, on the device."""
    import torch

    d = torch.addmm(lists.coarse_norm[None, :], x, lists.coarse.T, alpha=-2.0)
    d += (x * x).sum(1, keepdim=True)
    return torch.topk(d, nprobe, dim=1, largest=False, sorted=True)


def lookup_tables(lists: InterleavedLists, x):
    """(MP, nq, 256) fp32: ``<x_j, -2 C_jk>`` (bitwise ``-2 <x_j, C_jk>``: scaling by 2 is exact), one bmm
    (rows past m zero)."""
    import torch

    nq, m = x.shape[0], lists.m
    alloc = torch.zeros if lists.mp > m else torch.empty
    lut = alloc(lists.mp, nq, KSUB, dtype=torch.float32, device=x.device)
    torch.bmm(x.view(nq, m, lists.dim // m).transpose(0, 1), lists.lut_cents, out=lut[:m])
    return lut


def check(lists: InterleavedLists, nq: int, d: int, nprobe: int, k: int) -> None:
    """Bad search parameters, before any work."""
    if d != lists.dim:
        raise ConfigError(f"queries must be (n, {lists.dim}), got dimension {d}")
    if not 1 <= nprobe <= lists.nlist:
        raise ConfigError(f"nprobe={nprobe} must be between 1 and nlist={lists.nlist}")
    if k < 1:
        raise ConfigError(f"K={k} must be >= 1")


def search(lists: InterleavedLists, xq, nprobe: int, k: int, lut_on_chip: bool = True,
           force_torch: bool = False) -> SearchResult:
    """The K nearest (D, I) of each query over its ``nprobe`` probed lists, all on the layout's device."""
    import torch

    x = torch.as_tensor(xq, dtype=torch.float32, device=lists.device)
    check(lists, x.shape[0], x.shape[1], nprobe, k)
    cd, cl = coarse(lists, x, nprobe)
    lut = lookup_tables(lists, x)
    how, why = kernels.mode(lists.device)
    if force_torch or how is None or k > MAX_K:
        why = "forced" if force_torch else why or f"K={k} above the kernel's {MAX_K}: torch path"
        cand_d, cand_r = torch_scan(lists, lut, cl, cd, kp_of(k))
        how = f"torch ({why})"
    else:
        cand_d, cand_r = kernel_scan(lists, lut, cl, cd, k, lut_on_chip)
    D, I = merge(lists, cand_d, cand_r, k)
    probed = lists.sizes[cl].sum(1)
    return SearchResult(D, I, probed, how)


def kernel_scan(lists: InterleavedLists, lut, cl, cd, k: int, lut_on_chip: bool = True):
    """Step 3: one launch over the (nq, nprobe) grid; (nq, nprobe * KP) candidate distances and rows."""
    import torch

    mod = kernels.module(KERNEL)
    nq, nprobe = cl.shape
    kp = kp_of(k)
    out_d = torch.empty(nq, nprobe * kp, dtype=torch.float32, device=lut.device)
    out_r = torch.empty(nq, nprobe * kp, dtype=torch.int64, device=lut.device)
    kernels.launch(mod.ivfpq_scan, (nq, nprobe), lut, cl, cd, lists.block_start, lists.sizes, lists.codes,
                   lists.norm, out_d, out_r, nprobe, nq, lists.empty_row, MP=lists.mp, LOG_MP=lists.mp.bit_length() - 1, BV=lists.block,
                   KP=kp, LOG_KP=kp.bit_length() - 1, LUT_ON_CHIP=lut_on_chip,
                   outputs=(out_d, out_r))
    return out_d, out_r


def torch_scan(lists: InterleavedLists, lut, cl, cd, kp: int):
    """Step 3 without the kernel, the same result: every (query, list) pair's rows padded to the longest
    list (no host read: the width is the layout's longest list), distances, the KP best per pair."""
    import torch

    from .knn import tree_sum

    nq, nprobe = cl.shape
    width = max(kp, lists.longest)
    pos = torch.arange(width, device=lut.device)
    start = lists.block_start.long()[cl] * lists.block                       # (nq, nprobe)
    rows = start[..., None] + pos                                            # (nq, nprobe, width)
    valid = pos < lists.sizes[cl][..., None]
    rows = torch.where(valid, rows, 0)
    c = lists.row_codes(rows.reshape(-1)).long().view(nq, nprobe, width, lists.mp)
    tables = lut.permute(1, 0, 2)[:, None, None]                             # (nq, 1, 1, MP, 256)
    vals = tables.expand(nq, nprobe, width, lists.mp, KSUB).gather(4, c[..., None])[..., 0]
    d = (tree_sum(vals) + lists.norm[rows]) + cd[..., None]
    d = torch.where(valid, d, float("inf"))
    order = torch.sort(d, dim=2, stable=True).indices[..., :kp]
    out_d = d.gather(2, order)
    out_r = torch.where(out_d.isinf(), lists.empty_row, rows.gather(2, order))
    return out_d.reshape(nq, -1), out_r.reshape(nq, -1)


def merge(lists: InterleavedLists, cand_d, cand_r, k: int):
    """Step 4: each query's K best of its candidates (stable: ties keep probe order, then list order)."""
    import torch

    d, order = torch.sort(cand_d, dim=1, stable=True)
    return d[:, :k], lists.ids[cand_r.gather(1, order[:, :k])]


def reference(lists: InterleavedLists, xq, nprobe: int, k: int):
    """The scan written plainly, one query at a time (the definition the kernel must equal): its probed
    lists' rows in probe order, each distance ``(sum of looked-up entries in the halves order + norm) +
    coarse``, a stable sort, the K first. Returns (D, I) numpy."""
    import torch

    from .knn import tree_sum

    x = torch.as_tensor(xq, dtype=torch.float32, device=lists.device)
    cd, cl = coarse(lists, x, nprobe)
    lut = lookup_tables(lists, x)
    out_d, out_i = [], []
    for q in range(len(x)):
        rows = torch.cat([lists.block_start[lst].long() * lists.block + torch.arange(int(lists.sizes[lst]))
                          for lst in cl[q]])
        coarse_d = torch.cat([cd[q, p].expand(int(lists.sizes[lst])) for p, lst in enumerate(cl[q])])
        vals = lut[:, q].gather(1, lists.row_codes(rows).long().T).T           # (rows, MP)
        d = (tree_sum(vals) + lists.norm[rows]) + coarse_d
        order = torch.sort(d, stable=True).indices[:k]
        out_d.append(d[order])
        out_i.append(lists.ids[rows[order]])
    return torch.stack(out_d).cpu().numpy(), torch.stack(out_i).cpu().numpy()


def intermediate_bytes(nq: int, nprobe: int, k: int, m: int, nlist: int, dim: int) -> dict:
    """Bytes every step of :func:`search` writes for a batch (each output and allocation once; an in-place
    update counts again): what :class:`bench.ann.census.Census` counts on the kernel path."""
    kp, mp = kp_of(k), kernels.next_pow2(m)
    cand = nq * nprobe * kp * 12                                   # fp32 distance + int64 row per kept entry
    return {"coarse": nq * (2 * nlist * 4 + dim * 4 + 4 + nprobe * 12),
            "lookup tables": (mp + m) * nq * KSUB * 4, "candidates": cand, "merge sort": cand,
            "result": nq * k * 16, "probed check": nq * (nprobe + 1) * 8}

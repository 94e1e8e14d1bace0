"""The project's own IVF-PQ search kernel in torch (paper section 2.2, Figure 2 steps 4-6), CPU or CUDA.

For each query and each probed IVF list, the distance to a quantized vector y of list l is
``||x - c_l||^2 + (||q(y)||^2 + 2<c_l, q(y)>) - 2 sum_j <x_j, u_j(y_j)>``: the first term comes from the
coarse quantizer (the IVF index scan, :func:`coarse_assign`: one matmul and one top-K against the
centroids), the second is a per-vector constant computed once when the index is loaded (faiss keeps the
same term as its precomputed table), and the third is a gather-sum over the PQ codes in a per-query
distance lookup table of m x 256 entries (Figure 2 step 5); a top-K per query ends the scan (step 6, the
job of the paper's priority queues).

:func:`scan` builds the lookup tables of the whole batch in one launch, then runs the gather-sum and top-K
per chunk of queries, each chunk in a fixed number of launches whatever its size (:func:`plan`):

- pairs (:func:`_scan_pairs`; always on CUDA): one gather-sum over the codes of every (query, probed list)
  pair of the chunk, each code looked up in its own query's table, then one top-K over the rows padded per
  query. Chunks are as large as ``CHUNK_ELEMS`` allows (bounded memory), so a CUDA batch of 1,024 queries at
  1M vectors is a handful of chunks of about 25 launches each, not several launches per query.
- shared (:func:`_scan_shared`; CPU, when the lists of GROUP queries overlap enough): the codes of the union
  of their lists are gathered once and one ``embedding_bag`` over a (m*256, GROUP) table serves all GROUP
  queries per lookup (SIMD-wide), which beats per-pair lookups on the CPU when each query probes a large
  share of the index (the small profiles: nprobe 32 of nlist 141).

Fresh memory is expensive on the project's VM (page faults: about 0.5 ms per MB first touched, ten times
the cost of writing it again), so the CPU chunks stay small and each chunk makes few large temporaries.

Layout: the codes of all lists are stored contiguously (list after list), widened to int32 with the
sub-space offset ``j * 256`` added, so that one gather-sum needs no index arithmetic at query time.
Scan throughput is always reported in bytes of m-byte PQ codes (what faiss and the FPGA read).

:func:`faiss_scan` is faiss's own scan of the same lists (``search_preassigned``). Called as it is,
``search_preassigned`` runs on one thread whatever ``omp_set_num_threads`` says (``parallel_mode`` 0:
``IndexIVF::search`` splits the queries over threads itself, ``search_preassigned`` does not); this was
why ``cpu-gpu`` (GPU coarse quantizer + ``search_preassigned``) measured 13x slower than ``cpu`` on the
same 16 cores. :func:`faiss_scan` sets ``parallel_mode`` 3 (queries over threads) for the call.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ...core.base.errors import ConfigError

KSUB = 256


class KTooLargeError(ConfigError):
    """K is larger than the number of vectors the probed lists hold for some query."""


def check_params(dim: int, m: int, nlist: int | None = None, nprobe: int | None = None,
                 k: int | None = None) -> None:
    """Reject bad IVF-PQ search parameters before anything is built or measured."""
    if m < 1 or dim % m:
        raise ConfigError(f"PQ m={m} does not divide the dimension {dim}")
    if nprobe is not None and nlist is not None and not 1 <= nprobe <= nlist:
        raise ConfigError(f"nprobe={nprobe} must be between 1 and nlist={nlist}")
    if k is not None and k < 1:
        raise ConfigError(f"K={k} must be >= 1")


def check_k(probed_sizes: np.ndarray, k: int) -> None:
    """Fail when some query's probed lists hold fewer than K vectors (faiss would pad with -1)."""
    probed_sizes = np.asarray(probed_sizes)
    if probed_sizes.size and int(probed_sizes.min()) < k:
        q = int(np.argmin(probed_sizes))
        raise KTooLargeError(
            f"K={k} is larger than the {int(probed_sizes[q])} vectors the probed lists of query {q} hold; "
            f"raise nprobe or lower K")


def ivfpq_of(index):
    """The IndexIVFPQ inside ``index`` (L2, residual encoding, 8-bit codes), or ConfigError."""
    import faiss

    ivf = faiss.extract_index_ivf(index)
    ivf = faiss.downcast_index(ivf)
    if not isinstance(ivf, faiss.IndexIVFPQ):
        raise ConfigError(f"expected an IVF-PQ index, got {type(ivf).__name__}")
    if ivf.pq.nbits != 8 or ivf.metric_type != faiss.METRIC_L2 or not ivf.by_residual:
        raise ConfigError("the torch PQ scan supports L2, residual, 8-bit PQ codes only")
    return ivf


def list_sizes(index) -> np.ndarray:
    ivf = ivfpq_of(index)
    return np.array([ivf.invlists.list_size(i) for i in range(ivf.nlist)], dtype=np.int64)


def list_contents(index) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per-list (codes (n, m) uint8, ids (n,) int64) of a faiss IVF-PQ index."""
    import faiss

    ivf = ivfpq_of(index)
    m = ivf.pq.M
    codes, ids = [], []
    for lst in range(ivf.nlist):
        n = ivf.invlists.list_size(lst)
        if n:
            codes.append(faiss.rev_swig_ptr(ivf.invlists.get_codes(lst), n * m).copy().reshape(n, m))
            ids.append(faiss.rev_swig_ptr(ivf.invlists.get_ids(lst), n).copy().astype(np.int64))
        else:
            codes.append(np.zeros((0, m), np.uint8))
            ids.append(np.zeros(0, np.int64))
    return codes, ids


@dataclasses.dataclass
class IVFPQLayout:
    """An IVF-PQ index laid out for the torch scan kernel (tensors on one device)."""

    coarse: "object"       # (nlist, d) float32
    centroids: "object"    # (m, 256, dsub) float32
    codes_off: "object"    # (N, m) int32, code + j * 256
    norm_term: "object"    # (N,) float32, ||q(y)||^2 + 2 <c_l, q(y)>
    ids: "object"          # (N,) int64
    offsets: np.ndarray    # (nlist + 1,) int64, list l is rows offsets[l]:offsets[l+1]
    m: int
    dim: int

    @property
    def nlist(self) -> int:
        return len(self.offsets) - 1

    @functools.cached_property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def device(self):
        return self.codes_off.device

    @classmethod
    def from_faiss(cls, index, device: str = "cpu") -> "IVFPQLayout":
        import faiss
        import torch

        ivf = ivfpq_of(index)
        m, d, nlist = ivf.pq.M, ivf.d, ivf.nlist
        dsub = d // m
        coarse = ivf.quantizer.reconstruct_n(0, nlist).astype(np.float32)
        cents = faiss.vector_to_array(ivf.pq.centroids).astype(np.float32).reshape(m, KSUB, dsub)
        codes, ids = list_contents(index)
        sizes = np.array([len(i) for i in ids], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        all_codes = torch.from_numpy(np.concatenate(codes) if codes else np.zeros((0, m), np.uint8))
        jofs = torch.arange(m, dtype=torch.int32) * KSUB
        codes_off = (all_codes.to(torch.int32) + jofs).contiguous()
        c_t, cents_t = torch.from_numpy(coarse), torch.from_numpy(cents)
        # term2[l, j, k] = ||C_jk||^2 + 2 <c_l,j, C_jk>, then summed over each vector's codes.
        term2 = (cents_t ** 2).sum(-1)[None] + 2 * torch.einsum("lmd,mkd->lmk", c_t.view(nlist, m, dsub), cents_t)
        list_of_row = torch.repeat_interleave(torch.arange(nlist), torch.from_numpy(sizes))
        flat = term2.reshape(-1)
        norm = torch.empty(len(codes_off), dtype=torch.float32)
        for s in range(0, len(codes_off), 1 << 16):  # blocked: bounded memory
            rows = slice(s, s + (1 << 16))
            idx = codes_off[rows].long() + (list_of_row[rows] * (m * KSUB))[:, None]
            norm[rows] = flat[idx].sum(1)
        layout = cls(coarse=c_t, centroids=cents_t, codes_off=codes_off, norm_term=norm,
                     ids=torch.from_numpy(np.concatenate(ids) if ids else np.zeros(0, np.int64)),
                     offsets=offsets, m=m, dim=d)
        return layout.to(device)

    def to(self, device: str) -> "IVFPQLayout":
        return dataclasses.replace(
            self, coarse=self.coarse.to(device), centroids=self.centroids.to(device),
            codes_off=self.codes_off.to(device), norm_term=self.norm_term.to(device), ids=self.ids.to(device))

    def interleaved(self, block: int = 32):
        """The same index laid out for the fused scan (:class:`bench.ann.ivfpq_fused.InterleavedLists`:
        1-byte codes interleaved per list in blocks of ``block`` vectors) on this layout's device."""
        import torch

        from ...ann.ivfpq_fused import InterleavedLists

        jofs = torch.arange(self.m, dtype=torch.int32, device=self.device) * KSUB
        codes = (self.codes_off - jofs).to(torch.uint8).cpu().numpy()
        return InterleavedLists.build(self.coarse.cpu().numpy(), self.centroids.cpu().numpy(), codes,
                                      self.ids.cpu().numpy(), self.norm_term.cpu().numpy(), self.offsets,
                                      block=block, device=str(self.device))

    def code_bytes(self, lists: np.ndarray) -> int:
        """Bytes of m-byte PQ codes the probed ``lists`` (any shape) hold."""
        return int(self.sizes[np.asarray(lists)].sum()) * self.m


def _as_queries(layout: IVFPQLayout, xq):
    """Queries as a float32 tensor on the layout's device (a numpy input is copied, never aliased)."""
    import torch

    x = np.array(xq, dtype=np.float32, copy=True) if isinstance(xq, np.ndarray) else xq
    return torch.as_tensor(x, dtype=torch.float32, device=layout.device)


def coarse_assign(layout: IVFPQLayout, xq, nprobe: int):
    """IVF index scan (section 2.2, Figure 2 step 4's input): the ``nprobe`` nearest coarse centroids of
    each query by one matmul and one top-K on the layout's device (the GPU for CUDA layouts): (D, I)."""
    import torch

    check_params(layout.dim, layout.m, layout.nlist, nprobe)
    x = _as_queries(layout, xq)
    d = (x ** 2).sum(1, keepdim=True) - 2 * x @ layout.coarse.T + (layout.coarse ** 2).sum(1)[None]
    dist, lists = torch.topk(d, nprobe, dim=1, largest=False)
    return dist, lists


def lookup_tables(layout: IVFPQLayout, x):
    """Every query's distance lookup table in one launch (Figure 2 step 4): -2 <x_j, C_jk>, (nq, m*256)."""
    import torch

    nq, m = x.shape[0], layout.m
    return torch.einsum("bmd,mkd->bmk", (-2.0 * x).view(nq, m, layout.dim // m), layout.centroids).reshape(nq, -1)


def scan(layout: IVFPQLayout, xq, lists, k: int, coarse_dist=None):
    """PQ-code scan (Figure 2 steps 4-6) of the probed ``lists`` (nq, nprobe); returns (D, I) (nq, k), ascending.

    ``coarse_dist`` (nq, nprobe) are the query-to-centroid squared distances (computed if absent). The
    lookup tables of the whole batch are built at once; the gather-sum and top-K then run per chunk of
    queries (:func:`plan`), each chunk in a fixed number of launches whatever its size.
    """
    import torch

    x, lists_np, coarse_dist = _prepare(layout, xq, lists, k, coarse_dist)
    lut = lookup_tables(layout, x)
    dev, nq = layout.device, len(lists_np)
    out_d = torch.empty((nq, k), dtype=torch.float32, device=dev)
    out_i = torch.empty((nq, k), dtype=torch.int64, device=dev)
    for q0, q1, shared in plan(layout, lists_np):
        part = _scan_shared if shared else _scan_pairs
        out_d[q0:q1], out_i[q0:q1] = part(layout, lut[q0:q1], lists_np[q0:q1], coarse_dist[q0:q1], k)
    return out_d, out_i


def _prepare(layout: IVFPQLayout, xq, lists, k: int, coarse_dist):
    """Checked inputs: queries on the device, probed lists on the host, coarse distances on the device."""
    import torch

    x = _as_queries(layout, xq)
    lists_np = np.asarray(lists.cpu() if hasattr(lists, "cpu") else lists, dtype=np.int64)
    check_params(layout.dim, layout.m, layout.nlist, lists_np.shape[1], k)
    check_k(layout.sizes[lists_np].sum(1), k)
    if coarse_dist is None:
        probed = layout.coarse[torch.from_numpy(lists_np).to(layout.device)]
        coarse_dist = ((x[:, None, :] - probed) ** 2).sum(-1)
    return x, lists_np, torch.as_tensor(coarse_dist, dtype=torch.float32, device=layout.device)


# A CPU chunk: GROUP queries, sharing each lookup when the lists they probe overlap enough, i.e. when the
# rows of the union of their lists x GROUP stays within SHARE_MAX x the rows they need. Measured on the
# project's 2-core VM (1 thread, m 16, nprobe 32): both paths alike at a ratio of 12 (200k vectors), pairs
# 1.6-2.3x faster at 24 (1M vectors), shared 2x faster at 3.8 (20k vectors, the tiny profile).
GROUP = 64
SHARE_MAX = 12
# Bound on (rows x m) per (query, list)-pair chunk: its (rows, m) index and gathered values take 4-8 bytes
# per element. CPU: small, for the caches and the page-fault cost (2^17-2^20 measured alike on 1M vectors).
CHUNK_ELEMS = {"cpu": 1 << 19, "cuda": 1 << 27}


def plan(layout: IVFPQLayout, lists_np: np.ndarray, device_type: str | None = None) -> list[tuple[int, int, bool]]:
    """The chunks of a batch, (q0, q1, shared): on CUDA (query, list)-pair chunks as large as memory
    allows; on the CPU groups of GROUP queries that share lookups (or pair chunks where sharing loses).
    ``device_type`` defaults to the layout's."""
    device_type = device_type or layout.device.type
    rows = layout.sizes[lists_np].sum(1)
    budget = CHUNK_ELEMS.get(device_type, CHUNK_ELEMS["cuda"])
    max_q = (2 ** 31 - 1) // (layout.m * KSUB)     # int32 index into the chunk's lookup tables
    if device_type != "cpu":
        return [(a, b, False) for a, b in _chunks(rows * layout.m, budget, max_q)]
    out = []
    for g0 in range(0, len(lists_np), GROUP):
        g1 = min(g0 + GROUP, len(lists_np))
        union = int(layout.sizes[np.unique(lists_np[g0:g1])].sum())
        if union * (g1 - g0) <= SHARE_MAX * int(rows[g0:g1].sum()):
            out.append((g0, g1, True))
        else:
            out += [(g0 + a, g0 + b, False) for a, b in _chunks(rows[g0:g1] * layout.m, budget, max_q)]
    return out


def _chunks(cost: np.ndarray, budget: int, max_len: int) -> list[tuple[int, int]]:
    """Consecutive ranges of at most ``max_len`` queries whose summed ``cost`` stays within ``budget``
    (one query at least)."""
    csum = np.concatenate([[0], np.cumsum(cost)])
    out, q0 = [], 0
    while q0 < len(cost):
        q1 = int(np.searchsorted(csum, csum[q0] + budget, side="right")) - 1
        q1 = min(max(q0 + 1, q1), q0 + max_len)
        out.append((q0, q1))
        q0 = q1
    return out


def _counting(starts: np.ndarray, lens: np.ndarray, device, step: int = 1):
    """Segments laid end to end (``lens`` elements each), on ``device``: element j of segment s is
    ``starts[s] + step * j``. On the CPU in numpy (fewer dispatches for small batches), elsewhere by
    :func:`_counting_torch`."""
    import torch

    base = starts - step * (np.cumsum(lens) - lens)
    if torch.device(device).type == "cpu":
        return torch.from_numpy(np.repeat(base, lens) + np.arange(0, int(lens.sum()) * step, step, dtype=np.int64))
    return _counting_torch(base, lens, device, step)


def _counting_torch(base: np.ndarray, lens: np.ndarray, device, step: int):
    """``repeat(base, lens) + step * arange(total)`` on ``device``: one ``repeat_interleave`` (its output
    size given, so no device sync) and one in-place add."""
    import torch

    total = int(lens.sum())
    out = torch.repeat_interleave(torch.from_numpy(base).to(device), torch.from_numpy(lens).to(device),
                                  output_size=total)
    return out.add_(torch.arange(0, total * step, step, device=device))


def _repeat(values: np.ndarray, counts: np.ndarray, device):
    """``np.repeat(values, counts)`` built on ``device`` (one row per probed code: tens of millions at 1M
    vectors and a batch of 1,024, too many to build on the host and copy over)."""
    import torch

    if torch.device(device).type == "cpu":
        return torch.from_numpy(np.repeat(values, counts))
    v, c = _on(device, values, counts)
    return torch.repeat_interleave(v, c, output_size=int(counts.sum()))


def _on(device, *arrays):
    import torch

    return [torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in arrays]


def _scan_pairs(layout: IVFPQLayout, lut, lists_np: np.ndarray, coarse_dist, k: int):
    """Figure 2 steps 5-6 for one chunk: one gather-sum over the codes of every (query, probed list)
    pair, each code looked up in its query's table (index + query x m x 256), then one top-K."""
    import torch

    dev, nq = layout.device, len(lists_np)
    lens = layout.sizes[lists_np].reshape(-1)
    qtot = lens.reshape(nq, -1).sum(1)
    total, width = int(qtot.sum()), int(qtot.max())
    rows = _counting(layout.offsets[lists_np].reshape(-1), lens, dev)
    lens_t, = _on(dev, lens)
    idx = layout.codes_off.index_select(0, rows)                         # (rows, m) int32, code + j * 256
    idx += _repeat(np.arange(nq, dtype=np.int32) * (layout.m * KSUB), qtot, dev)[:, None]  # + its own table
    d = _gather_sum(lut.reshape(-1), idx)
    d += layout.norm_term.index_select(0, rows)
    d += torch.repeat_interleave(coarse_dist.reshape(-1), lens_t, output_size=total)
    padded = torch.full((nq * width,), float("inf"), dtype=torch.float32, device=dev)
    padded.index_copy_(0, _counting(np.arange(nq) * width, qtot, dev), d)
    v, i = torch.topk(padded.view(nq, width), k, dim=1, largest=False, sorted=True)
    at = (i + _on(dev, np.cumsum(qtot) - qtot)[0][:, None]).reshape(-1)
    return v, layout.ids.index_select(0, rows.index_select(0, at)).view(nq, k)


def _gather_sum(table, idx):
    """``table[idx].sum(1)`` for an (n, m) index: ``embedding_bag`` (its fast int64 path) on the CPU; on
    CUDA :func:`_gather_sum_plain`, since ``embedding_bag`` gives each bag a whole warp per feature column
    and this table has one column."""
    import torch.nn.functional as F

    if table.device.type == "cpu":
        return F.embedding_bag(idx.long(), table[:, None], mode="sum").squeeze(1)
    return _gather_sum_plain(table, idx)


def _gather_sum_plain(table, idx):
    """One gather of every looked-up entry (int32 or int64 index), then one row sum."""
    return table.index_select(0, idx.reshape(-1)).view(idx.shape).sum(1)


def _scan_shared(layout: IVFPQLayout, lut, lists_np: np.ndarray, coarse_dist, k: int):
    """Figure 2 steps 5-6 for a group of G queries sharing each lookup: the codes of the union of the lists
    they probe are gathered once and one ``embedding_bag`` over a (m*256, G) table gives every row's
    distance for all G queries (a lookup fetches G floats); then one gather picks each query's own rows,
    padded to the longest query with +inf, and one top-K."""
    import torch
    import torch.nn.functional as F

    dev, nq = layout.device, len(lists_np)
    uniq, inv = np.unique(lists_np, return_inverse=True)
    ulens = layout.sizes[uniq]
    rows_u = _counting(layout.offsets[uniq], ulens, dev)
    weight = lut.T.clone(memory_format=torch.contiguous_format)         # (m*256, G), unit stride for any G
    table = F.embedding_bag(layout.codes_off.index_select(0, rows_u).long(), weight, mode="sum")
    table += layout.norm_term.index_select(0, rows_u)[:, None]          # (rows of the union, G)
    at, seg_lens, width = _own_rows(layout, lists_np, (np.cumsum(ulens) - ulens)[inv.reshape(lists_np.shape)])
    d = table.view(-1).index_select(0, at)
    coarse = torch.cat([coarse_dist, torch.full((nq, 1), float("inf"), device=dev)], 1).reshape(-1)
    d += torch.repeat_interleave(coarse, _on(dev, seg_lens)[0], output_size=nq * width)
    v, i = torch.topk(d.view(nq, width), k, dim=1, largest=False, sorted=True)
    picked = torch.div(at.view(nq, width).gather(1, i).reshape(-1), nq, rounding_mode="floor")
    return v, layout.ids.index_select(0, rows_u.index_select(0, picked)).view(nq, k)


def _own_rows(layout: IVFPQLayout, lists_np: np.ndarray, list_at: np.ndarray):
    """Where each query's rows lie in a (rows of the union, G) table whose list ``lists_np[q, p]`` starts
    at row ``list_at[q, p]``: the flat positions (on the device), padded per query to ``width`` (padding:
    rows 0.., valid since no query holds more rows than the union), and the segment lengths (host,
    nq x (nprobe + 1), the last one of each query its padding)."""
    nq = len(lists_np)
    lens = layout.sizes[lists_np]
    width = int(lens.sum(1).max())
    seg_lens = np.concatenate([lens, width - lens.sum(1, keepdims=True)], 1).reshape(-1)
    seg_rows = np.concatenate([list_at, np.zeros((nq, 1), np.int64)], 1)
    starts = (seg_rows * nq + np.arange(nq)[:, None]).reshape(-1)            # flat index of (row, query)
    return _counting(starts, seg_lens, layout.device, step=nq), seg_lens, width


def faiss_scan(index, xq: np.ndarray, lists: np.ndarray, coarse_dist: np.ndarray, k: int):
    """faiss's own PQ scan of the same lists: ``search_preassigned`` (CPU), over faiss's OpenMP threads.

    ``search_preassigned`` runs on ONE thread at the default ``parallel_mode`` 0: ``IndexIVF::search``
    splits the queries over threads itself before calling it, ``search_preassigned`` does not (its
    ``do_parallel`` is false for mode 0). Mode 3 parallelises it over queries as ``search`` would, so it
    is set for the call (and restored). The caller checks K.
    """
    ivf = ivfpq_of(index)
    ivf.nprobe = np.asarray(lists).shape[1]  # faiss reads the assignment width from nprobe
    mode, ivf.parallel_mode = ivf.parallel_mode, 3
    try:
        return ivf.search_preassigned(np.ascontiguousarray(xq, dtype=np.float32), k,
                                      np.ascontiguousarray(lists, dtype=np.int64),
                                      np.ascontiguousarray(coarse_dist, dtype=np.float32))
    finally:
        ivf.parallel_mode = mode


def overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-query fraction of shared neighbour ids between two (nq, k) id arrays."""
    a, b = np.asarray(a), np.asarray(b)
    k = a.shape[1]
    return np.array([len(np.intersect1d(x, y)) / k for x, y in zip(a, b)])


"""The project's own IVF-PQ scan kernel in torch (paper section 2.2, Figure 2 steps 4-6).

For each query and each probed IVF list, the distance to a quantized vector y of list l is
``||x - c_l||^2 + (||q(y)||^2 + 2<c_l, q(y)>) - 2 sum_j <x_j, u_j(y_j)>``: the first term comes from the
coarse quantizer, the second is a per-vector constant computed once when the index is loaded (faiss
keeps the same term as its precomputed table), and the third is a gather-sum over the PQ codes in a
per-query distance lookup table of m x 256 entries. The gather-sum runs as one
``torch.nn.functional.embedding_bag`` (sum mode) per query over the codes of its probed lists, then
``torch.topk`` selects K. Batches of ``GROUP_MIN_BATCH`` queries or more take a grouped path where
the queries of a group share each lookup (see ``_scan_grouped``). The same code runs on CPU and CUDA.

Layout: the codes of all lists are stored contiguously (list after list), widened to int32 with the
sub-space offset ``j * 256`` added, so that one gather-sum needs no index arithmetic at query time.
Scan throughput is always reported in bytes of m-byte PQ codes (what faiss and the FPGA read).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..core.errors import ConfigError

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

    @property
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

    def code_bytes(self, lists: np.ndarray) -> int:
        """Bytes of m-byte PQ codes the probed ``lists`` (any shape) hold."""
        return int(self.sizes[np.asarray(lists)].sum()) * self.m


def coarse_assign(layout: IVFPQLayout, xq, nprobe: int):
    """The ``nprobe`` nearest coarse centroids of each query, on the layout's device: (D, I)."""
    import torch

    check_params(layout.dim, layout.m, layout.nlist, nprobe)
    x = torch.as_tensor(np.array(xq, dtype=np.float32, copy=True) if isinstance(xq, np.ndarray) else xq,
                        dtype=torch.float32, device=layout.device)
    d = (x ** 2).sum(1, keepdim=True) - 2 * x @ layout.coarse.T + (layout.coarse ** 2).sum(1)[None]
    dist, lists = torch.topk(d, nprobe, dim=1, largest=False)
    return dist, lists


def scan(layout: IVFPQLayout, xq, lists, k: int, coarse_dist=None):
    """Scan the probed ``lists`` (nq, nprobe) of each query; returns (D, I) (nq, k), ascending.

    ``coarse_dist`` (nq, nprobe) are the query-to-centroid squared distances (computed if absent).
    """
    import torch
    import torch.nn.functional as F

    dev = layout.device
    x = torch.as_tensor(np.array(xq, dtype=np.float32, copy=True) if isinstance(xq, np.ndarray) else xq,
                        dtype=torch.float32, device=dev)
    lists_np = np.asarray(lists.cpu() if hasattr(lists, "cpu") else lists, dtype=np.int64)
    nq, nprobe = lists_np.shape
    check_params(layout.dim, layout.m, layout.nlist, nprobe, k)
    sizes = layout.sizes[lists_np]                      # (nq, nprobe)
    check_k(sizes.sum(1), k)
    m, dsub = layout.m, layout.dim // layout.m
    lists_t = torch.from_numpy(lists_np).to(dev)
    if coarse_dist is None:
        coarse_dist = ((x[:, None, :] - layout.coarse[lists_t]) ** 2).sum(-1)
    coarse_dist = torch.as_tensor(coarse_dist, dtype=torch.float32, device=dev)
    # Per-query lookup tables: -2 <x_j, C_jk>, (nq, m*256, 1).
    lut = torch.einsum("bmd,mkd->bmk", (-2.0 * x).view(nq, m, dsub), layout.centroids).reshape(nq, m * KSUB, 1)
    # Rows of every probed list, query after query, built in one pass.
    starts = layout.offsets[lists_np].reshape(-1)
    lens = sizes.reshape(-1)
    total = int(lens.sum())
    excl = np.cumsum(lens) - lens
    rows_np = np.arange(total, dtype=np.int64) + np.repeat(starts - excl, lens)
    if nq >= GROUP_MIN_BATCH:
        return _scan_grouped(layout, lists_np, sizes, k, coarse_dist, lut.squeeze(-1))
    rows = torch.from_numpy(rows_np).to(dev)
    base_all = torch.repeat_interleave(coarse_dist.reshape(-1), torch.from_numpy(lens).to(dev))
    qlens = sizes.sum(1)
    qstart = np.concatenate([[0], np.cumsum(qlens)])
    out_d = torch.empty((nq, k), dtype=torch.float32, device=dev)
    out_i = torch.empty((nq, k), dtype=torch.int64, device=dev)
    for b in range(nq):
        # one query at a time, so its gathered codes stay in cache for the gather-sum
        s, e = int(qstart[b]), int(qstart[b + 1])
        r = rows[s:e]
        codes = layout.codes_off.index_select(0, r).long()
        d = F.embedding_bag(codes, lut[b], mode="sum").squeeze(1)
        d += layout.norm_term.index_select(0, r)
        d += base_all[s:e]
        v, i = torch.topk(d, k, largest=False, sorted=True)
        out_d[b] = v
        out_i[b] = layout.ids.index_select(0, r.index_select(0, i))
    return out_d, out_i


GROUP = 64
GROUP_MIN_BATCH = 8


def _ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + n) for each (s, n)."""
    total = int(lens.sum())
    excl = np.cumsum(lens) - lens
    return np.arange(total, dtype=np.int64) + np.repeat(starts - excl, lens)


def _scan_grouped(layout: IVFPQLayout, lists_np, sizes, k, coarse_dist, lut2d):
    """Batched path: queries in groups of GROUP share one gather-sum.

    For a group, the lookup tables of its queries form one (m*256, G) table; the codes of the union of
    the lists the group probes are gathered once, and one ``embedding_bag`` (sum) over them yields every
    row's distance for all G queries at once (a table row holds G floats, so a lookup serves G queries);
    each query then keeps the rows of its own probed lists and selects its top-K.
    """
    import torch
    import torch.nn.functional as F

    dev = layout.device
    nq = lists_np.shape[0]
    out_d = torch.empty((nq, k), dtype=torch.float32, device=dev)
    out_i = torch.empty((nq, k), dtype=torch.int64, device=dev)
    offs = layout.offsets
    cd_np = coarse_dist.cpu().numpy()
    for g0 in range(0, nq, GROUP):
        L = lists_np[g0:g0 + GROUP]
        gn = L.shape[0]
        W = lut2d[g0:g0 + gn].T.contiguous()                       # (m*256, gn)
        uniq = np.unique(L)
        ulens = layout.sizes[uniq]
        ustart = np.cumsum(ulens) - ulens
        rows_u = torch.from_numpy(_ranges(offs[uniq], ulens)).to(dev)
        # one gather-sum for the whole group: rows of the union of its lists x its G lookup tables
        codes_u = layout.codes_off.index_select(0, rows_u).long()  # int64: torch's fast embedding_bag path
        O = F.embedding_bag(codes_u, W, mode="sum")                 # (rows of the union, gn)
        O += layout.norm_term.index_select(0, rows_u)[:, None]
        O = O.T                                                     # (gn, rows): a strided view
        # Each query keeps the rows of its own probed lists (positions built for the whole group at once).
        lens = sizes[g0:g0 + gn]                                    # (gn, nprobe)
        pos = ustart[np.searchsorted(uniq, L)]                      # where each probed list starts in O
        qtot = lens.sum(1)
        qoff = np.concatenate([[0], np.cumsum(qtot)])
        src = torch.from_numpy(_ranges(pos.ravel(), lens.ravel())).to(dev)
        cdr = torch.from_numpy(np.repeat(cd_np[g0:g0 + gn].ravel(), lens.ravel())).to(dev)
        seqs = []
        for j in range(gn):
            a, b = int(qoff[j]), int(qoff[j + 1])
            d = O[j].index_select(0, src[a:b])
            d += cdr[a:b]
            seqs.append(d)
        padded = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=float("inf"))
        v, i = torch.topk(padded, k, dim=1, largest=False, sorted=True)  # one selection for the group
        out_d[g0:g0 + gn] = v
        picked = src.index_select(0, (i + torch.from_numpy(qoff[:-1]).to(dev)[:, None]).reshape(-1))
        out_i[g0:g0 + gn] = layout.ids.index_select(0, rows_u.index_select(0, picked)).view(gn, k)
    return out_d, out_i


def faiss_scan(index, xq: np.ndarray, lists: np.ndarray, coarse_dist: np.ndarray, k: int):
    """faiss's own PQ scan of the same lists: ``search_preassigned`` (CPU). The caller checks K."""
    ivf = ivfpq_of(index)
    ivf.nprobe = np.asarray(lists).shape[1]  # faiss reads the assignment width from nprobe
    return ivf.search_preassigned(np.ascontiguousarray(xq, dtype=np.float32), k,
                                  np.ascontiguousarray(lists, dtype=np.int64),
                                  np.ascontiguousarray(coarse_dist, dtype=np.float32))


def overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-query fraction of shared neighbour ids between two (nq, k) id arrays."""
    a, b = np.asarray(a), np.asarray(b)
    k = a.shape[1]
    return np.array([len(np.intersect1d(x, y)) / k for x, y in zip(a, b)])


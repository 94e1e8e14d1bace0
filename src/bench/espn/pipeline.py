"""The ESPN retrieve-and-re-rank pipeline (paper Figure 4, sections 4.2-4.4).

One query batch: coarse quantisation for eta lists; with the prefetcher, ``search_preassigned`` on the
first delta lists gives an approximate top-K whose top-n embeddings are read asynchronously (and
MaxSim-scored as soon as they arrive: early re-ranking) while the main thread scans the remaining
lists; then the main thread waits for the prefetcher (as in the paper's design), reads only the
misses on the critical path, scores them, and merges. Only the top ``rerank_n`` candidates are
re-ranked (partial re-ranking, section 4.4); the rest keep their CLS order.
"""
from __future__ import annotations

import concurrent.futures as cf
import time
from dataclasses import dataclass, field

import numpy as np

from ..core import devices
from . import ann
from .backends import EmbeddingStore
from .maxsim import combine, maxsim, partial_rerank
from .errors import PrefetchConfigError


@dataclass
class BatchResult:
    rankings: list[np.ndarray]
    cls_ids: np.ndarray  # [B, K] candidate ids in CLS order
    timings: dict[str, float]
    hits: int = 0
    needed: int = 0
    extra: dict = field(default_factory=dict)


class Retriever:
    """Retrieve (IVF over CLS) and re-rank (MaxSim over BOW) with one embedding back end."""

    def __init__(self, index, store: EmbeddingStore, k: int, nprobe: int, rerank_n: int,
                 prefetch_step: float | None = None, device: str = "cpu", bow_weight: float = 1.0,
                 prefetch_chunk: int = 1024):
        if rerank_n < 1:
            raise PrefetchConfigError(f"re-rank count must be >= 1, got {rerank_n}")
        if k < rerank_n:
            raise PrefetchConfigError(f"K ({k}) must be >= the re-rank count ({rerank_n})")
        self.index, self.store, self.k, self.nprobe, self.n = index, store, k, nprobe, rerank_n
        self.delta = None
        if prefetch_step is not None:
            if not 0 < prefetch_step <= 1:
                raise PrefetchConfigError(f"prefetch step must be in (0, 1], got {prefetch_step}")
            self.delta = ann.delta_for(nprobe, prefetch_step)
            ann.check_delta(self.delta, nprobe)
        self.device, self.w = device, bow_weight
        self.chunk = max(1, int(prefetch_chunk))
        self._early_pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="early-rerank")

    def _score(self, q_toks, owners: list[np.ndarray], ids: np.ndarray, dec) -> list[dict[int, float]]:
        """MaxSim of each query against its own docs among the decoded rows (``ids`` row order)."""
        _, bow, lens = dec
        row = {int(d): r for r, d in enumerate(ids)}
        out = []
        for qt, mine in zip(q_toks, owners):
            rows = np.array([row[int(d)] for d in mine], dtype=np.int64)
            s = maxsim(qt, bow[rows], lens[rows], self.device) if len(rows) else np.zeros(0, np.float32)
            out.append({int(d): float(v) for d, v in zip(mine, s)})
        return out

    def run(self, q_cls: np.ndarray, q_toks: list[np.ndarray]) -> BatchResult:
        B = q_cls.shape[0]
        cuda = self.device == "cuda"
        t = {"ann": 0.0, "prefetch_wait": 0.0, "crit_read": 0.0, "rerank": 0.0, "prefetch_io": 0.0}
        t0 = time.perf_counter()
        Dq, Iq = ann.coarse(self.index, q_cls, self.nprobe)
        fut, pre_sets, t_sub = None, [set() for _ in range(B)], 0.0
        if self.delta is not None:
            Da, Ia = ann.scan(self.index, q_cls, self.k, Iq[:, :self.delta], Dq[:, :self.delta])
            owners = [a[a >= 0][: self.n] for a in Ia]
            union = np.unique(np.concatenate(owners)) if B else np.zeros(0, np.int64)
            pre_sets = [set(map(int, o)) for o in owners]

            t_sub = time.perf_counter()
            # the reads go out in chunks (one background reader), and each chunk is MaxSim-scored as
            # soon as it arrives (early re-ranking) by another thread, overlapping the next chunk's I/O
            chunks = [union[i:i + self.chunk] for i in range(0, len(union), self.chunk)] or [union]
            reads = [self.store.submit(c) for c in chunks]

            def early(chunks=chunks, reads=reads, owners=owners):
                scores = [dict() for _ in range(B)]
                for c, f in zip(chunks, reads):
                    cset = set(map(int, c))
                    mine = [o[np.fromiter((int(d) in cset for d in o), bool, len(o))] for o in owners]
                    for sc, new in zip(scores, self._score(q_toks, mine, c, f.result())):
                        sc.update(new)
                if cuda:
                    devices.synchronize()
                return scores, time.perf_counter()

            fut = self._early_pool.submit(early)
            if self.delta < self.nprobe:
                Db, Ib = ann.scan(self.index, q_cls, self.k, Iq[:, self.delta:], Dq[:, self.delta:])
                D, I = ann.merge(Da, Ia, Db, Ib, self.k)
            else:
                D, I = Da, Ia
        else:
            D, I = ann.scan(self.index, q_cls, self.k, Iq, Dq)
        t1 = time.perf_counter()
        t["ann"] = t1 - t0
        early_scores = [dict() for _ in range(B)]
        if fut is not None:
            early_scores, t_done = fut.result()
            t2 = time.perf_counter()
            t["prefetch_wait"] = t2 - t1
            t["prefetch_io"] = t_done - t_sub
        else:
            t2 = t1
        finals = [i[i >= 0][: self.n] for i in I]
        miss_owners = [f[~np.isin(f, np.fromiter(p, np.int64, len(p)))] if p else f
                       for f, p in zip(finals, pre_sets)]
        hits = sum(len(f) - len(m) for f, m in zip(finals, miss_owners))
        needed = sum(len(f) for f in finals)
        miss_union = np.unique(np.concatenate(miss_owners)) if B else np.zeros(0, np.int64)
        dec = self.store.read(miss_union) if len(miss_union) else None
        t3 = time.perf_counter()
        t["crit_read"] = t3 - t2
        late = self._score(q_toks, miss_owners, miss_union, dec) if dec is not None else [dict() for _ in range(B)]
        rankings = []
        for b in range(B):
            bow = {**early_scores[b], **late[b]}
            f = finals[b]
            cls_s = {int(i): float(d) for i, d in zip(I[b], D[b]) if i >= 0}
            agg = {int(d): float(combine(cls_s[int(d)], bow[int(d)], self.w)) for d in f}
            valid = I[b] >= 0
            rankings.append(partial_rerank(I[b][valid], D[b][valid], agg, self.n))
        if cuda:
            devices.synchronize()
        t4 = time.perf_counter()
        t["rerank"] = t4 - t3
        t["total"] = t4 - t0
        return BatchResult(rankings, I, t, hits=hits, needed=needed,
                           extra={"n_prefetched": int(sum(len(p) for p in pre_sets)),
                                  "n_crit_reads": int(len(miss_union))})

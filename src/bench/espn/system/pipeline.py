"""The ESPN retrieve-and-re-rank pipeline (paper Figure 4, sections 4.2-4.4).

One query batch: coarse quantisation for eta lists; with the prefetcher, ``search_preassigned`` on the
first delta lists gives an approximate top-K whose top-n embeddings a background thread reads in
chunks (approximate-rank order, the next chunk in flight while the current one is MaxSim-scored:
early re-ranking) while the main thread scans the remaining lists. When the ANN finishes, the final
top n is published: chunks not yet issued are cut to the records still needed (the prefetcher does not
go on reading candidates that left the top n, nor score them), and the main thread reads the misses on
the critical path at once, concurrently with the prefetcher's remaining reads, scores them, then joins
the prefetcher and merges. (The first version waited for the whole prefetch, read plus MaxSim of all
n approximate candidates, before reading the misses: with a short ANN that put n + misses reads and
scorings in series on the critical path, slower than no prefetching.) Only the top ``rerank_n``
candidates are re-ranked (partial re-ranking, section 4.4); the rest keep their CLS order.
"""
from __future__ import annotations

import concurrent.futures as cf
import time
from dataclasses import dataclass, field

import numpy as np

from ...core.machine import devices
from . import candidates
from .backends import EmbeddingStore
from .maxsim import combine, maxsim, partial_rerank
from .candidates import PrefetchConfigError

from .eq4 import PREFETCHER, PREFETCHER_SERIAL, PREFETCHERS  # noqa: F401  (the two prefetchers, named)


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
                 prefetch_chunk: int = 256):
        if rerank_n < 1:
            raise PrefetchConfigError(f"re-rank count must be >= 1, got {rerank_n}")
        if k < rerank_n:
            raise PrefetchConfigError(f"K ({k}) must be >= the re-rank count ({rerank_n})")
        self.index, self.store, self.k, self.nprobe, self.n = index, store, k, nprobe, rerank_n
        self.delta = None
        if prefetch_step is not None:
            if not 0 < prefetch_step <= 1:
                raise PrefetchConfigError(f"prefetch step must be in (0, 1], got {prefetch_step}")
            self.delta = candidates.delta_for(nprobe, prefetch_step)
            candidates.check_delta(self.delta, nprobe)
        self.device, self.w = device, bow_weight
        self.chunk = max(1, int(prefetch_chunk))
        self._early_pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="early-rerank")

    def _score(self, q_toks, owners: list[np.ndarray], ids: np.ndarray, dec) -> list[dict[int, float]]:
        """MaxSim of each query against its own docs among the decoded rows (``ids`` row order)."""
        _, bow, lens = dec
        ids = np.asarray(ids, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        out = []
        for qt, mine in zip(q_toks, owners):
            mine = np.asarray(mine, dtype=np.int64)
            rows = order[np.searchsorted(sorted_ids, mine)]
            s = maxsim(qt, bow[rows], lens[rows], self.device) if len(rows) else np.zeros(0, np.float32)
            out.append(dict(zip(mine.tolist(), s.tolist())))
        return out

    def _early(self, union: np.ndarray, owners: list[np.ndarray], q_toks, final_box: list):
        """The prefetch thread: read the approximate top n chunk by chunk and MaxSim-score each chunk as
        it arrives (early re-ranking). Once the ANN is done the final top n is known (``final_box``):
        chunks not yet read are cut to the records still needed (no reads of candidates that left the
        top n), and only needed records are scored."""
        scores = [dict() for _ in owners]
        n_read = 0

        def issue(s):  # the next chunk's read, cut to what is still needed once that is known
            c = union[s:s + self.chunk]
            fin = final_box[0]
            if fin is not None:
                c = c[np.isin(c, fin[0])]
            return c, (self.store.submit(c) if len(c) else None)

        starts = list(range(0, len(union), self.chunk))
        nxt = issue(starts[0]) if starts else None
        for j in range(len(starts)):
            c, f = nxt
            # double buffering: the following chunk is in flight while this one is scored
            nxt = issue(starts[j + 1]) if j + 1 < len(starts) else None
            if f is None:
                continue
            dec = f.result()
            n_read += len(c)
            fin = final_box[0]
            want = owners if fin is None else fin[1]
            mine = [o[np.isin(o, c)] for o in want]
            for sc, new in zip(scores, self._score(q_toks, mine, c, dec)):
                sc.update(new)
        if self.device == "cuda":
            devices.synchronize()
        return scores, time.perf_counter(), n_read

    def _start_prefetch(self, q_cls, q_toks, Iq, Dq) -> "_Prefetch":
        """Scan the first delta lists, then start the prefetch thread on the approximate top n (their
        union in approximate-rank order: best candidates read first)."""
        Da, Ia = candidates.scan(self.index, q_cls, self.k, Iq[:, :self.delta], Dq[:, :self.delta])
        owners = [a[a >= 0][: self.n] for a in Ia]
        pre_sets = [set(map(int, o)) for o in owners]
        union = _union_in_order(owners)
        final_box: list = [None]  # the final per-query top n, published once the ANN is done
        t_sub = time.perf_counter()
        fut = self._early_pool.submit(self._early, union, owners, q_toks, final_box)
        return _Prefetch(Da, Ia, owners, pre_sets, fut, t_sub, final_box)

    def _search(self, q_cls, Iq, Dq, pf: "_Prefetch | None"):
        """The rest of the ANN: all eta lists without the prefetcher, the remaining ones with it."""
        if pf is None:
            return candidates.scan(self.index, q_cls, self.k, Iq, Dq)
        if self.delta < self.nprobe:
            Db, Ib = candidates.scan(self.index, q_cls, self.k, Iq[:, self.delta:], Dq[:, self.delta:])
            return candidates.merge(pf.Da, pf.Ia, Db, Ib, self.k)
        return pf.Da, pf.Ia

    @staticmethod
    def _misses(finals, pf: "_Prefetch | None") -> list[np.ndarray]:
        """Each query's final top n not prefetched; with the prefetcher, the records it still needs are
        published first, so it narrows its remaining reads."""
        if pf is None:
            return list(finals)
        hit_owners = [f[np.isin(f, np.fromiter(p, np.int64, len(p)))] if p else f[:0]
                      for f, p in zip(finals, pf.pre_sets)]
        need = np.unique(np.concatenate(hit_owners)) if finals else np.zeros(0, np.int64)
        pf.final_box[0] = (need, hit_owners)
        return [f[~np.isin(f, np.fromiter(p, np.int64, len(p)))] if p else f for f, p in zip(finals, pf.pre_sets)]

    def _rank(self, I, D, finals, early_scores, late) -> list[np.ndarray]:
        """Merge the prefetcher's and the critical path's MaxSim scores with the CLS scores."""
        rankings = []
        for b in range(len(finals)):
            bow = {**early_scores[b], **late[b]}
            f = finals[b].tolist()
            valid = I[b] >= 0
            cls_s = dict(zip(I[b][valid].tolist(), D[b][valid].tolist()))
            agg = dict(zip(f, combine(np.array([cls_s[d] for d in f], np.float32),
                                      np.array([bow[d] for d in f], np.float32), self.w).tolist()))
            rankings.append(partial_rerank(I[b][valid], D[b][valid], agg, self.n))
        return rankings

    def run(self, q_cls: np.ndarray, q_toks: list[np.ndarray]) -> BatchResult:
        B = q_cls.shape[0]
        t = {"ann": 0.0, "prefetch_wait": 0.0, "crit_read": 0.0, "rerank": 0.0, "prefetch_io": 0.0}
        t0 = time.perf_counter()
        Dq, Iq = candidates.coarse(self.index, q_cls, self.nprobe)
        pf = self._start_prefetch(q_cls, q_toks, Iq, Dq) if self.delta is not None else None
        D, I = self._search(q_cls, Iq, Dq, pf)
        t1 = time.perf_counter()
        t["ann"] = t1 - t0
        finals = [i[i >= 0][: self.n] for i in I]
        miss_owners = self._misses(finals, pf)
        hits = sum(len(f) - len(m) for f, m in zip(finals, miss_owners))
        needed = sum(len(f) for f in finals)
        miss_union = np.unique(np.concatenate(miss_owners)) if B else np.zeros(0, np.int64)
        # the misses are read on the critical path right away, while the prefetcher finishes its
        # reads (both go through the store's queue, so they share the device's depth)
        dec = self.store.read(miss_union) if len(miss_union) else None
        t2 = time.perf_counter()
        t["crit_read"] = t2 - t1
        late = self._score(q_toks, miss_owners, miss_union, dec) if dec is not None else [dict() for _ in range(B)]
        t3 = time.perf_counter()
        early_scores, n_pre_read = [dict() for _ in range(B)], 0
        if pf is not None:
            early_scores, t_done, n_pre_read = pf.fut.result()
            t["prefetch_wait"] = time.perf_counter() - t3
            t["prefetch_io"] = t_done - pf.t_sub
        rankings = self._rank(I, D, finals, early_scores, late)
        if self.device == "cuda":
            devices.synchronize()
        t4 = time.perf_counter()
        t["rerank"] = t4 - t2 - t["prefetch_wait"]
        t["total"] = t4 - t0
        pre_sets = pf.pre_sets if pf is not None else []
        return BatchResult(rankings, I, t, hits=hits, needed=needed,
                           extra={"n_prefetched": int(sum(len(p) for p in pre_sets)),
                                  "n_crit_reads": int(len(miss_union)), "n_prefetch_reads": int(n_pre_read),
                                  "approx_ids": pf.owners if pf is not None else []})


@dataclass
class _Prefetch:
    """The prefetcher of one batch: the approximate result, its per-query top n, the running thread."""

    Da: np.ndarray
    Ia: np.ndarray
    owners: list[np.ndarray]
    pre_sets: list[set]
    fut: cf.Future
    t_sub: float
    final_box: list


def _union_in_order(owners: list[np.ndarray]) -> np.ndarray:
    """The union of the per-query lists, in order of first appearance."""
    if not owners:
        return np.zeros(0, np.int64)
    cat = np.concatenate(owners)
    _, first = np.unique(cat, return_index=True)
    return cat[np.sort(first)]

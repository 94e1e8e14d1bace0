"""Chameleon section 4.2 (Figures 7, 8): the ``queue`` step. The approximate hierarchical priority queue
(``system.priority_queue``), analytic (binomial model, P(L)^queues >= 0.99) and simulated (the queue
hierarchy run on i.i.d. distances and on the real PQ distances of the dataset's queries in scan order)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from .. import paper_values
from ..params import Params
from ..system import pqscan, priority_queue
from .inputs import load

METHOD = ("Approximate hierarchical priority queue: analytic binomial model (P(L)^queues >= 0.99) and "
          "simulation (vectors dealt round robin to the decoding units, alternately to each unit's two "
          "L1 queues of length L; L2 keeps K) on i.i.d. random distances and on the real PQ distances "
          "of the dataset's queries in scan order; 'identical' = same top-K distances as exact selection. "
          "Source: Figure 7's rows and the analytic_* columns are modelled; Figure 8's rows are emulated (the "
          "queues simulated in software, each keeping the L smallest it is dealt, as the systolic queue does), "
          "their analytic_* columns modelled beside them.")


def all_distances(layout: pqscan.IVFPQLayout, xq: np.ndarray, lists: np.ndarray, max_n: int) -> np.ndarray:
    """PQ distances of every scanned vector, per query, in scan order (first ``max_n`` per query)."""
    import torch
    import torch.nn.functional as F

    out = []
    x = torch.from_numpy(np.ascontiguousarray(xq, dtype=np.float32))
    m, dsub = layout.m, layout.dim // layout.m
    for b in range(len(xq)):
        rows = np.concatenate([np.arange(layout.offsets[l], layout.offsets[l + 1]) for l in lists[b]])
        rows_t = torch.from_numpy(rows)
        lut = (-2 * torch.einsum("md,mkd->mk", x[b].view(m, dsub), layout.centroids)).reshape(-1, 1)
        cd = ((x[b][None] - layout.coarse[torch.from_numpy(lists[b])]) ** 2).sum(1)
        lens = torch.from_numpy(layout.sizes[lists[b]])
        d = (F.embedding_bag(layout.codes_off[rows_t], lut, mode="sum").squeeze(1)
             + layout.norm_term[rows_t] + torch.repeat_interleave(cd, lens))
        out.append(d.numpy()[:max_n])
    n = min(len(d) for d in out)
    return np.stack([d[:n] for d in out])


def _fig7_rows(K: int, queues: int) -> list[dict]:
    """Figure 7: p(k) and P(k) for ``queues`` L1 queues."""
    pmf, cdf = priority_queue.binomial_pmf(K, queues), priority_queue.binomial_cdf(K, queues)
    return [{"figure": "fig7", "num_queues": queues, "k": kk, "p": pmf[kk], "P": cdf[kk], "source": "modelled"}
            for kk in range(K + 1)]


def _fig8_row(units: int, K: int, dist_iid: np.ndarray, dist_real: np.ndarray | None) -> dict:
    """Figure 8: the L1 length for 99% identical top-K at ``units`` decoding units (2 L1 queues each)."""
    analytic_u = priority_queue.analytic_l1_length(units, K)
    m_of = {priority_queue.units_for_m(m): m for m in (4, 8, 16, 32, 64, 128)}
    m = m_of.get(units)
    row = {"figure": "fig8", "units": units, "l1_queues": 2 * units, "m": m, "k": K,
           "analytic_one_queue_per_unit": analytic_u,
           "analytic_two_queues_per_unit": priority_queue.analytic_l1_length(2 * units, K),
           "authors": paper_values.L1_LENGTHS.get(m, np.nan) if m else np.nan, "source": "emulated",
           "n_sim_queries": len(dist_iid),
           "simulated_iid": priority_queue.simulated_l1_length(dist_iid, units, K),
           "identical_iid_at_analytic": priority_queue.identical_fraction(dist_iid, units, analytic_u, K)}
    if dist_real is not None:
        row["simulated_real"] = priority_queue.simulated_l1_length(dist_real, units, K)
        row["identical_real_at_analytic"] = priority_queue.identical_fraction(dist_real, units, analytic_u, K)
        row["identical_real_at_authors"] = (priority_queue.identical_fraction(dist_real, units, int(row["authors"]), K)
                                            if m in paper_values.L1_LENGTHS else np.nan)
    return row


@step("queue", optional=("manifest", "index"), timed=False, keys=("pq_m", "nlist", "nprobe", "k", "queue"))
def queue(ctx: Context) -> Result:
    """Figures 7 and 8; the simulation runs on real PQ distances when ``--input manifest/index`` are given."""
    p: Params = ctx.params
    qp = p.queue
    K = qp.k
    dist_real = None
    if ctx.inputs.get("manifest") and ctx.inputs.get("index"):
        ds, idx = load(ctx)
        layout = pqscan.IVFPQLayout.from_faiss(idx, "cpu")
        ivf = pqscan.ivfpq_of(idx)
        xq = np.ascontiguousarray(ds.queries[: qp.sim_queries], dtype=np.float32)
        _, lists = ivf.quantizer.search(xq, p.nprobe)
        dist_real = all_distances(layout, xq, lists, qp.sim_max_vectors)
    dist_iid = priority_queue.random_distances(qp.sim_queries, qp.sim_max_vectors, ctx.seed)
    rows = _fig7_rows(K, qp.fig7_queues) + [_fig8_row(u, K, dist_iid, dist_real) for u in qp.units]
    return Result(records=pd.DataFrame(rows), method=METHOD, source="modelled",
                  provenance={"real_distances": dist_real is not None,
                              "sim_vectors_per_query": int((dist_real if dist_real is not None else dist_iid).shape[1])})

"""Figure 2 of Trinity (section 3.1): three placements of the vector-search GPUs in a prefill/decode-
disaggregated cluster, as an analytic model (modelled, not measured):

- coupled: one search device in every LLM server (prefill and decode; the paper's one GPU per node,
  :data:`PAPER_INPUTS`), the load split evenly over them, every retrieval over the intra-node link;
- colocated_prefill: one search device in every prefill server; prefill retrievals intra-node, decode
  retrievals over the network;
- independent_pool: a separate pool sized so each device runs near its saturation concurrency (the knee of
  the Figure 1 fit); every retrieval over the network; every LLM GPU serves the LLM.

Inputs are measured: the engine's per-extend time at each concurrency Q (T_ext(Q)) and the mean extends per
request E, so one device serves Q / (E * T_ext(Q)) requests/s at concurrency Q. Assumptions (stated in
every record): a device's load settles at the smallest Q whose throughput meets its arrival rate (Little's
law; queueing beyond that concurrency is ignored); a retrieval's latency is E * T_ext(Q) plus its link
latency; utilisation is the Figure 1 fit u(Q); tensor-parallel collectives, KV transfer and index
sharding are not modelled; the link latencies are stated parameters, not measurements.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from ...core.judging import fidelity
from .roofline import u_model

# What the model takes from the paper (read through fidelity.value at call time, so the sensitivity test can
# scale it): the coupled placement gives one GPU of every LLM server to vector search, the co-located one
# one GPU of every prefill server.
PER_NODE = fidelity.PaperInput(
    "search_gpus_per_llm_node", 1.0, "Figure 2a: 'Each node maintains the same vector data and graph index, and "
    "one GPU is used for vector search' (coupled; Figure 2b co-locates them with the prefill servers alike)",
    "GPU per node")
PAPER_INPUTS = (PER_NODE,)

ASSUMPTIONS = ("device load at the smallest concurrency whose throughput meets its arrival rate (Little's law, "
               "no queueing beyond it); latency = extends x measured T_ext(Q) + stated link latency; "
               "utilisation from the Figure 1 fit; TP collectives, KV transfer and sharding not modelled")


@dataclasses.dataclass(frozen=True)
class PlacementParams:
    prefill_nodes: int = 4
    decode_nodes: int = 4
    gpus_per_node: int = 8
    intra_node_s: float = 10e-6       # round trip over PCIe/NVLink incl. RPC (stated, not measured)
    network_s: float = 50e-6          # round trip over the datacenter network (RDMA-class RPC, stated)
    prefill_share: float = 0.3        # share of retrievals issued by prefill


def _concurrency(lam: float, q: np.ndarray, thr: np.ndarray) -> float | None:
    """Smallest concurrency whose throughput meets ``lam`` (log-linear interpolation); None if overloaded."""
    if lam > thr.max():
        return None
    i = int(np.argmax(thr >= lam))
    if i == 0:
        return float(q[0])
    f = (np.log(lam) - np.log(thr[i - 1])) / (np.log(thr[i]) - np.log(thr[i - 1]))
    return float(np.exp(np.log(q[i - 1]) + f * (np.log(q[i]) - np.log(q[i - 1]))))


def _row(name, lam, devices, llm_gpus, q, t_ext, extends, fit, link_pre, link_dec) -> dict:
    thr = q / (extends * t_ext)
    qq = _concurrency(lam / devices, q, thr)
    svc = float(extends * np.interp(qq, q, t_ext)) if qq is not None else math.nan
    return {"placement": name, "load_rps": lam, "search_devices": devices, "per_device_rps": lam / devices,
            "concurrency": qq if qq is not None else math.nan, "search_latency_s": svc,
            "prefill_latency_s": svc + link_pre, "decode_latency_s": svc + link_dec, "llm_gpus": llm_gpus,
            "search_util": float(u_model(qq, fit["u_max"], fit["x_sat"], fit["alpha"])) if qq is not None else math.nan,
            "overloaded": qq is None, "source": "modelled", "assumptions": ASSUMPTIONS}


def evaluate(q: Sequence[float], t_ext: Sequence[float], extends: float, loads: Sequence[float], fit: dict,
             prm: PlacementParams) -> list[dict]:
    """Rows of the model, one per placement and load (total retrievals/s of the cluster)."""
    q, t_ext = np.asarray(q, float), np.asarray(t_ext, float)
    nodes = prm.prefill_nodes + prm.decode_nodes
    gpus = nodes * prm.gpus_per_node
    per = fidelity.value(PER_NODE)
    thr = q / (extends * t_ext)
    knee = fit.get("x_knee", q.max())
    q_target = float(min(max(knee, q.min()), q.max()))
    thr_target = float(np.interp(q_target, q, thr))
    rows = []
    for lam in loads:
        mix = prm.prefill_share * prm.intra_node_s + (1 - prm.prefill_share) * prm.network_s
        rows.append(_row("coupled", lam, nodes * per, gpus - nodes * per, q, t_ext, extends, fit,
                         prm.intra_node_s, prm.intra_node_s))
        rows.append(_row("colocated_prefill", lam, prm.prefill_nodes * per, gpus - prm.prefill_nodes * per, q,
                         t_ext, extends, fit, prm.intra_node_s, prm.network_s) | {"mean_link_s": mix})
        pool = max(1, math.ceil(lam / thr_target))
        rows.append(_row("independent_pool", lam, pool, gpus, q, t_ext, extends, fit,
                         prm.network_s, prm.network_s))
    return rows

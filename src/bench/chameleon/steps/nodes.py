"""Chameleon section 4.3 (disaggregated memory nodes): the ``nodes`` step. N memory-node processes over
TCP (``system.memory_node``) each scan their shard of every probed list; the coordinator
(``system.coordinator``) broadcasts, gathers and merges. Rows of kind ``latency`` time the batches
(coordinator wall time, slowest node, overhead, single-process scan); rows of kind ``check`` record the
implementation checks: identical results to one process, a malformed message rejected, a node down and a
late node failing the batch with a clear error."""
from __future__ import annotations

import dataclasses
import socket
import time

import numpy as np
import pandas as pd

from ...core.measuring import records
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Nodes, Params
from ..system import coordinator as co
from ..system import pqscan
from ..system import protocol as P
from .inputs import PROTOCOL, load


@dataclasses.dataclass(frozen=True)
class Probed:
    """Queries with their probed lists and coarse distances (the coordinator's input), and K."""

    xq: np.ndarray
    lists: np.ndarray
    coarse: np.ndarray
    k: int

    def rows(self, sl) -> "Probed":
        return Probed(self.xq[sl], self.lists[sl], self.coarse[sl], self.k)

    def on(self, c):
        """``c.search`` (a coordinator) of these queries."""
        return c.search(self.xq, self.lists, self.coarse, self.k)

    def single(self, idx):
        """The single-process faiss scan of the same lists."""
        return pqscan.faiss_scan(idx, self.xq, self.lists, self.coarse, self.k)


def _check(name: str, passed: bool, detail: str, dataset: str, n: int) -> dict:
    return {"kind": "check", "dataset": dataset, "n_nodes": n, "check": name, "passed": bool(passed),
            "detail": detail, "phase": "measured", "source": "measured"}


def _identity(c, idx, q: Probed) -> tuple[bool, str]:
    D1, I1 = q.single(idx)
    D, I, _ = q.on(c)
    same_d = bool(np.array_equal(np.sort(D, 1), np.sort(D1, 1)))
    ov = pqscan.overlap(I, I1)
    return same_d and ov.min() == 1.0, f"distances equal: {same_d}; min id overlap {ov.min():.4f}"


def _timed(c, idx, q: Probed, p: Params, base: dict) -> list[dict]:
    nw = p.warmup_batches
    rows = []
    for bs in p.nodes.batch_sizes:
        for i in range(nw + p.nodes.n_batches):
            sl = (np.arange(bs) + i * bs) % len(q.xq)
            _, _, info = q.rows(sl).on(c)
            t0 = time.perf_counter()
            q.rows(sl).single(idx)   # the rows are taken inside the timer (the copy is timed)
            single = time.perf_counter() - t0
            rows.append({**base, "kind": "latency", "batch_size": bs, "run": i,
                         "phase": "warmup" if i < nw else "measured", "wall_ms": info["wall_s"] * 1e3,
                         "node_max_ms": max(info["node_s"]) * 1e3, "overhead_ms": info["overhead_s"] * 1e3,
                         "single_process_ms": single * 1e3, "source": "measured"})
    return rows


def _malformed(c, addr, timeout_s) -> tuple[bool, str]:
    """A malformed message is rejected with an error frame and the node stays up (a ping after it works)."""
    s = socket.create_connection(addr, timeout=timeout_s)
    s.sendall(b"NOT-A-FRAME-AT-ALL!!")
    mt, msg = P.recv_frame(s)
    s.close()
    c.close()
    c.ping()
    return mt == P.ERROR, msg.decode(errors="replace")


def _node_down(q: Probed, timeout_s) -> tuple[bool, str]:
    """A local port nobody listens on: the batch fails with a clear error naming the node."""
    with socket.socket() as s_:
        s_.bind(("127.0.0.1", 0))
        dead = [("127.0.0.1", s_.getsockname()[1])]
    t0 = time.perf_counter()
    try:
        q.rows(slice(0, 1)).on(co.Coordinator(dead, timeout_s))
        err = "no error"
    except P.NodeError as exc:
        err = str(exc)
    el = time.perf_counter() - t0
    return "memory node" in err and el <= timeout_s + 1, f"{err} (after {el:.3f} s)"


def _late_node(idx, q: Probed, npar: Nodes) -> tuple[bool, str]:
    """One slow node: the coordinator fails the batch within its timeout."""
    slow = co.spawn_local_nodes(1, "127.0.0.1", 1, delay_s=npar.late_delay_s)
    try:
        c2 = co.Coordinator(slow.addresses, npar.late_timeout_s)
        c2.load(co.shard_index(idx, 1))
        t0 = time.perf_counter()
        try:
            q.rows(slice(0, 1)).on(c2)
            err = "no error"
        except P.NodeError as exc:
            err = str(exc)
        el = time.perf_counter() - t0
        c2.close()
    finally:
        slow.stop()
    return "did not answer" in err and el < npar.late_timeout_s + 1, f"{err} (after {el:.3f} s)"


def _with_nodes(idx, q: Probed, p: Params, dataset: str, n: int) -> list[dict]:
    """Identity, timed batches and the malformed-message check on the profile's nodes (or N local ones)."""
    npar, local = p.nodes, None
    if npar.addresses:
        addrs = [co.parse_address(a) for a in npar.addresses]
    else:
        local = co.spawn_local_nodes(n, npar.host, npar.node_threads)
        addrs = local.addresses
    try:
        c = co.Coordinator(addrs, npar.timeout_s)
        c.load(co.shard_index(idx, n))
        rows = [_check("identical to single-process search", *_identity(c, idx, q), dataset, n)]
        rows += _timed(c, idx, q, p, {"dataset": dataset, "n_nodes": n})
        rows.append(_check("malformed message rejected, node stays up", *_malformed(c, addrs[0], npar.timeout_s),
                           dataset, n))
        c.close()
    finally:
        if local:
            local.stop()
    return rows


@step("nodes", needs=("manifest", "index"),
      keys=("pq_m", "nlist", "nprobe", "k", "batch_sizes", "warmup_batches", "n_batches", "nodes"))
def nodes(ctx: Context) -> Result:
    p: Params = ctx.params
    ds, idx = load(ctx)
    dataset = ctx.dataset or ds.name
    npar = p.nodes
    ivf = pqscan.ivfpq_of(idx)
    ivf.nprobe = p.nprobe
    xq = np.ascontiguousarray(ds.queries, dtype=np.float32)
    Dq, Iq = ivf.quantizer.search(xq, p.nprobe)
    pqscan.check_k(pqscan.list_sizes(idx)[Iq].sum(1), p.k)
    q = Probed(xq, Iq, Dq, p.k)
    n = len(npar.addresses) or npar.n_nodes
    rows = _with_nodes(idx, q, p, dataset, n)
    rows.append(_check("node down -> clear error naming the node", *_node_down(q, npar.timeout_s), dataset, n))
    rows.append(_check("late node -> error within the timeout", *_late_node(idx, q, npar), dataset, n))
    df = pd.DataFrame(rows)
    lat = df[(df.kind == "latency") & (df.phase == "measured")]
    summary = records.summarize_runs(lat, ["dataset", "n_nodes", "batch_size"], "overhead_ms")
    return Result(
        records=df, summary=summary, dataset_id=f"{dataset} ({ds.id})", dataset_checksum=ds.checksum,
        method=f"{n} memory-node processes over TCP (faiss scan of each node's shard of every list, "
               f"{npar.node_threads} thread each); the coordinator broadcasts (queries, list ids, coarse "
               f"distances), gathers and merges; per batch: coordinator wall time, node scan time, overhead = "
               f"wall - slowest node. {PROTOCOL}. Check rows (kind=check): identical results to one process, "
               f"a node down, a node answering after the timeout, a malformed message.")

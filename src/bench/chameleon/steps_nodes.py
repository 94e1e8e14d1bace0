"""Chameleon section 4.3 (disaggregated memory nodes): the ``nodes`` step. N memory-node processes over
TCP each scan their shard of every probed list; the coordinator broadcasts, gathers and merges. Rows of
kind ``latency`` time the batches (coordinator wall time, slowest node, overhead, single-process scan);
rows of kind ``check`` record the implementation checks: identical results to one process, a malformed
message rejected, a node down and a late node failing the batch with a clear error."""
from __future__ import annotations

import socket
import time

import numpy as np
import pandas as pd

from ..core import records
from ..core.step import Context, Result, reads
from . import coordinator as co
from . import pqscan
from . import protocol as P
from .steps_search import PROTOCOL, load


def _check(name: str, passed: bool, detail: str, dataset: str, n: int) -> dict:
    return {"kind": "check", "dataset": dataset, "n_nodes": n, "check": name, "passed": bool(passed),
            "detail": detail, "phase": "measured", "source": "measured"}


def _identity(c, idx, xq, Iq, Dq, k) -> tuple[bool, str]:
    D1, I1 = pqscan.faiss_scan(idx, xq, Iq, Dq, k)
    D, I, _ = c.search(xq, Iq, Dq, k)
    same_d = bool(np.array_equal(np.sort(D, 1), np.sort(D1, 1)))
    ov = pqscan.overlap(I, I1)
    return same_d and ov.min() == 1.0, f"distances equal: {same_d}; min id overlap {ov.min():.4f}"


def _timed(c, idx, xq, Iq, Dq, k, params, base) -> list[dict]:
    npar, nw = params["nodes"], params["warmup_batches"]
    rows = []
    for bs in npar["batch_sizes"]:
        for i in range(nw + npar["n_batches"]):
            sl = (np.arange(bs) + i * bs) % len(xq)
            _, _, info = c.search(xq[sl], Iq[sl], Dq[sl], k)
            t0 = time.perf_counter()
            pqscan.faiss_scan(idx, xq[sl], Iq[sl], Dq[sl], k)
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


def _node_down(xq, Iq, Dq, k, timeout_s) -> tuple[bool, str]:
    """A local port nobody listens on: the batch fails with a clear error naming the node."""
    with socket.socket() as s_:
        s_.bind(("127.0.0.1", 0))
        dead = [("127.0.0.1", s_.getsockname()[1])]
    t0 = time.perf_counter()
    try:
        co.Coordinator(dead, timeout_s).search(xq[:1], Iq[:1], Dq[:1], k)
        err = "no error"
    except P.NodeError as exc:
        err = str(exc)
    el = time.perf_counter() - t0
    return "memory node" in err and el <= timeout_s + 1, f"{err} (after {el:.3f} s)"


def _late_node(idx, xq, Iq, Dq, k, npar) -> tuple[bool, str]:
    """One slow node: the coordinator fails the batch within its timeout."""
    slow = co.spawn_local_nodes(1, "127.0.0.1", 1, delay_s=npar["late_delay_s"])
    try:
        c2 = co.Coordinator(slow.addresses, npar["late_timeout_s"])
        c2.load(co.shard_index(idx, 1))
        t0 = time.perf_counter()
        try:
            c2.search(xq[:1], Iq[:1], Dq[:1], k)
            err = "no error"
        except P.NodeError as exc:
            err = str(exc)
        el = time.perf_counter() - t0
        c2.close()
    finally:
        slow.stop()
    return "did not answer" in err and el < npar["late_timeout_s"] + 1, f"{err} (after {el:.3f} s)"


@reads("manifest", "index")
def nodes(ctx: Context) -> Result:
    params = ctx.params
    ds, idx = load(ctx)
    dataset = ctx.dataset or ds.name
    npar = params["nodes"]
    k, nprobe = params["k"], params["nprobe"]
    ivf = pqscan.ivfpq_of(idx)
    ivf.nprobe = nprobe
    xq = np.ascontiguousarray(ds.queries, dtype=np.float32)
    Dq, Iq = ivf.quantizer.search(xq, nprobe)
    pqscan.check_k(pqscan.list_sizes(idx)[Iq].sum(1), k)
    n = len(npar["addresses"]) or npar["n_nodes"]
    base = {"dataset": dataset, "n_nodes": n}
    rows, local = [], None
    if npar["addresses"]:
        addrs = [co.parse_address(a) for a in npar["addresses"]]
    else:
        local = co.spawn_local_nodes(n, npar["host"], npar["node_threads"])
        addrs = local.addresses
    try:
        c = co.Coordinator(addrs, npar["timeout_s"])
        c.load(co.shard_index(idx, n))
        rows.append(_check("identical to single-process search", *_identity(c, idx, xq, Iq, Dq, k), dataset, n))
        rows += _timed(c, idx, xq, Iq, Dq, k, params, base)
        rows.append(_check("malformed message rejected, node stays up", *_malformed(c, addrs[0], npar["timeout_s"]),
                           dataset, n))
        c.close()
    finally:
        if local:
            local.stop()
    rows.append(_check("node down -> clear error naming the node",
                       *_node_down(xq, Iq, Dq, k, npar["timeout_s"]), dataset, n))
    rows.append(_check("late node -> error within the timeout", *_late_node(idx, xq, Iq, Dq, k, npar), dataset, n))
    df = pd.DataFrame(rows)
    lat = df[(df.kind == "latency") & (df.phase == "measured")]
    summary = records.summarize_runs(lat, ["dataset", "n_nodes", "batch_size"], "overhead_ms")
    return Result(
        records=df, summary=summary, dataset_id=f"{dataset} ({ds.id})", dataset_checksum=ds.checksum,
        method=f"{n} memory-node processes over TCP (faiss scan of each node's shard of every list, "
               f"{npar['node_threads']} thread each); the coordinator broadcasts (queries, list ids, coarse "
               f"distances), gathers and merges; per batch: coordinator wall time, node scan time, overhead = "
               f"wall - slowest node. {PROTOCOL}. Check rows (kind=check): identical results to one process, "
               f"a node down, a node answering after the timeout, a malformed message.")

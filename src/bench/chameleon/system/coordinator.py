"""The coordinator of the disaggregated memory nodes (paper section 3, steps 4-8; section 4.3).

It shards an IVF-PQ index (each node gets 1/N of every inverted list), starts N local node processes
or connects to the ``host:port`` nodes a profile lists, broadcasts each batch's (queries, probed
list ids, coarse distances) to all nodes, gathers their per-shard top-K and merges them. Every
receive has a deadline: a node that is down, closes the connection, answers with an error or answers
late fails that batch with a :class:`~bench.chameleon.protocol.NodeError` naming the node; nothing
hangs.
"""
from __future__ import annotations

import dataclasses
import os
import select
import socket
import subprocess
import sys
import time

import numpy as np

from ...core.base.errors import ConfigError
from . import protocol as P


def parse_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"memory node address {text!r} is not host:port")
    return host, int(port)


def shard_index(index, n_nodes: int) -> list:
    """Split an IVF-PQ index into ``n_nodes`` shards holding 1/N of every list (round robin)."""
    import faiss

    from .pqscan import ivfpq_of, list_contents

    if n_nodes < 1:
        raise ConfigError(f"n_nodes must be >= 1, got {n_nodes}")
    ivf = ivfpq_of(index)
    codes, ids = list_contents(index)
    shards = []
    for node in range(n_nodes):
        sh = faiss.clone_index(ivf)
        sh.reset()
        for lst in range(ivf.nlist):
            c = np.ascontiguousarray(codes[lst][node::n_nodes])
            i = np.ascontiguousarray(ids[lst][node::n_nodes])
            if len(i):
                sh.invlists.add_entries(lst, len(i), faiss.swig_ptr(i), faiss.swig_ptr(c.reshape(-1)))
                sh.ntotal += len(i)
        shards.append(sh)
    return shards


def merge_topk(Ds: list[np.ndarray], Is: list[np.ndarray], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge per-node top-K lists: ascending distance, ties by id; empty slots (id -1) last."""
    D = np.concatenate(Ds, axis=1).astype(np.float32)
    I = np.concatenate(Is, axis=1)
    D = np.where(I < 0, np.inf, D)
    order = np.lexsort((I, D), axis=1)[:, :k] if D.ndim == 2 else None
    rows = np.arange(D.shape[0])[:, None]
    return D[rows, order], I[rows, order]


@dataclasses.dataclass
class LocalNodes:
    """Memory-node processes this coordinator started (stopped by their pids only)."""

    procs: list
    addresses: list

    def stop(self, timeout: float = 5.0) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout)


def spawn_local_nodes(n: int, host: str = "127.0.0.1", threads: int = 1, delay_s: float = 0.0,
                      start_timeout_s: float = 60.0) -> LocalNodes:
    """Start ``n`` node processes on ``host`` with OS-chosen ports; wait for each to print READY."""
    procs, addrs = [], []
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    try:
        for _ in range(n):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "bench.chameleon.system.memory_node", "--host", host, "--port", "0",
                 "--threads", str(threads), "--delay-s", str(delay_s)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env))
        deadline = time.monotonic() + start_timeout_s
        for i, p in enumerate(procs):
            r, _, _ = select.select([p.stdout], [], [], max(0.0, deadline - time.monotonic()))
            line = p.stdout.readline() if r else ""
            if not line.startswith("READY "):
                raise P.NodeError(f"memory node {i} did not start within {start_timeout_s:.0f} s")
            addrs.append((host, int(line.split()[1])))
    except BaseException:
        LocalNodes(procs, addrs).stop()
        raise
    return LocalNodes(procs, addrs)


class Coordinator:
    """Broadcast, gather, merge. ``timeout_s`` bounds every batch."""

    def __init__(self, addresses: list[tuple[str, int]], timeout_s: float = 10.0):
        if not addresses:
            raise ConfigError("the coordinator needs at least one memory node")
        if timeout_s <= 0:
            raise ConfigError(f"timeout_s must be positive, got {timeout_s}")
        self.addresses = list(addresses)
        self.timeout_s = timeout_s
        self.socks: list[socket.socket | None] = [None] * len(addresses)

    def _name(self, i: int) -> str:
        h, p = self.addresses[i]
        return f"memory node {i} at {h}:{p}"

    def _sock(self, i: int) -> socket.socket:
        if self.socks[i] is None:
            try:
                s = socket.create_connection(self.addresses[i], timeout=self.timeout_s)
            except OSError as exc:
                raise P.NodeError(f"{self._name(i)} is down: {exc}") from None
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.socks[i] = s
        return self.socks[i]

    def _drop(self, i: int) -> None:
        s, self.socks[i] = self.socks[i], None
        if s is not None:
            try:
                s.close()
            except OSError:
                pass

    def _request(self, payloads: dict[int, bytes], msg: int, timeout_s: float) -> dict[int, tuple[int, bytes]]:
        """Send one frame to each node, then gather the answers before a common deadline."""
        deadline = time.monotonic() + timeout_s
        for i, pl in payloads.items():
            try:
                s = self._sock(i)
                s.settimeout(max(1e-3, deadline - time.monotonic()))
                s.sendall(P.frame(msg, pl))
            except P.NodeError:
                raise
            except OSError as exc:
                self._drop(i)
                raise P.NodeError(f"{self._name(i)} is down: {exc}") from None
        answers = {}
        for i in payloads:
            s = self.socks[i]
            try:
                s.settimeout(max(1e-3, deadline - time.monotonic()))
                answers[i] = P.recv_frame(s)
            except socket.timeout:
                self._drop(i)
                self._drop_all()
                raise P.NodeError(f"{self._name(i)} did not answer within {timeout_s:g} s") from None
            except (OSError, ConnectionError, P.ProtocolError) as exc:
                self._drop(i)
                self._drop_all()
                raise P.NodeError(f"{self._name(i)} failed: {exc}") from None
            if answers[i][0] == P.ERROR:
                raise P.NodeError(f"{self._name(i)} answered an error: {answers[i][1].decode(errors='replace')}")
        return answers

    def _drop_all(self) -> None:
        # After a failed batch the other streams may still carry its answers: reconnect next time.
        for j in range(len(self.socks)):
            self._drop(j)

    def ping(self) -> None:
        self._request({i: b"" for i in range(len(self.addresses))}, P.PING, self.timeout_s)

    def load(self, shards: list, timeout_s: float = 120.0) -> None:
        import faiss

        if len(shards) != len(self.addresses):
            raise ConfigError(f"{len(shards)} shards for {len(self.addresses)} memory nodes")
        payloads = {i: faiss.serialize_index(sh).tobytes() for i, sh in enumerate(shards)}
        self._request(payloads, P.LOAD, timeout_s)

    def search(self, xq: np.ndarray, lists: np.ndarray, coarse_dist: np.ndarray, k: int):
        """One batch: returns (D, I, info) with per-node seconds and the coordinator's overhead."""
        t0 = time.perf_counter()
        payload = P.pack_search(xq, lists, coarse_dist, k)
        answers = self._request({i: payload for i in range(len(self.addresses))}, P.SEARCH, self.timeout_s)
        Ds, Is, secs = [], [], []
        for i in range(len(self.addresses)):
            D, I, s = P.unpack_result(answers[i][1])
            Ds.append(D)
            Is.append(I)
            secs.append(s)
        D, I = merge_topk(Ds, Is, k)
        wall = time.perf_counter() - t0
        return D, I, {"wall_s": wall, "node_s": secs, "overhead_s": wall - max(secs)}

    def shutdown_nodes(self) -> None:
        try:
            self._request({i: b"" for i in range(len(self.addresses))}, P.SHUTDOWN, self.timeout_s)
        except P.NodeError:
            pass
        self.close()

    def close(self) -> None:
        self._drop_all()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

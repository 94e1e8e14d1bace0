"""One disaggregated memory node (ChamVS.mem, paper sections 3 and 4.3), as a real process on TCP.

The node holds a shard of every inverted list (1/N of each list's vectors, section 4.3's first
partitioning) and answers SEARCH requests (queries, probed list ids, coarse distances) with its local
top-K, scanning its share of the probed lists with faiss ``search_preassigned`` -- the CPU stands in
for the near-memory accelerator; the accelerator's own speed is in ``fpga_model``.

Run: ``python -m bench.chameleon.system.memory_node --host 127.0.0.1 --port 0`` prints ``READY <port>``. A
malformed message is answered with ERROR and that connection closed; the node stays up.
``--delay-s`` delays every SEARCH answer (to test the coordinator's timeout).
"""
from __future__ import annotations

import argparse
import socket
import socketserver
import sys
import threading
import time

import numpy as np

from . import protocol as P


class NodeState:
    def __init__(self, delay_s: float = 0.0):
        self.index = None
        self.lock = threading.Lock()
        self.delay_s = delay_s

    def load(self, payload: bytes) -> None:
        import faiss

        idx = faiss.deserialize_index(np.frombuffer(payload, dtype=np.uint8).copy())
        ivf = faiss.downcast_index(faiss.extract_index_ivf(idx))
        with self.lock:
            self._owner = idx  # keeps the deserialized index alive; ``ivf`` points into it
            self.index = ivf

    def search(self, payload: bytes) -> bytes:
        xq, lists, cd, k = P.unpack_search(payload)
        with self.lock:
            ivf = self.index
            return self._search(ivf, xq, lists, cd, k)

    def _search(self, ivf, xq, lists, cd, k) -> bytes:
        if ivf is None:
            raise P.ProtocolError("SEARCH before LOAD: this node holds no shard")
        if xq.shape[1] != ivf.d:
            raise P.ProtocolError(f"queries have d={xq.shape[1]}, the shard has d={ivf.d}")
        if lists.min() < 0 or lists.max() >= ivf.nlist:
            raise P.ProtocolError(f"list ids outside 0..{ivf.nlist - 1}")
        if self.delay_s:
            time.sleep(self.delay_s)
        t0 = time.perf_counter()
        ivf.nprobe = lists.shape[1]  # faiss reads the width of the assignment from nprobe
        D, I = ivf.search_preassigned(np.ascontiguousarray(xq, np.float32), k,
                                      np.ascontiguousarray(lists), np.ascontiguousarray(cd, np.float32))
        return P.pack_result(D, I, time.perf_counter() - t0)


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        state: NodeState = self.server.state
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            try:
                msg, payload = P.recv_frame(sock)
            except (ConnectionError, OSError):
                return
            except P.ProtocolError as exc:
                self._error(sock, f"malformed message: {exc}")
                return  # the stream cannot be resynchronised: close this connection only
            except Exception as exc:  # noqa: BLE001 - e.g. a truncated header
                self._error(sock, f"malformed message: {exc}")
                return
            try:
                if msg == P.PING:
                    sock.sendall(P.frame(P.PONG))
                elif msg == P.LOAD:
                    state.load(payload)
                    sock.sendall(P.frame(P.OK))
                elif msg == P.SEARCH:
                    sock.sendall(P.frame(P.RESULT, state.search(payload)))
                elif msg == P.SHUTDOWN:
                    sock.sendall(P.frame(P.OK))
                    threading.Thread(target=self.server.shutdown, daemon=True).start()
                    return
                else:
                    self._error(sock, f"malformed message: unknown type {msg}")
                    return
            except P.ProtocolError as exc:
                self._error(sock, f"malformed message: {exc}")
                return
            except Exception as exc:  # noqa: BLE001 - report, keep the node up
                self._error(sock, f"{type(exc).__name__}: {exc}")
                return

    @staticmethod
    def _error(sock, text: str) -> None:
        try:
            sock.sendall(P.frame(P.ERROR, text.encode()))
        except OSError:
            pass


class NodeServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int, delay_s: float = 0.0):
        super().__init__((host, port), _Handler)
        self.state = NodeState(delay_s)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--delay-s", type=float, default=0.0)
    a = ap.parse_args(argv)
    import faiss

    faiss.omp_set_num_threads(a.threads)
    with NodeServer(a.host, a.port, a.delay_s) as srv:
        print(f"READY {srv.server_address[1]}", flush=True)
        srv.serve_forever(poll_interval=0.2)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

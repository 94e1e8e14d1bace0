"""Wire format between the coordinator and the disaggregated memory nodes (paper section 3, steps 4-7).

A frame is a 12-byte header ``!4sBBHI`` (magic ``CHMV``, version, message type, reserved, payload
length) then the payload. Arrays travel as raw little-endian bytes behind a small fixed header:

- LOAD: a serialized faiss IVF-PQ shard (the node's share of every inverted list);
- SEARCH: ``!IIII`` (nq, d, nprobe, k), queries float32 (nq, d), list ids int64 (nq, nprobe), coarse
  distances float32 (nq, nprobe) -- what the coordinator broadcasts;
- RESULT: ``!IId`` (nq, k, node seconds), distances float32 (nq, k), ids int64 (nq, k);
- ERROR: a UTF-8 message; PING / PONG; SHUTDOWN.

Anything else -- a wrong magic, version or length, a payload whose size does not match its header --
is malformed: the node answers ERROR, closes that connection and keeps serving.
"""
from __future__ import annotations

import socket
import struct

import numpy as np

from ...core.base.errors import BenchError

MAGIC, VERSION = b"CHMV", 1
HEADER = struct.Struct("!4sBBHI")
MAX_PAYLOAD = 1 << 31
LOAD, SEARCH, RESULT, ERROR, PING, PONG, SHUTDOWN, OK = range(1, 9)
SEARCH_HDR = struct.Struct("!IIII")
RESULT_HDR = struct.Struct("!IId")


class ProtocolError(BenchError):
    """A malformed frame."""


class NodeError(BenchError):
    """A memory node is down, answered late or answered with an error."""


def frame(msg_type: int, payload: bytes = b"") -> bytes:
    return HEADER.pack(MAGIC, VERSION, msg_type, 0, len(payload)) + payload


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return bytes(buf)


def recv_frame(sock: socket.socket) -> tuple[int, bytes]:
    magic, version, msg_type, _, length = HEADER.unpack(recv_exact(sock, HEADER.size))
    if magic != MAGIC:
        raise ProtocolError(f"bad magic {magic!r}")
    if version != VERSION:
        raise ProtocolError(f"unsupported protocol version {version}")
    if length > MAX_PAYLOAD:
        raise ProtocolError(f"payload of {length} bytes is too large")
    return msg_type, recv_exact(sock, length)


def pack_search(xq: np.ndarray, lists: np.ndarray, coarse_dist: np.ndarray, k: int) -> bytes:
    xq = np.ascontiguousarray(xq, dtype="<f4")
    lists = np.ascontiguousarray(lists, dtype="<i8")
    cd = np.ascontiguousarray(coarse_dist, dtype="<f4")
    nq, d = xq.shape
    return SEARCH_HDR.pack(nq, d, lists.shape[1], k) + xq.tobytes() + lists.tobytes() + cd.tobytes()


def unpack_search(payload: bytes):
    if len(payload) < SEARCH_HDR.size:
        raise ProtocolError("SEARCH payload shorter than its header")
    nq, d, nprobe, k = SEARCH_HDR.unpack_from(payload)
    if nq == 0 or d == 0 or nprobe == 0 or k == 0:
        raise ProtocolError("SEARCH with a zero dimension")
    sizes = (nq * d * 4, nq * nprobe * 8, nq * nprobe * 4)
    if len(payload) != SEARCH_HDR.size + sum(sizes):
        raise ProtocolError(f"SEARCH payload of {len(payload)} bytes does not match nq={nq} d={d} nprobe={nprobe}")
    o = SEARCH_HDR.size
    xq = np.frombuffer(payload, "<f4", nq * d, o).reshape(nq, d)
    o += sizes[0]
    lists = np.frombuffer(payload, "<i8", nq * nprobe, o).reshape(nq, nprobe)
    o += sizes[1]
    cd = np.frombuffer(payload, "<f4", nq * nprobe, o).reshape(nq, nprobe)
    return xq, lists, cd, k


def pack_result(D: np.ndarray, I: np.ndarray, seconds: float) -> bytes:
    D = np.ascontiguousarray(D, dtype="<f4")
    I = np.ascontiguousarray(I, dtype="<i8")
    return RESULT_HDR.pack(D.shape[0], D.shape[1], seconds) + D.tobytes() + I.tobytes()


def unpack_result(payload: bytes):
    nq, k, seconds = RESULT_HDR.unpack_from(payload)
    o = RESULT_HDR.size
    if len(payload) != o + nq * k * 12:
        raise ProtocolError("RESULT payload size does not match its header")
    D = np.frombuffer(payload, "<f4", nq * k, o).reshape(nq, k)
    I = np.frombuffer(payload, "<i8", nq * k, o + nq * k * 4).reshape(nq, k)
    return D, I, seconds

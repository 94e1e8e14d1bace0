"""Memory nodes over TCP on 127.0.0.1 only; bounded: two node processes for the module, short timeouts."""
import socket
import time

import numpy as np
import pytest

from bench.chameleon.system import coordinator as co, pqscan, protocol as P
from bench.core.base.errors import ConfigError

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def cluster(small_index):
    index, _, xq = small_index
    nodes = co.spawn_local_nodes(2, "127.0.0.1", 1, start_timeout_s=60)
    c = co.Coordinator(nodes.addresses, timeout_s=10)
    try:
        c.load(co.shard_index(index, 2))
        yield index, xq, c, nodes
    finally:
        c.close()
        nodes.stop()


def test_results_identical_to_single_process(cluster):
    index, xq, c, _ = cluster
    ivf = pqscan.ivfpq_of(index)
    Dq, Iq = ivf.quantizer.search(xq, 4)
    D, I, info = c.search(xq, Iq, Dq, 30)
    D1, I1 = pqscan.faiss_scan(index, xq, Iq, Dq, 30)
    np.testing.assert_array_equal(np.sort(D, 1), np.sort(D1, 1))
    assert pqscan.overlap(I, I1).min() == 1.0
    assert info["overhead_s"] >= 0 and len(info["node_s"]) == 2


def test_malformed_message_rejected_node_stays_up(cluster):
    index, xq, c, nodes = cluster
    s = socket.create_connection(nodes.addresses[0], timeout=5)
    s.sendall(b"this is not a frame at all")
    msg, text = P.recv_frame(s)
    s.close()
    assert msg == P.ERROR and b"malformed" in text
    # a well-framed SEARCH whose payload lies about its sizes
    s = socket.create_connection(nodes.addresses[1], timeout=5)
    s.sendall(P.frame(P.SEARCH, P.SEARCH_HDR.pack(5, 32, 4, 10) + b"\0" * 12))
    msg, text = P.recv_frame(s)
    s.close()
    assert msg == P.ERROR
    c.ping()  # both nodes still serve


def test_node_down_fails_fast_naming_the_node():
    with socket.socket() as s:  # a port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = co.Coordinator([("127.0.0.1", port)], timeout_s=2)
    t0 = time.perf_counter()
    with pytest.raises(P.NodeError, match=f"memory node 0 at 127.0.0.1:{port} is down"):
        c.search(np.zeros((1, 32), np.float32), np.zeros((1, 1), np.int64), np.zeros((1, 1), np.float32), 1)
    assert time.perf_counter() - t0 < 2.5


def test_late_node_times_out(small_index):
    index, xq, _ = small_index
    slow = co.spawn_local_nodes(1, "127.0.0.1", 1, delay_s=3.0)
    try:
        c = co.Coordinator(slow.addresses, timeout_s=0.5)
        c.load(co.shard_index(index, 1))
        ivf = pqscan.ivfpq_of(index)
        Dq, Iq = ivf.quantizer.search(xq[:1], 2)
        t0 = time.perf_counter()
        with pytest.raises(P.NodeError, match="did not answer within 0.5 s"):
            c.search(xq[:1], Iq, Dq, 5)
        assert time.perf_counter() - t0 < 1.5
        c.close()
    finally:
        slow.stop()


def test_protocol_roundtrip_and_bad_addresses():
    xq = np.random.default_rng(0).random((3, 8), dtype=np.float32)
    lists = np.arange(6).reshape(3, 2)
    x2, l2, c2, k = P.unpack_search(P.pack_search(xq, lists, np.ones((3, 2)), 7))
    np.testing.assert_array_equal(x2, xq)
    np.testing.assert_array_equal(l2, lists)
    assert k == 7
    D, I, s = P.unpack_result(P.pack_result(np.ones((3, 7)), np.zeros((3, 7)), 0.5))
    assert D.shape == (3, 7) and s == 0.5
    with pytest.raises(P.ProtocolError):
        P.unpack_search(b"\0" * 5)
    with pytest.raises(ConfigError):
        co.parse_address("localhost")
    assert co.parse_address("10.0.0.1:9000") == ("10.0.0.1", 9000)


def test_merge_topk_drops_empty_slots():
    D, I = co.merge_topk([np.array([[1.0, 3.0]]), np.array([[2.0, 0.0]])], [np.array([[10, 11]]), np.array([[20, -1]])], 3)
    assert I.tolist() == [[10, 20, 11]]

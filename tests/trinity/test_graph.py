import numpy as np
import pytest

from bench.core.errors import BenchError, ConfigError, DataFormatError
from bench.trinity import graph


def test_graph_is_fixed_degree_and_valid(small):
    g = small["graph"]
    n = small["base"].shape[0]
    assert g.shape == (n, 16) and g.dtype == np.int32
    assert g.min() >= 0 and g.max() < n
    assert not (g == np.arange(n)[:, None]).any(), "no self loops"
    srt = np.sort(g, axis=1)
    assert not (srt[:, 1:] == srt[:, :-1]).any(), "distinct neighbours per row"
    assert np.bincount(g.ravel(), minlength=n).min() > 0, "reverse edges give every node an in-edge"


def test_pruning_keeps_edges_with_fewest_detours():
    # node 0 lists 1, 2, 3; node 1 lists 2 first, so 0->2 (rank 1) has a detour 0->1->2 with
    # max(rank 0, rank 0) < 1; 0->3 has none (3 is last in 1's and 2's lists): pruning to 2 keeps 1 and 3
    knn = np.array([[1, 2, 3], [2, 0, 3], [0, 1, 3], [0, 1, 2]])
    counts = graph.detour_counts(knn, chunk=16)
    assert counts[0].tolist() == [0, 1, 0]
    assert graph.prune(knn, 2, chunk=16)[0].tolist() == [1, 3]


def test_save_load_roundtrip_and_mismatch(small, tmp_path):
    p = graph.save_graph(tmp_path / "g.ibin", small["graph"], small["base"], {"degree": 16})
    g2, side = graph.load_graph(p, small["base"])
    assert np.array_equal(g2, small["graph"]) and side["n"] == small["base"].shape[0]
    other = small["base"].copy()
    other[0, 0] ^= 1
    with pytest.raises(DataFormatError, match="does not match its vectors"):
        graph.load_graph(p, other)
    with pytest.raises(DataFormatError, match="does not match its vectors"):
        graph.load_graph(p, small["base"][:-1])


def test_bad_graph_parameters():
    x = np.zeros((10, 4), np.float32)
    with pytest.raises(ConfigError, match="D=10 must be < N=10"):
        graph.build_graph(x, graph.GraphParams(degree=10, knn_degree=12))
    with pytest.raises(ConfigError, match="knn_degree"):
        graph.build_graph(np.zeros((50, 4), np.float32), graph.GraphParams(degree=8, knn_degree=4))
    assert issubclass(ConfigError, BenchError)

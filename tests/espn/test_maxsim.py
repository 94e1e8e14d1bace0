import numpy as np
import pytest
import torch

from bench.core.machine import devices
from bench.espn.system import maxsim
from bench.espn.system.backends import BackendUnavailable


def _ref(q, bow, lens):
    out = []
    for d, n in zip(bow, lens):
        out.append(0.0 if n == 0 else float((d[:n].astype(np.float32) @ q.T).max(0).sum()))
    return np.array(out, np.float32)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((6, 32)).astype(np.float32)
    bow = rng.standard_normal((50, 20, 32)).astype(np.float16)
    lens = rng.integers(0, 21, 50)
    for i, n in enumerate(lens):
        bow[i, n:] = 0
    return q, bow, lens


def test_maxsim_cpu_matches_reference():
    q, bow, lens = _data()
    np.testing.assert_allclose(maxsim.maxsim(q, bow, lens, "cpu"), _ref(q, bow, lens), rtol=1e-5, atol=1e-4)


def _padded(q_tok, bow, lengths):
    """The straightforward MaxSim over the padded cube (padding masked with -inf), as a reference."""
    import torch

    q = torch.as_tensor(np.asarray(q_tok, dtype=np.float32))
    d = torch.as_tensor(np.ascontiguousarray(bow)).float()
    sim = torch.matmul(d, q.T)
    pad = torch.arange(d.shape[1])[None, :] >= torch.as_tensor(np.asarray(lengths, dtype=np.int64))[:, None]
    best = sim.masked_fill(pad[:, :, None], float("-inf")).max(dim=1).values
    return torch.where(torch.isinf(best), torch.zeros_like(best), best).sum(dim=1).numpy()


def test_packed_maxsim_equals_padded_reference():
    q, bow, lens = _data(2)
    lens[0] = 0  # a passage with no tokens scores 0 either way
    np.testing.assert_array_equal(maxsim.maxsim(q, bow, lens), _padded(q, bow, lens))
    assert maxsim.maxsim(q, bow, lens)[0] == 0.0


def test_negative_similarities_are_not_clipped_by_padding():
    q = -np.ones((1, 32), np.float32)
    bow = np.ones((1, 4, 32), np.float16)
    assert maxsim.maxsim(q, bow, np.array([2]))[0] == pytest.approx(-32.0)


@pytest.mark.gpu
def test_maxsim_cuda_same_scores():
    q, bow, lens = _data(1)
    np.testing.assert_allclose(maxsim.maxsim(q, bow, lens, "cuda"), maxsim.maxsim(q, bow, lens, "cpu"),
                               rtol=1e-5, atol=1e-4)


def test_cuda_request_without_cuda():
    if devices.cuda_available():
        pytest.skip("CUDA present")
    with pytest.raises(BackendUnavailable):
        maxsim.resolve_device("cuda")
    assert maxsim.resolve_device("auto") == "cpu"


def test_partial_rerank_keeps_the_rest_in_cls_order():
    ids = np.array([10, 11, 12, 13, 14])
    cls = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    out = maxsim.partial_rerank(ids, cls, {10: 0.0, 11: 1.0, 12: 2.0}, 3)
    assert list(out) == [12, 11, 10, 13, 14]


def _table(seed=0, n=40, t=12, dim=32):
    rng = np.random.default_rng(seed)
    bow = rng.standard_normal((n, t, dim)).astype(np.float16)
    lens = rng.integers(0, t + 1, size=n)
    lens[3] = 0
    return bow, lens, rng.standard_normal((5, dim)).astype(np.float32)


def test_the_resident_table_scores_as_the_packed_maxsim_on_the_torch_path(monkeypatch):
    from bench.espn.system import maxsim_resident

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    bow, lens, q = _table()
    table = maxsim_resident.ResidentTable(bow, lens)
    cand = np.array([7, 3, 0, 39, 7, 12])
    got, mode = table.score(q, cand)
    assert mode.startswith("torch (") and "no CUDA and no Triton interpreter" in mode
    want = maxsim.maxsim(q, bow[cand], lens[cand], "cpu")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    assert got[1] == 0                                              # a passage without tokens scores 0


def test_the_maxsim_kernel_equals_the_torch_path_under_the_interpreter():
    pytest.importorskip("triton")
    from bench.ann import census, kernels
    from bench.espn.system import maxsim_resident

    if not kernels.triton_interprets():
        pytest.skip("Triton imported without its interpreter (CUDA host)")
    bow, lens, q = _table(1)
    table = maxsim_resident.ResidentTable(bow, lens)
    cand = torch.tensor([5, 3, 17, 0, 22, 9, 31, 3, 11, 2, 38, 20])   # 12 programs
    qt = torch.from_numpy(q)
    with census.Census() as c:
        got, mode = table.score(qt, cand)
    assert mode == "triton-interpreter"
    assert (c.counts.triton_launches, c.counts.syncs, c.counts.h2d) == (1, 0, 0), c.counts
    want, _ = table.score(q, cand, force_torch=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.numpy(), maxsim.maxsim(q, bow[cand.numpy()], lens[cand.numpy()], "cpu"),
                               rtol=1e-5, atol=1e-5)


def test_a_resident_table_refuses_bad_shapes():
    from bench.core.base.errors import ConfigError
    from bench.espn.system import maxsim_resident

    bow, lens, q = _table()
    with pytest.raises(ConfigError, match=r"\[n, t, dim\]"):
        maxsim_resident.ResidentTable(bow[0], lens)
    with pytest.raises(ConfigError, match="39 lengths for 40"):
        maxsim_resident.ResidentTable(bow, lens[:39])
    with pytest.raises(ConfigError, match=r"\[tq, 32\]"):
        maxsim_resident.ResidentTable(bow, lens).score(q[:, :8], [0])


@pytest.mark.gpu
def test_the_compiled_maxsim_kernel_equals_the_torch_path_on_cuda():
    pytest.importorskip("triton")
    from bench.espn.system import maxsim_resident

    bow, lens, q = _table(2)
    table = maxsim_resident.ResidentTable(bow, lens, "cuda")
    got, mode = table.score(q, np.arange(40))
    want, _ = table.score(q, np.arange(40), force_torch=True)
    assert mode == "triton-cuda"
    np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=1e-5, atol=1e-5)

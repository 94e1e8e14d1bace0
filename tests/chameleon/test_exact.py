import numpy as np
import pytest
import torch

from bench.chameleon.system import exact
from bench.core.base.errors import ConfigError


def _data(n=500, nq=37, d=16, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)).astype(np.float32), rng.normal(size=(nq, d)).astype(np.float32)


def _reference(xb, xq, k):
    d = ((xq[:, None, :].astype(np.float64) - xb[None].astype(np.float64)) ** 2).sum(-1)
    i = np.argsort(d, 1, kind="stable")[:, :k]
    return np.take_along_axis(d, i, 1), i


def test_exact_search_equals_float64_reference():
    xb, xq = _data()
    D, I = exact.search(exact.Base.from_numpy(xb), xq, 10)
    Dr, Ir = _reference(xb, xq, 10)
    np.testing.assert_allclose(D.numpy(), Dr, rtol=1e-4, atol=1e-4)
    assert (I.numpy() == Ir).mean() > 0.99


def test_chunked_equals_one_block(monkeypatch):
    xb, xq = _data()
    base = exact.Base.from_numpy(xb)
    D1, I1 = exact.search(base, xq, 7)
    monkeypatch.setitem(exact.CHUNK_ELEMS, "cpu", 3 * len(xb))   # 3 queries per chunk
    D2, I2 = exact.search(base, xq, 7)
    np.testing.assert_array_equal(I1.numpy(), I2.numpy())
    np.testing.assert_allclose(D1.numpy(), D2.numpy(), rtol=1e-6)


def test_bad_input():
    xb, xq = _data(n=20)
    base = exact.Base.from_numpy(xb)
    with pytest.raises(ConfigError, match="K="):
        exact.search(base, xq, 21)
    with pytest.raises(ConfigError, match="queries must be"):
        exact.search(base, xq[:, :4], 3)
    with pytest.raises(ConfigError, match="non-empty"):
        exact.Base.from_numpy(np.zeros((0, 4), np.float32))
    D, I = exact.search(base, xq[:0], 3)
    assert D.shape == I.shape == (0, 3)


@pytest.mark.gpu
def test_exact_cuda_equals_cpu():
    xb, xq = _data(n=3000)
    Dc, Ic = exact.search(exact.Base.from_numpy(xb), xq, 10)
    Dg, Ig = exact.search(exact.Base.from_numpy(xb, "cuda"), torch.from_numpy(xq).cuda(), 10)
    assert Ig.device.type == "cuda"
    assert (Ig.cpu().numpy() == Ic.numpy()).mean() > 0.99
    np.testing.assert_allclose(Dg.cpu().numpy(), Dc.numpy(), rtol=1e-4, atol=1e-3)


def test_exact_search_stays_on_the_base_device():
    xb, xq = _data()
    D, I = exact.search(exact.Base.from_numpy(xb, "meta"), xq, 5)
    assert D.device.type == I.device.type == "meta" and D.shape == (len(xq), 5)

import numpy as np
import pytest
import torch

from bench.chameleon import pqscan
from bench.core.errors import ConfigError


def test_torch_scan_matches_faiss(small_index):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    ivf = pqscan.ivfpq_of(index)
    Dq, Iq = ivf.quantizer.search(xq, 4)
    Df, If = pqscan.faiss_scan(index, xq, Iq, Dq, 50)
    Dt, It = pqscan.scan(layout, xq, Iq, 50, coarse_dist=torch.from_numpy(Dq))
    assert pqscan.overlap(If, It.numpy()).mean() >= 0.99
    np.testing.assert_allclose(Dt.numpy(), Df, rtol=1e-3, atol=1e-2)


def test_coarse_assign_matches_faiss(small_index):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    _, Iq = pqscan.ivfpq_of(index).quantizer.search(xq, 4)
    _, It = pqscan.coarse_assign(layout, xq, 4)
    assert (np.sort(It.numpy(), 1) == np.sort(Iq, 1)).mean() > 0.99


def test_layout_holds_every_vector(small_index):
    index, xb, _ = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    assert layout.sizes.sum() == len(xb) == len(layout.ids)
    assert sorted(layout.ids.tolist()) == list(range(len(xb)))
    assert layout.code_bytes(np.array([[0, 1]])) == (layout.sizes[0] + layout.sizes[1]) * layout.m


def test_bad_parameters():
    with pytest.raises(ConfigError, match="does not divide"):
        pqscan.check_params(128, 12)
    with pytest.raises(ConfigError, match="nprobe"):
        pqscan.check_params(128, 16, nlist=8, nprobe=9)
    with pytest.raises(pqscan.KTooLargeError, match="query 1"):
        pqscan.check_k(np.array([500, 40, 600]), 100)


def test_scan_rejects_k_larger_than_probed(small_index):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    _, Iq = pqscan.ivfpq_of(index).quantizer.search(xq[:2], 1)
    with pytest.raises(pqscan.KTooLargeError):
        pqscan.scan(layout, xq[:2], Iq, 4000)


def test_recall_and_overlap():
    a = np.array([[1, 2, 3], [4, 5, 6]])
    b = np.array([[3, 2, 9], [4, 5, 6]])
    assert pqscan.overlap(a, b).tolist() == [2 / 3, 1.0]


@pytest.mark.gpu
def test_torch_scan_cuda_matches_cpu(small_index):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    _, Iq = pqscan.ivfpq_of(index).quantizer.search(xq, 4)
    _, Ic = pqscan.scan(layout, xq, Iq, 50)
    _, Ig = pqscan.scan(layout.to("cuda"), xq, Iq, 50)
    assert pqscan.overlap(Ic.numpy(), Ig.cpu().numpy()).mean() >= 0.99


def test_small_batch_path_equals_grouped_path(small_index):
    index, _, xq = small_index
    layout = pqscan.IVFPQLayout.from_faiss(index)
    _, Iq = pqscan.ivfpq_of(index).quantizer.search(xq[:12], 4)
    Dg, Ig = pqscan.scan(layout, xq[:12], Iq, 20)           # grouped (>= GROUP_MIN_BATCH)
    for b in range(0, 12, 3):                                # per-query path
        Ds, Is = pqscan.scan(layout, xq[b:b + 3], Iq[b:b + 3], 20)
        np.testing.assert_allclose(Ds.numpy(), Dg[b:b + 3].numpy(), rtol=1e-5, atol=1e-4)

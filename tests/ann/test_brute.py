"""The fair exact anchor (bench.ann.brute): the streamed top-K equals one full matmul + top-K, in fp32 with
TF32 pinned off and restored; the fp16 anchor's recall against fp32 is high but stated, never assumed."""
import numpy as np
import pytest
import torch

from bench.ann import brute
from bench.core.base.errors import ConfigError


def test_the_streamed_top_k_equals_the_full_matmul():
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((3000, 24)).astype(np.float32) * 50
    xq = rng.standard_normal((37, 24)).astype(np.float32) * 50
    base = brute.Base.build(xb)
    D, I = brute.search(base, xq, 10, q_chunk=16, b_chunk=700)     # 3 query chunks, 5 base chunks
    full = ((xq[:, None, :] - xb[None]) ** 2).sum(-1)
    want = np.argsort(full, axis=1, kind="stable")[:, :10]
    assert (I.numpy() == want).mean() > 0.99
    np.testing.assert_allclose(D.numpy(), np.take_along_axis(full, want, 1), rtol=1e-4)
    torch.backends.cuda.matmul.allow_tf32 = True
    brute.search(base, xq[:2], 3)
    assert torch.backends.cuda.matmul.allow_tf32 is True                 # pinned off for the call, restored
    torch.backends.cuda.matmul.allow_tf32 = False
    h = brute.Base.build(xb, precision="fp16")
    _, Ih = brute.search(h, xq, 10, b_chunk=1024)
    recall = np.mean([len(np.intersect1d(a, b)) / 10 for a, b in zip(Ih.numpy(), want)])
    assert 0.9 <= recall <= 1.0
    assert "TF32 off" in brute.describe("fp32") and "fp16" in brute.describe("fp16")


def test_bad_anchor_inputs_are_refused():
    with pytest.raises(ConfigError, match="precision"):
        brute.Base.build(np.zeros((3, 2), np.float32), precision="bf16")
    with pytest.raises(ConfigError, match="K=5"):
        brute.search(brute.Base.build(np.zeros((3, 2), np.float32)), np.zeros((1, 2), np.float32), 5)

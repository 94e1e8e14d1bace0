import numpy as np
import pytest

from bench.chameleon.system import ralm
from bench.core.base.errors import ConfigError


@pytest.mark.parametrize("arch", ["dec", "encdec"])
def test_generation_with_retrieval_interval(arch):
    spec = ralm.LMSpec("T", arch, d_model=32, layers=2, heads=4, enc_layers=1 if arch == "encdec" else 0,
                       vocab=100, k=5, retrieved_tokens=8)
    model = ralm.build_model(spec, index_dim=16, max_len=11, seed=0)
    calls = []

    def retrieve(q, k):
        calls.append(q.shape)
        return np.arange(q.shape[0] * k).reshape(q.shape[0], k), 0.001

    recs = ralm.generate(spec, model, batch=2, seq_len=10, interval=4, retrieve=retrieve,
                         query_mean=np.zeros(16), query_std=np.ones(16))
    assert len(recs) == 9
    assert [r["step"] for r in recs if r["retrieval"]] == [0, 4, 8]
    assert calls == [(2, 16)] * 3
    assert all(r["step_s"] >= r["inference_s"] > 0 for r in recs)


def test_inference_only_and_bad_specs():
    spec = ralm.LMSpec("T", "dec", 32, 1, 4, vocab=50, k=3)
    recs = ralm.generate(spec, ralm.build_model(spec, 8, 6, 0), 1, 5, None, None)
    assert not any(r["retrieval"] for r in recs)
    with pytest.raises(ConfigError):
        ralm.LMSpec("T", "dec", 30, 1, 4)
    with pytest.raises(ConfigError):
        ralm.LMSpec("T", "encdec", 32, 1, 4)
    with pytest.raises(ConfigError):
        ralm.generate(spec, ralm.build_model(spec, 8, 6, 0), 1, 5, 0, lambda q, k: (None, 0))


def test_tokens_of_is_deterministic_and_in_range():
    t = ralm.tokens_of(np.array([[1, 2], [3, 4]]), 5, 97)
    assert t.shape == (2, 5) and t.min() >= 0 and t.max() < 97
    np.testing.assert_array_equal(t, ralm.tokens_of(np.array([[1, 2], [3, 4]]), 5, 97))

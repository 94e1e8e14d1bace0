import numpy as np
import pytest

from bench.espn import ann, backends, encoders, layout, pipeline
from bench.espn.errors import PrefetchConfigError


def test_staged_search_equals_full_search(small_index):
    index, cls = small_index
    q = cls[:20] + 0.01
    (Da, Ia), (D, I) = ann.staged(index, q, 16, 4, 50)
    Df, If = ann.search(index, q, 16, 50)
    np.testing.assert_allclose(D, Df, rtol=1e-5)
    assert (np.sort(I, 1) == np.sort(If, 1)).mean() > 0.99
    hr = ann.hit_rate(Ia, I)
    assert ((0 <= hr) & (hr <= 1)).all()


def test_delta_greater_than_eta():
    with pytest.raises(PrefetchConfigError, match="exceeds"):
        ann.check_delta(10, 8)
    assert ann.delta_for(100, 0.3) == 30 and ann.delta_for(3, 0.05) == 1


def test_prefetch_pipeline_matches_plain(tmp_path, small_index):
    index, cls = small_index
    _, bows = encoders.synthetic_filler(len(cls), 2)
    path = tmp_path / "t.espn"
    layout.write_table(path, cls, bows)
    rng = np.random.default_rng(3)
    q = cls[:5] + 0.05 * rng.standard_normal(cls[:5].shape).astype(np.float32)
    qt = [rng.standard_normal((4, 32)).astype(np.float32) for _ in range(5)]
    with backends.MemoryStore(path) as mem, backends.MmapStore(path) as mm:
        plain = pipeline.Retriever(index, mem, 100, 16, 40)
        pre = pipeline.Retriever(index, mm, 100, 16, 40, prefetch_step=0.25)
        a, b = plain.run(q, qt), pre.run(q, qt)
    for x, y in zip(a.rankings, b.rankings):
        np.testing.assert_array_equal(x, y)
    assert 0 < b.hits <= b.needed == 5 * 40
    assert set(b.timings) >= {"ann", "prefetch_wait", "crit_read", "rerank", "total"}


def test_bad_retriever_config(small_index):
    index, _ = small_index
    with pytest.raises(PrefetchConfigError):
        pipeline.Retriever(index, None, 10, 16, 20)
    with pytest.raises(PrefetchConfigError):
        pipeline.Retriever(index, None, 100, 16, 20, prefetch_step=1.5)

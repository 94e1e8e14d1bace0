import numpy as np
import pytest

from bench.espn.system import backends, candidates, encoders, layout, pipeline
from bench.espn.system.candidates import PrefetchConfigError


def test_staged_search_equals_full_search(small_index):
    index, cls = small_index
    q = cls[:20] + 0.01
    (Da, Ia), (D, I) = candidates.staged(index, q, 16, 4, 50)
    Df, If = candidates.search(index, q, 16, 50)
    np.testing.assert_allclose(D, Df, rtol=1e-5)
    assert (np.sort(I, 1) == np.sort(If, 1)).mean() > 0.99
    hr = candidates.hit_rate(Ia, I)
    assert ((0 <= hr) & (hr <= 1)).all()


def test_delta_greater_than_eta():
    with pytest.raises(PrefetchConfigError, match="exceeds"):
        candidates.check_delta(10, 8)
    assert candidates.delta_for(100, 0.3) == 30 and candidates.delta_for(3, 0.05) == 1


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


class _SlowStore(backends.MemoryStore):
    """A memory store whose reads take a while and are counted (to see what the prefetcher reads)."""

    def __init__(self, path, delay):
        super().__init__(path)
        self.delay, self.n_read = delay, 0

    def read(self, idx):
        import time

        time.sleep(self.delay)
        self.n_read += len(idx)
        return super().read(idx)


@pytest.mark.parametrize("chunk", [4, 16, 1000])
def test_prefetcher_cuts_unneeded_reads_and_matches_plain(tmp_path, small_index, chunk):
    """Once the ANN is done the prefetcher stops reading candidates that left the top n; every final
    candidate is read exactly once (prefetched hit or critical-path miss) and the ranking is unchanged,
    whatever the chunk size and however slow the reads."""
    index, cls = small_index
    _, bows = encoders.synthetic_filler(len(cls), 2)
    path = tmp_path / "t.espn"
    layout.write_table(path, cls, bows)
    rng = np.random.default_rng(4)
    q = cls[:3] + 0.05 * rng.standard_normal(cls[:3].shape).astype(np.float32)
    qt = [rng.standard_normal((4, 32)).astype(np.float32) for _ in range(3)]
    with backends.MemoryStore(path) as mem, _SlowStore(path, 0.02) as slow:
        a = pipeline.Retriever(index, mem, 100, 16, 40).run(q, qt)
        b = pipeline.Retriever(index, slow, 100, 16, 40, prefetch_step=0.25, prefetch_chunk=chunk).run(q, qt)
    for x, y in zip(a.rankings, b.rankings):
        np.testing.assert_array_equal(x, y)
    assert b.extra["n_prefetch_reads"] <= b.extra["n_prefetched"]
    assert slow.n_read == b.extra["n_prefetch_reads"] + b.extra["n_crit_reads"]
    hit_union = np.unique(np.concatenate([f[np.isin(f, a[a >= 0][:40])] for f, a in
                                          zip([i[i >= 0][:40] for i in b.cls_ids], b.extra["approx_ids"])]))
    if chunk == 4:  # slow reads, small chunks: the chunks issued after the ANN are cut to the hits
        assert b.extra["n_prefetch_reads"] <= len(hit_union) + 2 * chunk

"""ESPN microbenchmarks: ESPN-v1 decode, MaxSim over 1000 candidates (CPU; CUDA when present), O_DIRECT
reads of 1000 records, and one query through the pipeline with and without the prefetcher; the hit
rate goes to extra_info."""
from __future__ import annotations

import numpy as np
import pytest

from bench.core.machine import devices

from bench.core.measuring import measure
from bench.espn.system import backends, candidates, encoders, layout, maxsim, pipeline


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    measure.set_threads(1)
    rng = np.random.default_rng(0)
    cls, bows = encoders.synthetic_filler(5000, 1, rng.standard_normal((100, 128)).astype(np.float32))
    path = tmp_path_factory.mktemp("espn") / "t.espn"
    layout.write_table(path, cls, bows)
    index = candidates.build(cls, "ivfflat", 64, seed=0)
    q = cls[:5] + 0.05 * rng.standard_normal((5, 128)).astype(np.float32)
    qt = [rng.standard_normal((8, 32)).astype(np.float32) for _ in range(5)]
    return path, index, q, qt


def test_decode_1000(benchmark, setup):
    path, *_ = setup
    with backends.MemoryStore(path) as st:
        raw = st.read_raw(np.arange(1000))
        nt = st.offsets.n_tokens[:1000]
    benchmark(layout.decode, raw, nt)


@pytest.mark.parametrize("device", ["cpu", pytest.param(
    "cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not devices.cuda_available(), reason="needs CUDA")])])
def test_maxsim_1000(benchmark, setup, device):
    path, *_ = setup
    with backends.MemoryStore(path) as st:
        _, bow, lens = st.read(np.arange(1000))
    q = np.random.default_rng(0).standard_normal((8, 32)).astype(np.float32)
    benchmark(maxsim.maxsim, q, bow, lens, device)


def test_direct_read_1000(benchmark, setup):
    path, *_ = setup
    try:
        st = backends.DirectStore(path, depth=32)
    except backends.BackendUnavailable as exc:
        pytest.skip(str(exc))
    with st:
        benchmark(st.read, np.arange(0, 5000, 5))


@pytest.mark.parametrize("step", [None, 0.3])
def test_query(benchmark, setup, step):
    path, index, q, qt = setup
    with backends.MmapStore(path) as st:
        r = pipeline.Retriever(index, st, 1000, 32, 1000, step)
        res = benchmark(r.run, q[:1], qt[:1])
    if step:
        benchmark.extra_info["hit_rate"] = res.hits / res.needed

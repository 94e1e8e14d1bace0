"""Document-loader microbenchmark (Moving Stuff Around): 200 random lookups per loader on a small
synthetic collection; the loader's own memory footprint recorded beside the timing."""
from __future__ import annotations

import numpy as np
import pytest

from bench.data import synthetic
from bench.loaders.system import collection
from bench.loaders.system import footprint
from bench.loaders.system.stores import make_store


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    d = tmp_path_factory.mktemp("loaders-bench")
    ds = synthetic.msmarco_like(300, 10, seed=0, n_topics=10, vocab_size=1000)
    collection.build_bundle(ds, d, doc_words=200, filler_docs=700, seed=0)
    with np.load(d / collection.OFFSETS) as z:
        ids = [i.decode() for i in z["ids"]]
    return d, [ids[i] for i in np.random.default_rng(0).integers(0, len(ids), 200)]


@pytest.mark.parametrize("loader", ["in-memory", "indexed", "ir_datasets", "arrow"])
def test_random_lookups(benchmark, bundle, loader):
    d, ids = bundle
    before = footprint.own_pss()
    store = make_store(loader, d).open()
    benchmark.extra_info["open_footprint_mib"] = (footprint.own_pss() - before) / 2**20
    texts = benchmark(lambda: [store.get(i) for i in ids])
    assert len(texts) == len(ids) and all(texts)

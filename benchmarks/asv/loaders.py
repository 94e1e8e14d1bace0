"""Document loaders of Moving Stuff Around: lookup speed of each loader and its own memory footprint,
on a small synthetic collection built once per process (no model, no DataLoader)."""
from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np

from bench.data import synthetic
from bench.loaders.system import collection
from bench.loaders.system import footprint
from bench.loaders.system.stores import make_store


@functools.lru_cache(maxsize=None)
def _bundle() -> Path:
    d = Path(tempfile.mkdtemp(prefix="asv-loaders-"))
    ds = synthetic.msmarco_like(500, 20, seed=0, n_topics=10, vocab_size=1000)
    collection.build_bundle(ds, d, doc_words=300, filler_docs=2000, seed=0)
    return d


class Lookup:
    params = ["in-memory", "indexed", "indexed-mmap", "ir_datasets", "arrow"]
    param_names = ["loader"]

    def setup(self, loader):
        d = _bundle()
        self.store = make_store(loader, d).open()
        with np.load(d / collection.OFFSETS) as z:
            ids = [i.decode() for i in z["ids"]]
        self.ids = [ids[i] for i in np.random.default_rng(0).integers(0, len(ids), 1000)]

    def time_1000_random_lookups(self, loader):
        for i in self.ids:
            self.store.get(i)

    def track_open_footprint_mb(self, loader):
        """This process's PSS growth when the loader opens (the dict for in-memory, an index otherwise)."""
        before = footprint.own_pss()
        s = make_store(loader, _bundle()).open()
        grown = footprint.own_pss() - before
        del s
        return grown / 2**20

    track_open_footprint_mb.unit = "MiB"

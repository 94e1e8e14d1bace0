"""Shared fixtures of the loaders tests: one small collection bundle, a 1-layer MiniLM checkpoint and the
synthetic records the figures read, built once per session (offline)."""
from __future__ import annotations

import pytest

from bench.data import synthetic
from bench.loaders.system import bert_cat as M
from bench.loaders.system import collection as C

from ..figcache import figcache, figure_guard  # noqa: F401  (each figure drawn once per session)


@pytest.fixture(scope="session")
def text_ds():
    return synthetic.msmarco_like(120, 12, seed=3, n_topics=6, vocab_size=400)


@pytest.fixture(scope="session")
def bundle(tmp_path_factory, text_ds):
    d = tmp_path_factory.mktemp("bundle")
    C.build_bundle(text_ds, d, doc_words=60, filler_docs=200, seed=3)
    return d


@pytest.fixture(scope="session")
def recs(tmp_path_factory):
    """Synthetic records of every kind the figures read (tests/loaders/synthetic_records.py), written once per
    session; tests read them, never write beside them."""
    from .synthetic_records import all_records

    return all_records(tmp_path_factory.mktemp("records"))


@pytest.fixture(scope="session")
def model_dir(bundle):
    M.save_checkpoint("minilm", 1, bundle / "model", seed=0)
    return bundle / "model"


@pytest.fixture()
def copy_bundle(bundle, tmp_path):
    """A private copy of the bundle a test may damage."""
    import shutil

    dst = tmp_path / "b"
    shutil.copytree(bundle, dst, ignore=shutil.ignore_patterns("model"))
    return dst

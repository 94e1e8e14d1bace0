"""Small ESPN fixtures: a synthetic table written into tmp_path (on the root file system, O_DIRECT-capable)."""
from __future__ import annotations

import numpy as np
import pytest

from bench.espn.system import encoders, layout

from ..figcache import figcache, figure_guard  # noqa: F401  (each figure drawn once per session)


def _records(n, seed=0):
    rng = np.random.default_rng(seed)
    cls = rng.standard_normal((n, layout.cls_dim())).astype(np.float32)
    counts = rng.integers(0, 140, size=n)
    counts[0] = 0  # an empty passage, encoded as such
    bows = [rng.standard_normal((int(t), layout.bow_dim())).astype(np.float16) for t in counts]
    return cls, bows


@pytest.fixture
def table(tmp_path):
    cls, bows = _records(300)
    path = tmp_path / "t.espn"
    off = layout.write_table(path, cls, bows)
    return path, off, cls, bows


@pytest.fixture(scope="module")
def small_index():
    from bench.espn.system import candidates

    rng = np.random.default_rng(1)
    cls, _ = encoders.synthetic_filler(3000, 1, rng.standard_normal((40, 128)).astype(np.float32))
    return candidates.build(cls, "ivfflat", 32, seed=0), cls


@pytest.fixture(autouse=True)
def _fewer_resamples(monkeypatch):
    """Claims' bootstrap intervals with 300 resamples in tests (2000 in the pipeline): same code, faster."""
    from bench.espn import analysis

    monkeypatch.setattr(analysis, "N_BOOT", 300)

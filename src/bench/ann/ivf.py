"""Building, saving and loading a faiss IVF index (PQ-encoded lists, or Flat ones): the recall chain's
system under test, ESPN's candidate generator (IVF-Flat or IVF-PQ, inner product) and Chameleon's search
configurations all build their indexes here."""
from __future__ import annotations

import os
from pathlib import Path

import faiss
import numpy as np

from ..core.base.atomic import atomic_path
from ..core.base.errors import ConfigError

METRICS = {"l2": faiss.METRIC_L2, "ip": faiss.METRIC_INNER_PRODUCT}


ENCODINGS = ("PQ", "Flat")


def index_factory_string(nlist: int, m: int, nbits: int = 8, encoding: str = "PQ") -> str:
    return f"IVF{nlist},PQ{m}x{nbits}" if encoding == "PQ" else f"IVF{nlist},Flat"


def check_params(dim: int, n_base: int, nlist: int, m: int, nbits: int = 8, encoding: str = "PQ") -> None:
    """Reject parameters faiss would reject later or silently mishandle."""
    if encoding not in ENCODINGS:
        raise ConfigError(f"IVF list encoding {encoding!r}: one of {', '.join(ENCODINGS)}")
    if encoding == "PQ" and dim % m:
        raise ConfigError(f"PQ m={m} does not divide the dimension {dim}")
    if nlist < 1 or nlist > n_base:
        raise ConfigError(f"nlist={nlist} must be between 1 and the base size {n_base}")
    if not 1 <= nbits <= 16:
        raise ConfigError(f"nbits={nbits} must be between 1 and 16")


def build(base: np.ndarray, nlist: int, m: int = 0, nbits: int = 8, metric: str = "l2",
          train_size: int | None = None, seed: int = 0, add_block: int = 1 << 18,
          encoding: str = "PQ") -> faiss.Index:
    """Train an ``IVF<nlist>,PQ<m>x<nbits>`` (or ``IVF<nlist>,Flat``) index on a seeded sample of ``base``
    and add all of it."""
    n, d = base.shape
    check_params(d, n, nlist, m, nbits, encoding)
    index = faiss.index_factory(d, index_factory_string(nlist, m, nbits, encoding), METRICS[metric])
    rng = np.random.default_rng(seed)
    ntrain = min(n, train_size or max(nlist * 39, 256 * 39))
    sample = np.sort(rng.choice(n, size=ntrain, replace=False)) if ntrain < n else np.arange(n)
    ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
    ivf.cp.seed = seed  # coarse k-means
    if encoding == "PQ":
        ivf.pq.cp.seed = seed  # PQ sub-quantizer k-means
        # faiss trains polysemous codes by default (most of the training time); they only serve
        # polysemous filtering, which this search does not use.
        ivf.do_polysemous_training = False
    index.train(np.ascontiguousarray(base[sample], dtype=np.float32))
    for i in range(0, n, add_block):
        index.add(np.ascontiguousarray(base[i:i + add_block], dtype=np.float32))
    return index


def save(index: faiss.Index, path: str | os.PathLike) -> Path:
    with atomic_path(path) as tmp:
        faiss.write_index(index, str(tmp))
    return Path(path)


def load(path: str | os.PathLike) -> faiss.Index:
    return faiss.read_index(str(path))


def nlist(index: faiss.Index) -> int:
    return int(faiss.extract_index_ivf(index).nlist)


def set_nprobe(index: faiss.Index, nprobe: int) -> None:
    ivf = faiss.extract_index_ivf(index)
    if nprobe < 1 or nprobe > ivf.nlist:
        raise ConfigError(f"nprobe={nprobe} must be between 1 and nlist={ivf.nlist}")
    ivf.nprobe = nprobe

"""Chameleon section 6.2 (Table 3 scaled): the build ``index``, the IVF-PQ index of one dataset (nlist
~ sqrt(N) unless the profile gives one, the dataset's PQ m, 8-bit codes)."""
from __future__ import annotations

import numpy as np

from ...ann import ivf as ivf_index
from ...core.base.errors import ConfigError
from ...core.measuring.step import Context
from ...core.declaring.study import step
from ...data import prepared
from ..params import Params
from ..system import pqscan
from .inputs import index_shape


@step("index", needs=("manifest",), kind="build", out="{dataset}.faiss",
      keys=("datasets", "pq_m", "nlist", "train_size", "nprobe", "k"))
def index(ctx: Context) -> None:
    """IVF-PQ of ``ctx.dataset``: nlist ~ sqrt(N), the dataset's m, 8-bit codes, written to ``ctx.out``."""
    p: Params = ctx.params
    ds = prepared.load_vectors(ctx.input("manifest"))
    shape = index_shape(p, ctx.dataset or ds.name, len(ds.base))
    pqscan.check_params(ds.dim, shape.m, shape.nlist, p.nprobe, p.k)
    if p.nprobe > shape.nlist:
        raise ConfigError(f"nprobe={p.nprobe} > nlist={shape.nlist}")
    idx = ivf_index.build(np.asarray(ds.base, dtype=np.float32), shape.nlist, shape.m, 8, ds.metric,
                          train_size=p.train_size, seed=ctx.seed)
    ivf_index.save(idx, ctx.out)

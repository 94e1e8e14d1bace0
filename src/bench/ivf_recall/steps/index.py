"""Build step ``index``: the IVF-PQ index of one dataset (faiss ``IVF{nlist},PQ{m}x{nbits}``)."""
from __future__ import annotations

from ...ann import ivf
from ...core.measuring.step import Context
from ...core.declaring.study import step
from ...data import prepared
from ..params import for_dataset


@step("index", needs=("manifest",), kind="build", keys=("index",), out="{dataset}.faiss",
      section_for=for_dataset)
def index(ctx: Context) -> None:
    ds = prepared.load_vectors(ctx.input("manifest"))
    p = ctx.params.index
    idx = ivf.build(ds.base, p.nlist, p.m, p.nbits, ds.metric, train_size=p.train_size, seed=ctx.seed)
    ivf.save(idx, ctx.out)

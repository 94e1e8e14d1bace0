"""Build step ``build`` of the loaders study (Moving Stuff Around, section 2.2): the collection bundle
(TSV, offsets table, ir_datasets store, Arrow table; ``--out`` names its bundle.json) and, beside it in
``model/``, the cut-down encoder checkpoint every run loads."""
from __future__ import annotations

from pathlib import Path

from ...core.base.errors import ConfigError
from ...core.measuring.step import Context
from ...core.declaring.study import step
from ..params import Params
from ..system import collection


@step("build", needs=("manifest",), writes="bundle", kind="build", keys=("collection", "encoder", "layers"),
      out={"bundle": "{dataset}/bundle.json", "model": "{dataset}/model/model.pt"}, threads=1)
def build(ctx: Context) -> None:
    from ...data import prepared
    from ..system import bert_cat

    p: Params = ctx.params
    ds = prepared.load_text(ctx.input("manifest"))
    out = Path(ctx.out)
    if out.name != collection.BUNDLE:
        raise ConfigError(f"loaders build: --out must name a {collection.BUNDLE}, got {out}")
    bert_cat.save_checkpoint(p.encoder, p.layers, out.parent / collection.MODEL, seed=ctx.seed)
    collection.build_bundle(ds, out.parent, doc_words=p.collection.doc_words,
                            filler_docs=p.collection.filler_docs, seed=ctx.seed,
                            source={"id": ds.id, "checksum": ds.checksum, "dataset": ctx.dataset})

"""``bench loaders ...``: build (collection bundle + encoder checkpoint), measure train / options /
loader_only / workers, figure, claims."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..core import studycli
from . import claims, runner

NAME = "loaders"


def _build(a: argparse.Namespace) -> None:
    """The collection bundle (TSV, offsets, ir_datasets store, Arrow) beside ``--out`` (its bundle.json)
    and the cut-down encoder checkpoint in ``<out dir>/model/``."""
    from ..data import prepared
    from . import collection, model

    inputs = studycli.pairs(a.input, "--input")
    if len(inputs.get("manifest", [])) != 1:
        from .errors import ConfigError

        raise ConfigError("loaders build: needs one --input manifest=PATH (a prepared text dataset)")
    p = a.params
    ds = prepared.load_text(inputs["manifest"][0])
    out = Path(a.out)
    if out.name != collection.BUNDLE:
        from .errors import ConfigError

        raise ConfigError(f"loaders build: --out must name a {collection.BUNDLE}, got {out}")
    model.save_checkpoint(p["encoder"], p["layers"], out.parent / "model", seed=a.seed)
    collection.build_bundle(ds, out.parent, doc_words=p["collection"]["doc_words"],
                            filler_docs=p["collection"]["filler_docs"], seed=a.seed,
                            source={"id": ds.id, "checksum": ds.checksum, "dataset": a.dataset})


def register(sub: argparse._SubParsersAction) -> None:
    studycli.register_study(sub, NAME, "document loaders x DP/DDP: samples/s and memory (Moving Stuff Around)",
                            steps=runner.STEPS, figures=f"{__package__}.figures", claims=claims, build=_build)

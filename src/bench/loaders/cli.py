"""``bench loaders ...``: build (collection bundle + encoder checkpoint), measure train / options /
loader_only / workers, figure, claims; ``ddp-rank``: one DDP rank under torchrun (one node or several)."""
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


def _ddp_rank(a: argparse.Namespace) -> None:
    from . import torchrun, train

    bundle = Path(a.bundle)
    spec = train.RunSpec(loader=a.loader, parallel="ddp", replicas=1, bundle_dir=str(bundle.parent),
                         model_dir=a.model or str(bundle.parent / "model"), batch_per_replica=a.batch_per_replica,
                         steps=a.steps, warmup_steps=a.warmup_steps, max_length=a.max_length,
                         doc_chars=a.doc_chars, num_workers=a.num_workers, threads_per_replica=a.threads,
                         seed=a.seed, freeze_embeddings=a.freeze_embeddings, device=a.device,
                         dist_timeout_s=a.timeout_s)
    torchrun.run(spec, a.out_dir)


def _add_ddp_rank(s: argparse._SubParsersAction) -> None:
    r = s.add_parser("ddp-rank", help="one DDP rank started by torchrun (multi-node: torchrun --nnodes N ...)")
    r.add_argument("--bundle", required=True, help="the bundle.json `bench loaders build` wrote (same path on every node)")
    r.add_argument("--model", help="encoder checkpoint folder (default: model/ beside the bundle)")
    r.add_argument("--loader", required=True, help="in-memory, indexed, indexed-mmap, ir_datasets or arrow")
    r.add_argument("--out-dir", required=True, help="folder for rank_<RANK>.json")
    r.add_argument("--batch-per-replica", type=int, default=16)
    r.add_argument("--steps", type=int, default=10)
    r.add_argument("--warmup-steps", type=int, default=2)
    r.add_argument("--max-length", type=int, default=512)
    r.add_argument("--doc-chars", type=int, default=None)
    r.add_argument("--num-workers", type=int, default=0)
    r.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--freeze-embeddings", action="store_true")
    r.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    r.add_argument("--timeout-s", type=float, default=300.0, help="rendezvous and collective timeout")
    r.set_defaults(func=_ddp_rank)


def register(sub: argparse._SubParsersAction) -> None:
    s = studycli.register_study(sub, NAME, "document loaders x DP/DDP: samples/s and memory (Moving Stuff Around)",
                                steps=runner.STEPS, figures=f"{__package__}.figures", claims=claims, build=_build)
    _add_ddp_rank(s)

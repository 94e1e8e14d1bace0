"""``bench loaders ...``: build (collection bundle + encoder checkpoint), measure train / options /
loader_only / workers, figure, claims; ``ddp-rank``: one DDP rank under torchrun (one node or several)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..core import studycli
from ..core.step import reads
from . import claims, runner

NAME = "loaders"


@reads("manifest")
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


def _check_rank_args(a: argparse.Namespace) -> None:
    """ddp-rank's door: torchrun's environment, the bundle and model, the device, before any work."""
    from ..core import devices, doors
    from . import torchrun
    from .collection import BUNDLE
    from .errors import ConfigError
    from .stores import check_loader

    torchrun.torchrun_env()
    check_loader(a.loader)
    bundle = Path(a.bundle)
    if bundle.name != BUNDLE or not bundle.is_file():
        raise ConfigError(f"ddp-rank: --bundle {a.bundle}: not a {BUNDLE} (write one with `bench loaders build`)")
    model = Path(a.model or bundle.parent / "model")
    if not model.is_dir():
        raise ConfigError(f"ddp-rank: --model {model}: no such folder")
    if a.device == "cuda" and not devices.cuda_available():
        raise ConfigError("ddp-rank: --device cuda, but no CUDA GPU is visible here")
    doors.out_path("ddp-rank", Path(a.out_dir) / "rank_0.json")


def _ddp_rank(a: argparse.Namespace) -> None:
    from . import torchrun, train

    _check_rank_args(a)
    bundle = Path(a.bundle)
    spec = train.RunSpec(loader=a.loader, parallel="ddp", replicas=1, bundle_dir=str(bundle.parent),
                         model_dir=a.model or str(bundle.parent / "model"), batch_per_replica=a.batch_per_replica,
                         steps=a.steps, warmup_steps=a.warmup_steps, max_length=a.max_length,
                         doc_chars=a.doc_chars, num_workers=a.num_workers, threads_per_replica=a.threads,
                         seed=a.seed, freeze_embeddings=a.freeze_embeddings, device=a.device,
                         dist_timeout_s=a.timeout_s)
    torchrun.run(spec, a.out_dir)


def _add_ddp_rank(s: argparse._SubParsersAction) -> None:
    from ..core import doors

    r = s.add_parser("ddp-rank", help="one DDP rank started by torchrun (multi-node: torchrun --nnodes N ...)")
    r.add_argument("--bundle", required=True, help="the bundle.json `bench loaders build` wrote (same path on every node)")
    r.add_argument("--model", help="encoder checkpoint folder (default: model/ beside the bundle)")
    r.add_argument("--loader", required=True, help="in-memory, indexed, indexed-mmap, ir_datasets or arrow")
    r.add_argument("--out-dir", required=True, help="folder for rank_<RANK>.json")
    r.add_argument("--batch-per-replica", type=doors.positive_int, default=16)
    r.add_argument("--steps", type=doors.positive_int, default=10)
    r.add_argument("--warmup-steps", type=doors.nonneg_int, default=2)
    r.add_argument("--max-length", type=doors.positive_int, default=512)
    r.add_argument("--doc-chars", type=doors.positive_int, default=None)
    r.add_argument("--num-workers", type=doors.nonneg_int, default=0)
    r.add_argument("--threads", type=doors.positive_int, default=1, help="torch threads per rank")
    r.add_argument("--seed", type=doors.nonneg_int, default=0)
    r.add_argument("--freeze-embeddings", action="store_true")
    r.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    r.add_argument("--timeout-s", type=doors.positive_float, default=300.0, help="rendezvous and collective timeout")
    r.set_defaults(func=_ddp_rank)


def register(sub: argparse._SubParsersAction) -> None:
    s = studycli.register_study(sub, NAME, "document loaders x DP/DDP: samples/s and memory (Moving Stuff Around)",
                                steps=runner.STEPS, figures=f"{__package__}.figures", claims=claims, build=_build)
    _add_ddp_rank(s)

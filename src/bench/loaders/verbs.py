"""The loaders study's internal verb: ``bench loaders ddp-rank``, one DDP rank started by torchrun (Moving
Stuff Around, section 2.1: one process per replica), on one node or several. Light on import: the
system is imported when the verb runs."""
from __future__ import annotations

import argparse
from pathlib import Path


def _check_rank_args(a: argparse.Namespace) -> None:
    """ddp-rank's door: torchrun's environment, the bundle and model, the device, before any work."""
    from ..core.machine import devices
    from ..core.commands import doors
    from ..core.base.errors import ConfigError
    from .system import torchrun
    from .system.collection import BUNDLE, MODEL
    from .system.stores import check_loader

    torchrun.torchrun_env()
    check_loader(a.loader)
    bundle = Path(a.bundle)
    if bundle.name != BUNDLE or not bundle.is_file():
        raise ConfigError(f"ddp-rank: --bundle {a.bundle}: not a {BUNDLE} (write one with `bench loaders build`)")
    model = Path(a.model or bundle.parent / MODEL)
    if not model.is_dir():
        raise ConfigError(f"ddp-rank: --model {model}: no such folder")
    if a.device == "cuda" and not devices.cuda_available():
        raise ConfigError("ddp-rank: --device cuda, but no CUDA GPU is visible here")
    doors.out_path("ddp-rank", Path(a.out_dir) / "rank_0.json")


def _ddp_rank(a: argparse.Namespace) -> None:
    from .system import torchrun, train
    from .system.collection import MODEL

    _check_rank_args(a)
    bundle = Path(a.bundle)
    spec = train.RunSpec(loader=a.loader, parallel="ddp", replicas=1, bundle_dir=str(bundle.parent),
                         model_dir=a.model or str(bundle.parent / MODEL), batch_per_replica=a.batch_per_replica,
                         steps=a.steps, warmup_steps=a.warmup_steps, max_length=a.max_length,
                         doc_chars=a.doc_chars, num_workers=a.num_workers, threads_per_replica=a.threads,
                         seed=a.seed, freeze_embeddings=a.freeze_embeddings, device=a.device,
                         dist_timeout_s=a.timeout_s)
    torchrun.run(spec, a.out_dir)


def verbs(s: argparse._SubParsersAction) -> None:
    """Add ``ddp-rank`` to ``bench loaders``."""
    from ..core.commands import doors

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

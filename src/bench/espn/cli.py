"""``bench espn ...``: the standard verbs (build, measure STEP, figure NAME, claims) and the internal
``e2e-worker`` verb (one end-to-end configuration in its own process)."""
from __future__ import annotations

import argparse

from ..core import studycli
from ..core.step import reads
from . import claims, runner

NAME = "espn"


@reads("manifest")
def _build(a: argparse.Namespace) -> None:
    from .steps import build

    inputs = studycli.pairs(a.input, "--input")
    if not inputs.get("manifest"):
        from ..core.errors import ConfigError

        raise ConfigError("espn build: needs --input manifest=PATH")
    build.build(inputs["manifest"][0], a.params, a.out, a.seed, a.threads)


def _worker(a: argparse.Namespace) -> None:
    from .steps import e2e_worker

    e2e_worker.run(a.build, a.params, a.budget, a.label, a.kinds.split(","), a.mechanism, a.threads, a.out,
                   blkio_iops=a.blkio_iops)


def _add_worker(s: argparse._SubParsersAction) -> None:
    w = s.add_parser("e2e-worker", help="(internal) one end-to-end configuration in its own process")
    w.add_argument("--build", required=True)
    w.add_argument("--params", type=studycli.json_arg, required=True)
    w.add_argument("--budget", type=studycli.json_arg, required=True)
    w.add_argument("--label", required=True)
    w.add_argument("--kinds", required=True)
    w.add_argument("--mechanism", required=True)
    w.add_argument("--seed", type=int, required=True)
    w.add_argument("--threads", type=int, required=True)
    w.add_argument("--out", required=True)
    w.add_argument("--blkio-iops", type=int, default=None,
                   help="emulated slower SSD: read-IOPS throttle on the table's disk, cgroup blkio (v1) or "
                        "io.max (v2)")
    w.set_defaults(func=_worker)


def register(sub: argparse._SubParsersAction) -> None:
    s = studycli.register_study(sub, NAME, "ESPN: multi-vector re-ranking embeddings on SSD with a prefetcher",
                                steps=runner.STEPS, figures=f"{__package__}.figures", claims=claims, build=_build)
    _add_worker(s)

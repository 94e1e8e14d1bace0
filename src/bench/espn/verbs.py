"""ESPN's internal verb, added to ``bench espn`` beside the standard ones: ``e2e-worker``, one end-to-end
configuration of the ``e2e`` step (paper Tables 4/5, Figure 1) in its own process, so that it can join a
memory cap and a read throttle of its own. Light on purpose: the worker (:mod:`bench.espn.worker`,
torch and faiss) is imported when the verb runs."""
from __future__ import annotations

import argparse


def _worker(a: argparse.Namespace) -> None:
    from ..core.declaring import config
    from ..core.declaring import params as typed
    from . import worker
    from .params import Params

    # the parent step's section, holding the keys its step declares: the rest are withheld here too (a read of
    # one fails, named), never filled in silently with a default the profile did not say
    section = config.validate_section("espn", a.params)
    p = typed.only(typed.build(Params, section, "espn"), tuple(a.params), "the e2e worker")
    worker.run(a.build, p, a.budget, a.label, a.kinds.split(","), a.mechanism, a.threads, a.out,
               blkio_iops=a.blkio_iops, seed=a.seed, process=a.process, table_path=a.table_path, ssd=a.ssd)


def verbs(s: argparse._SubParsersAction) -> None:
    from ..core.commands.studycli import json_arg

    w = s.add_parser("e2e-worker", help="(internal) one end-to-end configuration in its own process")
    w.add_argument("--build", required=True)
    w.add_argument("--params", type=json_arg, required=True)
    w.add_argument("--budget", type=json_arg, required=True)
    w.add_argument("--label", required=True)
    w.add_argument("--kinds", required=True)
    w.add_argument("--mechanism", required=True)
    w.add_argument("--seed", type=int, required=True)
    w.add_argument("--threads", type=int, required=True)
    w.add_argument("--out", required=True)
    w.add_argument("--blkio-iops", type=int, default=None,
                   help="emulated slower SSD: read-IOPS throttle on the table's disk, cgroup blkio (v1) or "
                        "io.max (v2)")
    w.add_argument("--process", type=int, default=0, help="the step's process index (seeds the back ends' order)")
    w.add_argument("--table-path", default=None,
                   help="read the table from here (its copy on the latency-emulated SSD) instead of the build")
    w.add_argument("--ssd", type=json_arg, default=None, help="the emulated device's record columns")
    w.set_defaults(func=_worker)

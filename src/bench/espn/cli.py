"""``bench espn ...``: the steps the ESPN rules call (build, quality, hitrate, e2e, batch, iops, summary,
figure)."""
from __future__ import annotations

import argparse

from ..core.cliutil import add_run_args, json_arg

NAME = "espn"
FIGURES = ("fig1", "fig5", "fig6", "fig7", "tables45", "fig8_9", "fig10", "eq4", "iops")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="ESPN: multi-vector re-ranking embeddings on SSD with a prefetcher")
    s = p.add_subparsers(dest="step", required=True)

    b = s.add_parser("build", help="encode passages, write the ESPN-v1 table, build the IVF index")
    b.add_argument("--manifest", required=True)
    b.add_argument("--out-dir", required=True)
    add_run_args(b)
    b.set_defaults(func=_build)

    for step, helptext in (("quality", "Figures 5, 6: recall@1000 vs nprobe, MRR@10 vs re-rank count"),
                           ("hitrate", "Figure 7: prefetch hit rate vs prefetch step"),
                           ("e2e", "Tables 4/5, Figure 1: end-to-end latency per memory budget"),
                           ("batch", "Figures 8-10, equation 4: access latency vs batch size"),
                           ("iops", "our O_DIRECT reader vs fio on the table file")):
        m = s.add_parser(step, help=helptext)
        m.add_argument("--build", required=True, help="the build directory")
        m.add_argument("--manifest", help="the dataset manifest (quality)")
        m.add_argument("--out", required=True, help="record set path (.parquet)")
        add_run_args(m)
        m.set_defaults(func=_measure)

    w = s.add_parser("e2e-worker", help="(internal) one memory configuration in its own process")
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
                   help="emulated slower SSD: cgroup v1 blkio read-IOPS throttle on the table's disk")
    w.set_defaults(func=_worker)

    t = s.add_parser("summary", help="targets: measured value, threshold, pass/fail")
    t.add_argument("--e2e", required=True)
    t.add_argument("--hitrate", required=True)
    t.add_argument("--iops", required=True)
    t.add_argument("--batch", required=True)
    t.add_argument("--params", type=json_arg, required=True)
    t.add_argument("--profile", required=True)
    t.add_argument("--out", required=True)
    t.set_defaults(func=_summary)

    f = s.add_parser("figure", help="draw one figure/table from records")
    f.add_argument("kind", choices=FIGURES)
    f.add_argument("--records", nargs="+", required=True)
    f.add_argument("--out", required=True, help="PNG path (PDF, caption and any table beside it)")
    f.set_defaults(func=_figure)


def _build(a) -> None:
    from . import runner

    runner.build(a.manifest, a.params, a.out_dir, a.seed, a.threads)


def _measure(a) -> None:
    from . import runner

    kw = dict(params=a.params, out=a.out, profile=a.profile, seed=a.seed, threads=a.threads)
    if a.step == "quality":
        runner.quality(a.build, a.manifest, **kw)
    else:
        getattr(runner, a.step)(a.build, **kw)


def _worker(a) -> None:
    from . import runner

    runner.e2e_worker(a.build, a.params, a.budget, a.label, a.kinds.split(","), a.mechanism, a.seed,
                      a.threads, a.out, blkio_iops=a.blkio_iops)


def _summary(a) -> None:
    from . import runner

    runner.summary(a.e2e, a.hitrate, a.iops, a.batch, a.params, a.out, a.profile)


def _figure(a) -> None:
    from . import figures

    figures.draw(a.kind, a.records, a.out)

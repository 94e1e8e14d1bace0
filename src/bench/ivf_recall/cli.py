"""``bench ivf-recall ...``: the steps the recall rules call (build-index, measure, figure)."""
from __future__ import annotations

import argparse

from ..core.cliutil import add_run_args, json_arg

NAME = "ivf-recall"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="IVF-PQ recall and queries/s against nprobe")
    s = p.add_subparsers(dest="step", required=True)

    b = s.add_parser("build-index", help="train and fill an IVF-PQ index")
    b.add_argument("--manifest", required=True)
    b.add_argument("--index", type=json_arg, required=True, help='{"nlist":..,"m":..,"nbits":..}')
    b.add_argument("--out", required=True)
    b.add_argument("--seed", type=int, required=True)
    b.add_argument("--threads", type=int, required=True)
    b.set_defaults(func=_build)

    m = s.add_parser("measure", help="measure recall@k and queries/s for each nprobe")
    m.add_argument("--manifest", required=True)
    m.add_argument("--index", required=True, help="the built index file")
    m.add_argument("--out", required=True, help="record set path (.parquet)")
    add_run_args(m)
    m.set_defaults(func=_measure)

    f = s.add_parser("figure", help="draw recall and queries/s against nprobe from records")
    f.add_argument("--records", nargs="+", required=True)
    f.add_argument("--out", required=True, help="PNG path (a PDF and caption are written beside it)")
    f.set_defaults(func=_figure)


def _build(a) -> None:
    from ..core import measure
    from ..data import prepared
    from . import index

    measure.set_threads(a.threads)
    ds = prepared.load_vectors(a.manifest)
    idx = index.build(ds.base, a.index["nlist"], a.index["m"], a.index.get("nbits", 8), ds.metric,
                      train_size=a.index.get("train_size"), seed=a.seed)
    index.save(idx, a.out)


def _measure(a) -> None:
    from . import runner

    runner.run(manifest=a.manifest, index_path=a.index, params=a.params, out=a.out,
               profile=a.profile, seed=a.seed, threads=a.threads)


def _figure(a) -> None:
    from . import figures

    figures.recall_vs_nprobe(a.records, a.out)

"""``bench chameleon ...``: the steps the Chameleon rules call (see workflows/chameleon.smk)."""
from __future__ import annotations

import argparse

from ..core.cliutil import add_run_args, json_arg
from ..core.errors import ConfigError

NAME = "chameleon"
FIGURES = ("fig7", "fig8", "fig9", "throughput", "table5", "fig10", "fig11", "fig12", "model", "scan", "nodes")


def _pairs(values: list[str] | None) -> dict[str, str]:
    out = {}
    for v in values or []:
        name, sep, path = v.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"expected NAME=PATH, got {v!r}")
        out[name] = path
    return out


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="Chameleon: IVF-PQ on CPU/GPU/modelled FPGA, memory nodes, RALM serving")
    s = p.add_subparsers(dest="step", required=True)

    b = s.add_parser("index", help="build the IVF-PQ index of one dataset (nlist ~ sqrt(N), m per dataset)")
    b.add_argument("--manifest", required=True)
    b.add_argument("--dataset", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--seed", type=int, required=True)
    b.add_argument("--threads", type=int, required=True)
    b.add_argument("--params", type=json_arg, required=True)
    b.set_defaults(func=lambda a: _runner().build_index(a.manifest, a.dataset, a.params, a.out, a.seed, a.threads))

    for step, helptext in (("search", "Figure 9 latencies, recall, throughput per configuration"),
                           ("scan", "torch PQ scan vs faiss scan of the same lists"),
                           ("nodes", "disaggregated memory nodes over TCP")):
        m = s.add_parser(step, help=helptext)
        m.add_argument("--manifest", required=True)
        m.add_argument("--index", required=True)
        m.add_argument("--dataset", required=True)
        m.add_argument("--out", required=True)
        add_run_args(m)
        m.set_defaults(func=_measure_step(step))

    md = s.add_parser("model", help="FPGA performance model: calibration and the authors' other points")
    md.add_argument("--out", required=True)
    md.add_argument("--index", nargs="*", help="NAME=PATH of our indexes to predict")
    add_run_args(md)
    md.set_defaults(func=lambda a: _runner().model(a.params, a.out, a.profile, a.seed, _pairs(a.index)))

    q = s.add_parser("queue", help="approximate hierarchical priority queue (Figures 7, 8)")
    q.add_argument("--out", required=True)
    q.add_argument("--manifest")
    q.add_argument("--index")
    add_run_args(q)
    q.set_defaults(func=lambda a: _runner().queue(a.params, a.out, a.profile, a.seed, a.manifest, a.index))

    r = s.add_parser("ralm", help="RALM serving (Figures 10, 11)")
    r.add_argument("--manifest", nargs="+", required=True, help="NAME=PATH")
    r.add_argument("--index", nargs="+", required=True, help="NAME=PATH")
    r.add_argument("--out", required=True)
    add_run_args(r)
    r.set_defaults(func=lambda a: _runner().ralm(_pairs(a.manifest), _pairs(a.index), a.params, a.out,
                                                 a.profile, a.seed, a.threads))

    e = s.add_parser("energy", help="energy per query (Table 5)")
    e.add_argument("--search", nargs="+", required=True, help="search record sets")
    e.add_argument("--out", required=True)
    add_run_args(e)
    e.set_defaults(func=lambda a: _runner().energy(a.search, a.params, a.out, a.profile, a.seed))

    f = s.add_parser("figure", help="draw one figure from records")
    f.add_argument("name", choices=FIGURES)
    f.add_argument("--records", nargs="+", required=True)
    f.add_argument("--extra", nargs="*", default=[], help="second group of records (fig12: search records)")
    f.add_argument("--out", required=True, help="PNG path (PDF and caption beside it)")
    f.set_defaults(func=_figure)

    t = s.add_parser("targets", help="summary table: target, measured value, pass/fail")
    t.add_argument("--scan", nargs="+", required=True)
    t.add_argument("--model", required=True)
    t.add_argument("--queue", required=True)
    t.add_argument("--nodes", required=True)
    t.add_argument("--out", required=True, help="CSV path (a Markdown copy is written beside it)")
    t.set_defaults(func=lambda a: _figures().targets(a.scan, a.model, a.queue, a.nodes, a.out))


def _runner():
    from . import runner

    return runner


def _figures():
    from . import figures

    return figures


def _measure_step(step: str):
    def run(a):
        fn = getattr(_runner(), step)
        fn(a.manifest, a.index, a.dataset, a.params, a.out, a.profile, a.seed, a.threads)
    return run


def _figure(a) -> None:
    fig = _figures()
    if a.name == "fig12":
        fig.fig12(a.records, a.extra, a.out)
    else:
        getattr(fig, a.name)(a.records, a.out)

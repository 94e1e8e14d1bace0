"""``bench ivf-recall ...``: build (the IVF-PQ index), measure recall, figure, claims."""
from __future__ import annotations

import argparse

from ..core import studycli
from ..core.step import reads
from . import claims, runner

NAME = "ivf-recall"


@reads("manifest")
def _build(a: argparse.Namespace) -> None:
    from ..ann import ivf
    from ..core import measure
    from ..core.step import Context
    from ..data import prepared

    measure.set_threads(a.threads)
    ctx = Context("ivf_recall", "build", a.params, a.profile, a.seed, a.threads, a.out,
                  studycli.pairs(a.input, "--input"), a.dataset)
    ds = prepared.load_vectors(ctx.input("manifest"))
    p = a.params["index"]
    idx = ivf.build(ds.base, p["nlist"], p["m"], p.get("nbits", 8), ds.metric, train_size=p.get("train_size"),
                    seed=a.seed)
    ivf.save(idx, a.out)


def register(sub: argparse._SubParsersAction) -> None:
    studycli.register_study(sub, NAME, "IVF-PQ recall and queries/s against nprobe",
                            steps=runner.STEPS, figures=f"{__package__}.figures", claims=claims,
                            build=_build)

"""``bench chameleon ...``: build (the IVF-PQ index of one dataset), measure STEP, figure NAME, claims."""
from __future__ import annotations

import argparse

from ..core import studycli
from ..core.step import reads
from . import claims, runner

NAME = "chameleon"


@reads("manifest")
def _build(a: argparse.Namespace) -> None:
    from ..core import measure
    from ..core.step import Context
    from .steps_search import build_index

    measure.set_threads(a.threads)
    build_index(Context("chameleon", "build", a.params, a.profile, a.seed, a.threads, a.out,
                        studycli.pairs(a.input, "--input"), a.dataset))


def register(sub: argparse._SubParsersAction) -> None:
    studycli.register_study(sub, NAME, "Chameleon: IVF-PQ on CPU/GPU/modelled FPGA, memory nodes, RALM serving",
                            steps=runner.STEPS, figures=f"{__package__}.figures", claims=claims, build=_build)

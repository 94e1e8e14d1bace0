"""The emulated accelerator's latency law (equation 12, t = alpha * C + beta) set from this machine's
measured CPU fit and the paper's accelerator/CPU coefficients (Figure 4, Section V-B).

The numbers taken from the paper are declared in :data:`PAPER_INPUTS` and read through
:func:`bench.core.judging.fidelity.value` at call time, never copied: Tesla V100 vs Intel Xeon E5 2690,
alpha_acc / alpha_CPU = 0.21, beta 0.27 s vs 0.32 s; Atlas 300I DUO vs Kunpeng 920, alpha ratio 0.12, beta
0.24 s vs 0.85 s. The emulated device keeps the paper's ratios, scaled to what this CPU measured:
alpha_acc = ratio * alpha_CPU(ours), beta_acc = beta_CPU(ours) * beta_acc(paper) / beta_CPU(paper).
Everything it serves is labelled ``emulated``, and every value built on it is set by these inputs (the
claims name them in ``fixed_by``: a sanity check, never judged).
"""
from __future__ import annotations

import dataclasses

from bench.core.base.errors import ConfigError
from bench.core.judging import fidelity
from bench.core.judging.fidelity import PaperInput

_RATIO_WHERE = ("Section V-B: \"the ratio of alpha_NPU/alpha_CPU for the Tesla V100 and Intel Xeon E5 2690 is "
                "greater than that of the Atlas 300I DUO and Kunpeng 920 (0.21 versus 0.12)\"")
_BETA_WHERE = ("Section V-B, Figure 4: \"beta_CPU (0.32 for the Intel Xeon E5 2690 in Figure 4 (B) and 0.85 for the "
               "Kunpeng in Figure 4 (D)) consistently exceeds beta_NPU (0.27 for the Tesla V100 in Figure 4 (A) and "
               "0.24 for the Atlas 300I DUO in Figure 4 (C))\"")

ALPHA_V100_XEON = PaperInput("alpha-ratio-v100-xeon", 0.21, _RATIO_WHERE)
ALPHA_ATLAS_KUNPENG = PaperInput("alpha-ratio-atlas-kunpeng", 0.12, _RATIO_WHERE)
BETA_V100 = PaperInput("beta-v100", 0.27, _BETA_WHERE, "s")
BETA_XEON = PaperInput("beta-xeon", 0.32, _BETA_WHERE, "s")
BETA_ATLAS = PaperInput("beta-atlas", 0.24, _BETA_WHERE, "s")
BETA_KUNPENG = PaperInput("beta-kunpeng", 0.85, _BETA_WHERE, "s")
PAPER_INPUTS = (ALPHA_V100_XEON, ALPHA_ATLAS_KUNPENG, BETA_V100, BETA_XEON, BETA_ATLAS, BETA_KUNPENG)


@dataclasses.dataclass(frozen=True)
class Pair:
    """A paper device pair: names, and the paper inputs its emulated accelerator is built from."""

    name: str
    accelerator: str
    cpu: str
    alpha: PaperInput      # alpha_acc / alpha_CPU
    beta_acc: PaperInput   # beta of the accelerator (s)
    beta_cpu: PaperInput   # beta of the CPU (s)

    @property
    def inputs(self) -> tuple[PaperInput, ...]:
        return self.alpha, self.beta_acc, self.beta_cpu

    @property
    def alpha_ratio(self) -> float:
        return fidelity.value(self.alpha)

    @property
    def beta_ratio(self) -> float:
        return fidelity.value(self.beta_acc) / fidelity.value(self.beta_cpu)


PAIRS = {
    "v100-xeon": Pair("v100-xeon", "Tesla V100", "Intel Xeon E5 2690", ALPHA_V100_XEON, BETA_V100, BETA_XEON),
    "atlas-kunpeng": Pair("atlas-kunpeng", "Atlas 300I DUO", "Kunpeng 920", ALPHA_ATLAS_KUNPENG, BETA_ATLAS,
                          BETA_KUNPENG),
}


@dataclasses.dataclass(frozen=True)
class LinearLaw:
    """t = alpha * C + beta seconds for a batch of C queries (equation 12)."""

    alpha: float
    beta: float

    def __post_init__(self):
        if not (self.alpha >= 0 and self.beta >= 0):
            raise ConfigError(f"latency law needs alpha, beta >= 0, got alpha={self.alpha}, beta={self.beta}")

    def latency(self, c: int) -> float:
        return self.alpha * c + self.beta


def pair(name: str) -> Pair:
    try:
        return PAIRS[name]
    except KeyError:
        raise ConfigError(f"unknown device pair {name!r}; choose one of {', '.join(PAIRS)}") from None


def inputs_of(pairs) -> tuple[PaperInput, ...]:
    """The paper inputs the emulated accelerators of these pairs are built from (for ``fixed_by``)."""
    return tuple(inp for name in dict.fromkeys(pairs) for inp in pair(name).inputs)


def emulated_law(cpu_alpha: float, cpu_beta: float, pair_name: str) -> LinearLaw:
    """The emulated accelerator's law from the CPU's measured fit and the pair's paper inputs."""
    p = pair(pair_name)
    return LinearLaw(alpha=p.alpha_ratio * cpu_alpha, beta=cpu_beta * p.beta_ratio)

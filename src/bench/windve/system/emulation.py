"""The emulated accelerator's latency law (equation 12, t = alpha * C + beta) set from this machine's
measured CPU fit and the paper's accelerator/CPU ratios (Figure 4, Section V-B).

Pairs (paper, Section V-B): Tesla V100 vs Intel Xeon E5 2690: alpha_acc / alpha_CPU = 0.21, beta 0.27 s
vs 0.32 s; Atlas 300I DUO vs Kunpeng 920: alpha ratio 0.12, beta 0.24 s vs 0.85 s. The emulated device
keeps the paper's ratios, scaled to what this CPU measured: alpha_acc = ratio * alpha_CPU(ours),
beta_acc = beta_CPU(ours) * beta_acc(paper) / beta_CPU(paper). Everything it serves is labelled
``emulated``.
"""
from __future__ import annotations

import dataclasses

from bench.core.base.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Pair:
    name: str
    accelerator: str
    cpu: str
    alpha_ratio: float
    beta_acc_s: float
    beta_cpu_s: float


PAIRS = {
    "v100-xeon": Pair("v100-xeon", "Tesla V100", "Intel Xeon E5 2690", 0.21, 0.27, 0.32),
    "atlas-kunpeng": Pair("atlas-kunpeng", "Atlas 300I DUO", "Kunpeng 920", 0.12, 0.24, 0.85),
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


def emulated_law(cpu_alpha: float, cpu_beta: float, pair_name: str) -> LinearLaw:
    """The emulated accelerator's law from the CPU's measured fit and the pair's paper ratios."""
    p = pair(pair_name)
    return LinearLaw(alpha=p.alpha_ratio * cpu_alpha, beta=cpu_beta * p.beta_acc_s / p.beta_cpu_s)

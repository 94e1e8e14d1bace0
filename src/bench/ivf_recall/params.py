"""The ``ivf_recall`` profile section as typed parameters (defaults: experiments/schema/ivf_recall.yaml)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Index:
    """The IVF-PQ index: nlist lists, m sub-quantisers of nbits bits, trained on train_size vectors."""

    nlist: int
    m: int
    nbits: int
    train_size: int | None


@dataclass(frozen=True)
class IndexOverride:
    """A dataset's changes to ``index`` (unset keys keep the common value)."""

    nlist: int | None
    m: int | None
    nbits: int | None
    train_size: int | None


@dataclass(frozen=True)
class Params:
    enabled: bool
    datasets: tuple[str, ...]
    index: Index
    index_overrides: dict[str, IndexOverride]
    nprobe: tuple[int, ...]
    k: tuple[int, ...]
    repeats: int
    warmup: int

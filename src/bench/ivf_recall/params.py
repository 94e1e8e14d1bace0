"""The ``ivf_recall`` profile section as typed parameters: each key's type, default, bounds and description
(bench.core.declaring.keys), the one source of the section's schema."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.declaring.keys import key


@dataclass(frozen=True)
class Index:
    """The IVF-PQ index: nlist lists, m sub-quantisers of nbits bits, trained on train_size vectors."""

    nlist: int = key(128, minimum=1)
    m: int = key(16, minimum=1)
    nbits: int = key(8, minimum=1, maximum=16)
    train_size: int | None = key(minimum=1)


@dataclass(frozen=True)
class IndexOverride:
    """A dataset's changes to ``index`` (unset keys keep the common value)."""

    nlist: int | None = key(minimum=1)
    m: int | None = key(minimum=1)
    nbits: int | None = key(minimum=1, maximum=16)
    train_size: int | None = key(minimum=1)


@dataclass(frozen=True)
class Params:
    """IVF-PQ recall@k and queries/s against nprobe (the harness's proving experiment)."""

    enabled: bool = key(True)
    datasets: tuple[str, ...] = key(["sift-like", "deep-like"], min_items=1,
                                    description="names from the profile's datasets section")
    index: Index = key({})
    index_overrides: dict[str, IndexOverride] = key(
        {}, description="per-dataset changes to `index` (e.g. a larger nlist for a larger set)")
    nprobe: tuple[int, ...] = key([1, 2, 4, 8, 16, 32, 64, 128], items={"minimum": 1}, min_items=1)
    k: tuple[int, ...] = key([1, 10, 100], items={"minimum": 1}, min_items=1)
    repeats: int = key(5, minimum=1)
    warmup: int = key(1, minimum=0)


def for_dataset(section: dict, dataset: str) -> dict:
    """The section one dataset's jobs are given: ``index`` with that dataset's ``index_overrides`` applied
    (the steps read ``index`` only, so an override reruns that dataset's jobs alone)."""
    over = dict(section.get("index_overrides", {}).get(dataset, {}))
    return {**section, "index": {**section["index"], **over}}

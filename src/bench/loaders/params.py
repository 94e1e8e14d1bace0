"""The ``loaders`` profile section (Moving Stuff Around) as typed parameters; defaults live in
experiments/schema/loaders.yaml only."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Collection:
    """How the collection is built from the text dataset (section 2.2: documents, not passages)."""

    doc_words: int
    filler_docs: int


@dataclass(frozen=True)
class Grid:
    """Replica counts of the Tables 1-2 grid, per parallelism."""

    dp: tuple[int, ...]
    ddp: tuple[int, ...]


@dataclass(frozen=True)
class Options:
    """Table 3: the options run on the paper's chosen configuration (loader, parallelism, replicas)."""

    loader: str
    parallel: str
    replicas: int
    num_workers: tuple[int, ...]
    ramdisk: bool
    start_methods: tuple[str, ...]
    cold_cache: bool


@dataclass(frozen=True)
class LoaderOnly:
    """Samples/s each loader delivers with no model (beyond the paper)."""

    loaders: tuple[str, ...]
    batch_size: int
    batches: int
    repeats: int


@dataclass(frozen=True)
class Workers:
    """Memory of each DataLoader worker over the batches (beyond the paper)."""

    loaders: tuple[str, ...]
    num_workers: tuple[int, ...]
    batch_size: int
    batches: int
    sample_interval_s: float


@dataclass(frozen=True)
class Params:
    enabled: bool
    datasets: tuple[str, ...]
    collection: Collection
    encoder: str
    layers: int | None
    max_length: int
    doc_chars: int | None
    freeze_embeddings: bool
    lr: float
    batch_per_replica: int
    steps: int
    warmup_steps: int
    threads_per_replica: int
    loaders: tuple[str, ...]
    grid: Grid
    memory_cap_mb: int | None
    sample_interval_s: float
    run_timeout_s: float
    options: Options
    loader_only: LoaderOnly
    workers: Workers
    rounds: int   # the grid and the options run this many times, each a fresh run (run-to-run noise)

"""The ``loaders`` profile section (Moving Stuff Around) as typed parameters: each key's type, default,
bounds and description (bench.core.declaring.keys), the one source of the section's schema."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.declaring.keys import key


@dataclass(frozen=True)
class Collection:
    """How the collection is built from the text dataset (section 2.2: documents, not passages)."""

    doc_words: int = key(
        0,
        minimum=0,
        description="join passages into documents of about this many words (0 = use the texts as they are)",
    )
    filler_docs: int = key(
        0,
        minimum=0,
        description="extra unjudged documents made of random passages (size the in-memory copy)",
    )


@dataclass(frozen=True)
class Grid:
    """Replica counts of the Tables 1-2 grid, per parallelism."""

    dp: tuple[int, ...] = key([1, 2], items={"minimum": 1}, unique_items=True)
    ddp: tuple[int, ...] = key([1, 2], items={"minimum": 1}, unique_items=True)


@dataclass(frozen=True)
class Options:
    """Table 3: the options run on the paper's chosen configuration (loader, parallelism, replicas)."""

    loader: str = key("ir_datasets", enum=["in-memory", "indexed", "indexed-mmap", "ir_datasets", "arrow"])
    parallel: str = key("ddp", enum=["dp", "ddp"])
    replicas: int = key(2, minimum=1)
    num_workers: tuple[int, ...] = key([1, 2, 4, 8], items={"minimum": 1}, min_items=1)
    ramdisk: bool = key(True)
    start_methods: tuple[str, ...] = key(
        ["spawn"],
        items={"enum": ["spawn", "forkserver"]},
        description="worker start methods run beside fork (the default), one worker each",
    )
    cold_cache: bool = key(True)


@dataclass(frozen=True)
class LoaderOnly:
    """Samples/s each loader delivers with no model (beyond the paper)."""

    loaders: tuple[str, ...] = key(
        ["in-memory", "indexed", "indexed-mmap", "ir_datasets", "arrow"],
        items={"enum": ["in-memory", "indexed", "indexed-mmap", "ir_datasets", "arrow"]},
        min_items=1,
        unique_items=True,
    )
    batch_size: int = key(16, minimum=1)
    batches: int = key(50, minimum=1)
    repeats: int = key(3, minimum=1)


@dataclass(frozen=True)
class Workers:
    """Memory of each DataLoader worker over the batches (beyond the paper)."""

    loaders: tuple[str, ...] = key(
        ["in-memory", "ir_datasets"],
        items={"enum": ["in-memory", "indexed", "indexed-mmap", "ir_datasets", "arrow"]},
        min_items=1,
        unique_items=True,
    )
    num_workers: tuple[int, ...] = key([1, 2, 4], items={"minimum": 1}, min_items=1)
    batch_size: int = key(16, minimum=1)
    batches: int = key(500, minimum=1)
    sample_interval_s: float = key(0.05, exclusive_minimum=0)


@dataclass(frozen=True)
class Params:
    """Moving Stuff Around: document loaders (in-memory, indexed, ir_datasets, Arrow) under DataParallel and
    DistributedDataParallel, samples/s and memory (Tables 1-3, Figure 1, and beyond-the-paper figures)."""

    enabled: bool = key(True)
    datasets: tuple[str, ...] = key(
        ["msmarco-like"],
        min_items=1,
        max_items=1,
        description="the text dataset (queries, qrels, passages) the collection is built from",
    )
    collection: Collection = key({"doc_words": 0, "filler_docs": 0})
    encoder: str = key(
        "minilm",
        description=("'minilm' (packaged all-MiniLM-L6-v2) or a local model folder (distilbert-base-uncased: the "
                     "paper's)"),
    )
    layers: int | None = key(None, minimum=1, description="keep this many encoder layers (null = all)")
    max_length: int = key(512, minimum=8)
    doc_chars: int | None = key(
        None,
        minimum=1,
        description="cut documents to this many characters before tokenizing (null = the paper's collate)",
    )
    freeze_embeddings: bool = key(False, description="do not train the word embeddings (a cut for tiny)")
    lr: float = key(1e-05, exclusive_minimum=0)
    batch_per_replica: int = key(16, minimum=1)
    steps: int = key(1000, minimum=1)
    warmup_steps: int = key(10, minimum=0)
    threads_per_replica: int = key(1, minimum=1, description="torch threads per replica on CPU")
    loaders: tuple[str, ...] = key(
        ["in-memory", "indexed", "indexed-mmap", "ir_datasets", "arrow"],
        items={"enum": ["in-memory", "indexed", "indexed-mmap", "ir_datasets", "arrow"]},
        min_items=1,
        unique_items=True,
    )
    grid: Grid = key({"dp": [1, 2], "ddp": [1, 2]})
    memory_cap_mb: int | None = key(
        None,
        minimum=16,
        description="cgroup v1 memory cap of every run (root only); a run over it is an OOM row",
    )
    sample_interval_s: float = key(0.05, exclusive_minimum=0)
    run_timeout_s: float = key(600, exclusive_minimum=0)
    options: Options = key({})
    loader_only: LoaderOnly = key({})
    workers: Workers = key({})
    rounds: int = key(
        3,
        minimum=1,
        description=("times the grid (train step) and the options run, one round after another, each run a "
                     "fresh set of processes; intervals resample rounds first, so they include run-to-run "
                     "noise (a timed row decides nothing from fewer than 3)"),
    )
    shrunk: str = key(
        "",
        description=("what this profile cut from the study's work to fit its time (never its repeats), said in "
                     "the ledger's scale text"),
    )


SUB_SECTIONS = ("options", "loader_only", "workers")   # each read by the measurement step of that name only
LEDGER_ONLY = ("shrunk",)   # read by the claims only: an edit to it reruns no measurement


def step_keys(step: str) -> tuple[str, ...]:
    """The keys a measurement step reads: the common keys and its own sub-section, so a changed value in
    another step's sub-section (or in a key only the ledger reads) does not rerun it."""
    from dataclasses import fields

    return tuple(f.name for f in fields(Params)
                 if (f.name not in SUB_SECTIONS or f.name == step) and f.name not in LEDGER_ONLY)

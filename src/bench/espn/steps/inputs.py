"""What every ESPN step shares (not a step): the build directory's files and loading them (checked against
each other), the parameter checks made before measuring, MaxSim's thread count, and the build's
provenance (with the device and file system the table lives on)."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np

from ...core.machine import devices

from ...core.measuring import measure
from ...core.base.errors import ConfigError
from ..params import Params
from ..system import aio, candidates, layout
from ..system.candidates import PrefetchConfigError


def set_maxsim_threads(p: Params) -> None:
    """Torch intra-op threads for MaxSim from ``maxsim_threads``, after the step's thread count was set
    (:func:`bench.core.measuring.measure.set_threads`): on 2 cores the prefetch thread, the I/O threads and the
    main thread already share them."""
    import torch

    torch.set_num_threads(p.maxsim_threads)


def paths(build_dir: str | os.PathLike) -> dict[str, Path]:
    """The build's files. ``build_dir``: the build's folder, or its ``meta.json`` (what the rules pass as
    the ``build`` input: a file the build rule writes)."""
    b = Path(build_dir)
    b = b.parent if b.name == "meta.json" and b.is_file() else b
    return {"table": b / "table.espn", "ann": b / "ann.faiss", "queries": b / "queries.npz",
            "encoder": b / "encoder.state", "meta": b / "meta.json"}


def dataset_name(p: Params) -> str:
    """The one dataset ESPN measures (``datasets: [name]``)."""
    names = list(p.datasets or [])
    if len(names) != 1:
        raise ConfigError(f"espn.datasets: ESPN measures exactly one text dataset, got {names}")
    return names[0]


def check_params(p: Params) -> None:
    """Bad input, before anything is measured."""
    dataset_name(p)
    eta = p.nprobe
    for step in [p.prefetch_step, *p.prefetch_steps]:
        candidates.check_delta(candidates.delta_for(eta, step), eta)
        if not 0 < step <= 1:
            raise PrefetchConfigError(f"prefetch step {step} outside (0, 1]")
    if p.prefetch_delta is not None:
        candidates.check_delta(p.prefetch_delta, eta)
    for b in p.batch_sizes:
        if int(b) < 1:
            raise ConfigError(f"batch size must be >= 1, got {b}")
    if max(p.rerank_counts) > p.k or p.partial_rerank > p.k:
        raise ConfigError(f"re-rank counts must be <= K ({p.k})")


@dataclasses.dataclass
class Build:
    """A loaded build: metadata, offsets, the ANN index and the encoded queries."""

    dir: Path
    meta: dict
    off: layout.Offsets
    index: object
    qc: np.ndarray
    qt: list[np.ndarray]
    qids: list[str]

    @property
    def table(self) -> Path:
        return paths(self.dir)["table"]


def load_build(build_dir) -> Build:
    p = paths(build_dir)
    missing = [k for k in ("meta", "table", "ann", "queries") if not p[k].exists()]
    if missing:
        raise ConfigError(f"{build_dir}: not a complete ESPN build (missing {', '.join(p[k].name for k in missing)}); "
                          "run `bench espn build` first")
    meta = json.loads(p["meta"].read_text())
    off = layout.load_offsets(p["table"])  # validates offsets against the table
    if len(off) != meta["n_docs"]:
        raise layout.LayoutError(f"{p['table']}: {len(off)} records but the build says {meta['n_docs']}")
    index = candidates.load(p["ann"])
    if index.ntotal != len(off):
        raise layout.LayoutError(f"ANN index holds {index.ntotal} vectors but the table {len(off)} records")
    with np.load(p["queries"]) as z:
        qc, tok, lens, qids = z["cls"], z["tok"], z["lens"], [str(q) for q in z["query_ids"]]
    qt = np.split(tok, np.cumsum(lens)[:-1])
    return Build(p["meta"].parent, meta, off, index, qc, qt, qids)


def start(ctx) -> Build:
    """A step's common start: parameters checked, threads set, the build loaded."""
    check_params(ctx.params)
    measure.set_threads(ctx.threads)
    set_maxsim_threads(ctx.params)
    return load_build(ctx.input("build"))


def provenance(b: Build, **extra) -> dict:
    """The build's metadata (without the passage ids) and the device and file system of the table."""
    return {"build": {k: v for k, v in b.meta.items() if k != "doc_ids"},
            "table_storage": devices.storage_of(b.table), **extra}


def result_ids(b: Build) -> dict:
    return {"dataset_id": b.meta["dataset"], "dataset_checksum": b.meta.get("dataset_checksum")}


def prefetch_engine(p: Params) -> str | None:
    """The prefetcher's background read engine: None = the same as ``io_engine``; ``aio`` falls back
    to that where native AIO is unavailable."""
    e = p.prefetch_engine
    if e in (None, "same") or (e == "aio" and not aio.available()):
        return None
    return e


def _engine(e: str) -> str:
    from ..system import backends

    return backends.pick_engine(e)


def threads_of(kind: str, p: Params, bg_engine: str | None = None) -> str:
    """The threads a back end uses, in words (records and captions)."""
    ms = f"1 MaxSim thread (torch intra-op {p.maxsim_threads})"
    if kind == "memory":
        return f"{ms}; no I/O"
    if kind == "mmap":
        return f"{ms}; page faults serial on that thread"
    reads = f"{p.io_depth} O_DIRECT preadv threads ({_engine(p.io_engine)})"
    if kind == "direct":
        return f"{ms} + {reads} on the critical path"
    if kind == "direct_prefetch":
        return (f"{ms} + {reads} for misses + 1 prefetch thread ({bg_engine or _engine(p.io_engine)} "
                "reads) + 1 early-rerank MaxSim thread")
    return ms

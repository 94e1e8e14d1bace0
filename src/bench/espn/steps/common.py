"""What every ESPN step shares: the build directory's files, loading them (checked against each other),
the parameter checks made before measuring, thread settings, and the build's provenance (with the
device and file system the table lives on)."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np

from ...core import devices, measure
from ...core.errors import ConfigError
from .. import aio, ann, layout
from ..errors import PrefetchConfigError


def set_threads(threads: int, params: dict) -> None:
    """faiss/BLAS threads as given; torch intra-op threads for MaxSim from ``maxsim_threads`` (1 by
    default: on 2 cores the prefetch thread, the I/O threads and the main thread already share them)."""
    measure.set_threads(threads)
    import torch

    torch.set_num_threads(int(params.get("maxsim_threads", 1)))


def paths(build_dir: str | os.PathLike) -> dict[str, Path]:
    b = Path(build_dir)
    return {"table": b / "table.espn", "ann": b / "ann.faiss", "queries": b / "queries.npz",
            "encoder": b / "encoder.state", "meta": b / "meta.json"}


def dataset_name(params: dict) -> str:
    """The one dataset ESPN measures (``datasets: [name]``)."""
    names = list(params.get("datasets") or [])
    if len(names) != 1:
        raise ConfigError(f"espn.datasets: ESPN measures exactly one text dataset, got {names}")
    return names[0]


def check_params(p: dict) -> None:
    """Bad input, before anything is measured."""
    dataset_name(p)
    eta = int(p["nprobe"])
    for step in [p["prefetch_step"], *p["prefetch_steps"]]:
        ann.check_delta(ann.delta_for(eta, step), eta)
        if not 0 < step <= 1:
            raise PrefetchConfigError(f"prefetch step {step} outside (0, 1]")
    if "prefetch_delta" in p and p["prefetch_delta"] is not None:
        ann.check_delta(int(p["prefetch_delta"]), eta)
    for b in p["batch_sizes"]:
        if int(b) < 1:
            raise ConfigError(f"batch size must be >= 1, got {b}")
    if max(p["rerank_counts"]) > p["k"] or p["partial_rerank"] > p["k"]:
        raise ConfigError(f"re-rank counts must be <= K ({p['k']})")


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
    index = ann.load(p["ann"])
    if index.ntotal != len(off):
        raise layout.LayoutError(f"ANN index holds {index.ntotal} vectors but the table {len(off)} records")
    with np.load(p["queries"]) as z:
        qc, tok, lens, qids = z["cls"], z["tok"], z["lens"], [str(q) for q in z["query_ids"]]
    qt = np.split(tok, np.cumsum(lens)[:-1])
    return Build(Path(build_dir), meta, off, index, qc, qt, qids)


def start(ctx) -> Build:
    """A step's common start: parameters checked, threads set, the build loaded."""
    check_params(ctx.params)
    set_threads(ctx.threads, ctx.params)
    return load_build(ctx.input("build"))


def provenance(b: Build, **extra) -> dict:
    """The build's metadata (without the passage ids) and the device and file system of the table."""
    return {"build": {k: v for k, v in b.meta.items() if k != "doc_ids"},
            "table_storage": devices.storage_of(b.table), **extra}


def result_ids(b: Build) -> dict:
    return {"dataset_id": b.meta["dataset"], "dataset_checksum": b.meta.get("dataset_checksum")}


def prefetch_engine(params) -> str | None:
    """The prefetcher's background read engine: None = the same as ``io_engine``; ``aio`` falls back
    to that where native AIO is unavailable."""
    e = params.get("prefetch_engine", "same")
    if e in (None, "same") or (e == "aio" and not aio.available()):
        return None
    return e


def emulated_ssd_params(params) -> dict:
    """The ``emulated_ssd`` section with its defaults (off unless enabled)."""
    e = dict(params.get("emulated_ssd") or {})
    return {"enabled": bool(e.get("enabled", False)), "read_iops": int(e.get("read_iops", 20000)),
            "budgets": list(e.get("budgets", [0.5])),
            "backends": list(e.get("backends", ["mmap", "direct", "direct_prefetch"]))}

"""Synthetic Chameleon records for the sensitivity test of what the paper fixed
(:func:`bench.core.judging.fidelity.sensitivity`): every record kind :func:`bench.chameleon.claims.build`
reads, built by the study's own model code so that scaling a paper input moves what it moves.

- ``search``: cpu and cpu-gpu batch latencies are fixed synthetic numbers (measured quantities take nothing
  from the paper); fpga-cpu and fpga-gpu are the ChamVS node model (``steps.inputs.fpga_node``, calibrated on
  the authors' reference point) plus the host path calibrated on their batch-1 latencies, on synthetic
  probed-list sizes, exactly as ``system.backends.FPGA`` adds them up;
- ``energy``: ``power.rows`` on those latencies (Table 5's power, a paper input);
- ``model``: the registered ``model`` step itself (the model against the authors' archived points);
- ``queue``: the registered ``queue`` step on a small i.i.d. simulation;
- ``scan``, ``nodes``: fixed synthetic measurements and checks.

Deterministic (fixed seeds, no timing) and fast (a fraction of a second a build)."""
from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.measuring.records import Provenance
from . import paper_values, power
from .params import Params
from .steps import inputs

PROCESSES, BATCHES = 3, 2            # fresh processes and timed batches per process of each cell
N_BASE, NPROBE_SYN = 20_000, 32
LLC = 32 * 1024 ** 2


def _frame(rows: list[dict], prov: dict) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    df.attrs["provenance"] = Provenance(prov)
    df.attrs["provenances"] = (df.attrs["provenance"],)
    return df


def _cpu_ms(bs: int, m: int, rng) -> float:
    return (0.2 + 0.05 * bs * m / 16) * (1 + 0.03 * rng.standard_normal())


def _fpga_ms(node, host, bs: int, dim: int, nlist: int, on: str, rng) -> float:
    sizes = np.full((bs, NPROBE_SYN), N_BASE / nlist)
    coarse = (0.03 if on == "cpu" else 0.1) * (1 + 0.03 * rng.standard_normal())
    return (host.fixed_s + node.batch_seconds(sizes, dim)["total_s"]) * 1e3 + coarse


def _search_rows(params: Params, ds: str, seed: int) -> list[dict]:
    pds, _, m = paper_values.DATASET_MAP[ds]
    dim, nlist = paper_values.paper_dim(pds), int(round(N_BASE ** 0.5))
    node, host = inputs.fpga_node(params.fpga, m), inputs.host_path(params.fpga)
    base = {"dataset": ds, "paper_dataset": pds, "n_base": N_BASE, "dim": dim, "nlist": nlist, "m": m,
            "nprobe": NPROBE_SYN, "k": params.k, "kind": "latency", "phase": "measured", "machine_busy": False,
            "preempted": False}
    rng = np.random.default_rng(seed)
    rows = []
    for proc in range(PROCESSES):
        for cfg, src, dev in (("cpu", "measured", "cpu"), ("cpu-gpu", "measured", "cuda"),
                              ("fpga-cpu", "modelled", "cpu"), ("fpga-gpu", "modelled", "cuda")):
            for bs in params.batch_sizes:
                for run in range(BATCHES):
                    ms = (_fpga_ms(node, host, bs, dim, nlist, cfg.split("-")[1], rng) if src == "modelled"
                          else _cpu_ms(bs, m, rng) * (0.9 if cfg == "cpu-gpu" else 1.0))
                    rows.append({**base, "config": cfg, "source": src, "device": dev, "batch_size": bs,
                                 "run": run, "latency_ms": ms, "process": proc,
                                 "process_uid": f"{ds}-{proc}"})
    return rows


def search(params: Params) -> pd.DataFrame:
    rows = [r for i, ds in enumerate(params.datasets) if ds in paper_values.DATASET_MAP
            for r in _search_rows(params, ds, i)]
    return _frame(rows, {"llc_bytes": LLC, "config": {"datasets": list(params.datasets)}})


SCAN_CODES_PER_LIST = 175   # the tiny profile's (20k vectors over 141 lists, the probed ones a little fuller)


def scan(params: Params) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for ds in params.datasets:
        m = int(params.pq_m[ds]) if ds in params.pq_m else 16
        for proc in range(PROCESSES):
            for run in range(2):
                for impl, gbps in (("faiss", 1.1), ("torch", 0.7)):
                    g = gbps * (1 + 0.05 * rng.standard_normal())
                    rows.append({"dataset": ds, "impl": impl, "device": "cpu", "source": "measured", "run": run,
                                 "seconds": 0.01 / g, "gbps_per_core": g, "pair_ratio_torch_over_faiss": 1.1 / 0.7,
                                 "overlap_mean": 1.0, "n_queries": 200, "threads": 1, "phase": "measured",
                                 "process": proc, "process_uid": f"{ds}-{proc}", "machine_busy": False,
                                 # a tiny index's lists: ~175 codes each, 200 queries x nprobe lists
                                 "m": m, "nprobe": params.nprobe, "probed_lists": 200 * params.nprobe,
                                 "bytes": SCAN_CODES_PER_LIST * m * 200 * params.nprobe})
    return _frame(rows, {"config": {"scan": {}}})


def _step(params: Params, name: str, inputs_: dict | None = None) -> pd.DataFrame:
    """Run a registered step of the study (its own code) with no input files; its rows and provenance."""
    from . import STUDY
    from ..core.measuring.step import Context

    ctx = Context("chameleon", name, params, "synthetic", 3, 1, Path(tempfile.gettempdir()) / f"{name}.parquet",
                  inputs_ or {})
    res = STUDY.steps[name].fn(ctx)
    return _frame(res.records.to_dict("records"), {**res.provenance, "config": {
        "queue": dataclasses.asdict(params.queue)}})


def nodes(params: Params) -> pd.DataFrame:
    n = params.nodes.n_nodes
    checks = [("identical to single-process search", "distances equal: True; min id overlap 1.0000"),
              ("malformed message rejected, node stays up", "error frame"),
              ("node down -> clear error naming the node", "memory node 127.0.0.1:1 down"),
              ("late node -> error within the timeout", "did not answer")]
    return _frame([{"kind": "check", "dataset": params.nodes.dataset, "n_nodes": n, "check": c, "passed": True,
                    "detail": d, "phase": "measured", "source": "measured"} for c, d in checks], {})


def records(params: Params) -> dict[str, pd.DataFrame]:
    """Every record kind the claims read, from the study's own model code (see the module docstring)."""
    small = dataclasses.replace(params, queue=dataclasses.replace(
        params.queue, sim_queries=60, sim_max_vectors=800, units=(4, 8, 16, 32)))
    s = search(params)
    energy = _frame(power.rows(s, params.energy.batch_sizes), {})
    return {"search": s, "scan": scan(params), "model": _step(params, "model"),
            "queue": _step(small, "queue"), "nodes": nodes(params), "energy": energy}

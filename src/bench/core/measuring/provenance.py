"""Provenance attached to every record set: code, config, data, software, hardware, load, seed. The hardware
is named as a reader needs it: ``hardware`` holds the CPU as lscpu and /proc/cpuinfo give it (model,
sockets, cores, threads, hypervisor) and the disks (model or vendor, rotational flag, queue depth, driver such
as virtio), with ``machine`` the same in two lines of words (:mod:`bench.core.machine.hardware`)."""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping

from ..machine import devices, hardware

from . import measure


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_state(cwd: str | os.PathLike | None = None) -> dict[str, Any]:
    cwd = Path(cwd or Path(__file__).resolve().parent)
    commit = _git(["rev-parse", "HEAD"], cwd)
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    return {"git_commit": commit, "git_dirty": None if status is None else bool(status)}


def config_hash(config: Mapping[str, Any]) -> str:
    """A stable hash of a (JSON-serialisable) config: key order does not matter."""
    blob = json.dumps(config, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


_DISTRIBUTIONS = {"numpy": ("numpy",), "torch": ("torch",), "faiss": ("faiss-cpu", "faiss-gpu", "faiss"),
                  "pandas": ("pandas",), "ir_datasets": ("ir-datasets",)}


def software_versions() -> dict[str, str | None]:
    """Versions of the key packages: the imported module's when loaded, else the installed
    distribution's (so asking does not import torch into a step that does not use it)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for mod, dists in _DISTRIBUTIONS.items():
        versions[mod] = (getattr(sys.modules[mod], "__version__", None) if mod in sys.modules
                         else _dist_version(dists))
    return versions


def _dist_version(dists: tuple[str, ...]) -> str | None:
    from importlib import metadata

    for d in dists:
        try:
            return metadata.version(d)
        except metadata.PackageNotFoundError:
            continue
    return None


def _hardware() -> dict[str, Any] | None:
    """The CPU and disks (bench.core.machine.hardware); None where /sys or lscpu cannot be read at all."""
    try:
        return hardware.collect(os.getcwd())
    except OSError:
        return None


def collect(*, profile: str | None, config: Mapping[str, Any] | None, seed: int | None,
            dataset_id: str | None = None, dataset_checksum: str | None = None,
            method: str | None = None, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Everything a reader needs to know about how a record set was produced.

    ``method`` says in words what was measured and how (timers, warm-up, repeats, cold/warm cache,
    modelled vs measured).
    """
    load1, load5, load15 = os.getloadavg()
    prov: dict[str, Any] = {
        **git_state(),
        "profile": profile,
        "config_hash": config_hash(config) if config is not None else None,
        "config": dict(config) if config is not None else None,
        "dataset_id": dataset_id,
        "dataset_checksum": dataset_checksum,
        "seed": seed,
        "versions": software_versions(),
        "cpu_model": devices.cpu_model(),
        "cpu": devices.cpu_details(),
        "cpu_cores": devices.cpu_count(),
        "gpu": devices.gpu_info(),
        "hardware": (hw := _hardware()),
        "machine": hardware.words(hw) if hw else None,
        "threads": measure.thread_settings(),
        "loadavg_at_start": [load1, load5, load15],
        "hostname": platform.node(),
        "platform": platform.platform(),
        "argv": sys.argv,
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "method": method,
    }
    if extra:
        prov.update(extra)
    return prov

"""Device detection: CPU model and cores, CUDA GPU model and driver when present.

GPU code paths across the studies call :func:`cuda_available` at run time and are skipped cleanly
(recorded as "not run") without CUDA.
"""
from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover
        return False
    return bool(torch.cuda.is_available())


def faiss_gpu_available() -> bool:
    try:
        import faiss
    except ImportError:  # pragma: no cover
        return False
    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def _nvidia_device_present() -> bool:
    return os.path.exists("/dev/nvidia0") or os.path.isdir("/proc/driver/nvidia/gpus")


@functools.lru_cache(maxsize=1)
def gpu_info() -> dict | None:
    """Model, count and driver of the CUDA GPUs, or None without CUDA. Without an NVIDIA device node
    torch is not imported for this (a step that needs no torch then pays nothing for asking)."""
    if "torch" not in sys.modules and not _nvidia_device_present():
        return None
    if not cuda_available():
        return None
    import torch

    info = {
        "gpu_model": torch.cuda.get_device_name(0),
        "gpu_count": torch.cuda.device_count(),
        "cuda_runtime": torch.version.cuda,
        "gpu_driver": None,
    }
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=True,
        )
        info["gpu_driver"] = out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return info


def synchronize() -> None:
    """Wait for queued CUDA work, so a wall-clock timer that stops next measures it. No-op on CPU."""
    if cuda_available():
        import torch

        torch.cuda.synchronize()


@functools.lru_cache(maxsize=1)
def cpu_details() -> dict:
    """The CPU as /proc/cpuinfo names it (a VM may expose only a short model name such as "AMD EPYC",
    so family, model and stepping identify the generation), the hypervisor, caches and vector ISA."""
    info: dict = {}
    keys = {"vendor_id": "vendor", "cpu family": "family", "model": "model", "model name": "model_name",
            "stepping": "stepping", "microcode": "microcode", "cache size": "cache_size"}
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if not line.strip():
                    break  # first processor only
                k, _, v = line.partition(":")
                k, v = k.strip(), v.strip()
                if k in keys:
                    info[keys[k]] = v
                elif k == "flags":
                    flags = set(v.split())
    except OSError:
        pass
    info["hypervisor"] = "hypervisor" in flags
    info["isa"] = sorted(f for f in flags if f in ("avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni",
                                                     "avx512_bf16", "amx_tile", "sha_ni", "vaes"))
    info["logical_cpus"] = cpu_count()
    return info


def storage_of(path: str | os.PathLike) -> dict:
    """The block device, filesystem type and mount point holding ``path`` (from /proc/self/mountinfo)."""
    real = os.path.realpath(path)
    best: dict = {}
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                mount = left.split()[4]
                if (real == mount or real.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best.get("mount", "")):
                    fstype, source = right.split()[:2]
                    best = {"mount": mount, "fstype": fstype, "device": source}
    except (OSError, IndexError):
        pass
    dev = os.path.basename(best.get("device", ""))
    rot = f"/sys/class/block/{dev}/queue/rotational"
    if dev and os.path.exists(rot):
        with open(rot) as fh:
            best["rotational"] = fh.read().strip() == "1"
    return {"path": real, **best}

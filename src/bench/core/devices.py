"""Device detection: CPU model and cores, CUDA GPU model and driver when present.

GPU code paths across the studies call :func:`cuda_available` at run time and are skipped cleanly
(recorded as "not run") without CUDA.
"""
from __future__ import annotations

import functools
import os
import platform
import subprocess


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


@functools.lru_cache(maxsize=1)
def gpu_info() -> dict | None:
    """Model, count and driver of the CUDA GPUs, or None without CUDA."""
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

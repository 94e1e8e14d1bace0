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
    """Whether torch can use a CUDA GPU here. Without an NVIDIA device node torch is not even imported;
    with one, torch's NVML-based check answers, which does not initialise CUDA in this process (a
    process that initialised CUDA cannot fork children that use it)."""
    if not _nvidia_device_present():
        return False
    try:
        import torch
    except ImportError:  # pragma: no cover
        return False
    old = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    try:
        return bool(torch.cuda.is_available())
    finally:
        if old is None:
            os.environ.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
        else:
            os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = old


def _nvidia_smi(*query: str) -> list[list[str]]:
    """Rows of ``nvidia-smi --query-gpu=...`` (NVML; no CUDA context), or [] where it cannot answer."""
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(query)}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return []
    return [[c.strip() for c in line.split(",")] for line in out.stdout.splitlines() if line.strip()]


def gpu_count() -> int:
    """CUDA GPUs this process may use (CUDA_VISIBLE_DEVICES applied), asked of NVML or the driver's
    /proc entries, never of the CUDA runtime: 0 without CUDA."""
    if not cuda_available():
        return 0
    rows = _nvidia_smi("index")
    n = len(rows) if rows else len(os.listdir("/proc/driver/nvidia/gpus")) if os.path.isdir(
        "/proc/driver/nvidia/gpus") else 1
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [v for v in visible.split(",") if v.strip()]
        n = min(n, len(ids)) if not (ids and ids[0].strip().startswith("-")) else 0
    return n


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
    """Model, count and driver of the CUDA GPUs, or None without CUDA, from ``nvidia-smi`` (NVML): asking
    costs no CUDA context, so a launcher may ask before it starts its workers. torch is asked for the
    model only where nvidia-smi is missing."""
    if not cuda_available():
        return None
    import torch

    rows = _nvidia_smi("name", "driver_version")
    info = {"gpu_model": rows[0][0] if rows else None, "gpu_count": gpu_count(),
            "cuda_runtime": torch.version.cuda, "gpu_driver": rows[0][1] if rows and len(rows[0]) > 1 else None}
    if info["gpu_model"] is None:  # no nvidia-smi: torch (this initialises CUDA here)
        info["gpu_model"] = torch.cuda.get_device_name(0)
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

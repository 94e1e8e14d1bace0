"""Energy per query (paper Table 5, section 6.2 "Resource and energy consumption").

The authors read Intel RAPL for the CPU and nvidia-smi / NVML for the GPU. Here:

- :class:`EnergyMeter` reads the RAPL package counter (``/sys/class/powercap/intel-rapl:*``) and, with
  CUDA and ``pynvml`` installed, NVML's total-energy counter of GPU 0, around a measured region;
- where neither is readable (VMs such as this project's CI), energy is MODELLED by the study's ``energy`` step: the
  power the paper's Table 5 implies (energy x batch / the authors' median latency) times our latency,
  labelled ``modelled``.
"""
from __future__ import annotations

import glob
import os
from pathlib import Path

from ...core.machine import devices


def _rapl_domains() -> list[Path]:
    out = []
    for d in sorted(glob.glob("/sys/class/powercap/intel-rapl:[0-9]*")):
        p = Path(d) / "energy_uj"
        if ":" in Path(d).name and Path(d).name.count(":") == 1 and p.exists() and os.access(p, os.R_OK):
            out.append(Path(d))
    return out


def _nvml_handle():
    if not devices.cuda_available():
        return None
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        pynvml.nvmlDeviceGetTotalEnergyConsumption(h)  # raises if unsupported
        return h
    except Exception:  # noqa: BLE001 - no NVML, or no energy counter on this GPU
        return None


def power_counters() -> dict[str, object]:
    """Which counters are readable here (recorded in provenance)."""
    rapl = _rapl_domains()
    return {"rapl": [str(p) for p in rapl] or None, "nvml": "pynvml" if _nvml_handle() is not None else None}


class EnergyMeter:
    """Joules used by the CPU packages (RAPL) and GPU 0 (NVML) during a ``with`` block, or None."""

    def __init__(self):
        self.rapl = _rapl_domains()
        self.nvml = _nvml_handle()
        self.cpu_j: float | None = None
        self.gpu_j: float | None = None

    @property
    def available(self) -> bool:
        return bool(self.rapl) or self.nvml is not None

    def _read(self):
        cpu = []
        for d in self.rapl:
            e = int((d / "energy_uj").read_text())
            rng = int((d / "max_energy_range_uj").read_text()) if (d / "max_energy_range_uj").exists() else None
            cpu.append((e, rng))
        gpu = None
        if self.nvml is not None:
            import pynvml

            gpu = pynvml.nvmlDeviceGetTotalEnergyConsumption(self.nvml)  # mJ
        return cpu, gpu

    def __enter__(self) -> "EnergyMeter":
        self._start = self._read() if self.available else None
        return self

    def __exit__(self, *exc) -> None:
        if self._start is None:
            return
        cpu1, gpu1 = self._read()
        cpu0, gpu0 = self._start
        if cpu0:
            total = 0
            for (a, rng), (b, _) in zip(cpu0, cpu1):
                total += b - a if b >= a else b + (rng or 0) - a  # the counter wraps
            self.cpu_j = total / 1e6
        if gpu0 is not None and gpu1 is not None:
            self.gpu_j = (gpu1 - gpu0) / 1e3

    @property
    def joules(self) -> float | None:
        if self.cpu_j is None and self.gpu_j is None:
            return None
        return (self.cpu_j or 0.0) + (self.gpu_j or 0.0)

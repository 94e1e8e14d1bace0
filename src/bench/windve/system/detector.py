"""Device detector (Section IV-C): finds CUDA GPUs, Ascend NPUs (when ``torch_npu`` imports) and the
CPU, and decides which queues the service creates:

- one device type only: one queue, heterogeneous computing forced off;
- an accelerator and the CPU, heterogeneous computing off: the accelerator's queue only;
- both, and the option on: both queues, the accelerator first.

A real accelerator is always preferred (the CUDA GPU is the accelerator instance, measured). Without
one an *emulated* accelerator can be switched on (``--emulate``, see :mod:`.emulation`); beside a real one
only on explicit request (``prefer_emulated``, the CLI's ``--prefer-emulated``). It is then the
accelerator of the plan, labelled ``emulated``.
"""
from __future__ import annotations

import dataclasses
import importlib.util

from bench.core.machine import devices


@dataclasses.dataclass(frozen=True)
class Found:
    """What the machine has: CUDA GPU count, Ascend NPU count, CPU cores this process may use."""

    cuda: int
    npu: int
    cpu_cores: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Plan:
    """The device queues to create, accelerator first, and whether offload is really on."""

    devices: tuple[str, ...]
    accelerator: str | None
    heterogeneous: bool
    reason: str


def detect() -> Found:
    """CUDA and NPU counts (0 when absent) and the usable CPU cores."""
    cuda = 0
    if devices.cuda_available():
        import torch

        cuda = torch.cuda.device_count()
    npu = 0
    if importlib.util.find_spec("torch_npu") is not None:  # pragma: no cover - Ascend machines only
        try:
            import torch
            import torch_npu  # noqa: F401

            npu = torch.npu.device_count()
        except Exception:  # noqa: BLE001 - a broken torch_npu counts as no NPU
            npu = 0
    import os

    return Found(cuda=cuda, npu=npu, cpu_cores=tuple(sorted(os.sched_getaffinity(0))))


def plan(found: Found, heterogeneous: bool, emulate: bool = False, prefer_emulated: bool = False) -> Plan:
    """The queues by the paper's rules; ``emulate`` adds the emulated accelerator when none is real
    (``prefer_emulated``: even when one is, so a measurement is the same on every machine)."""
    real = "cuda" if found.cuda else "npu" if found.npu else None
    acc = "emulated" if emulate and (prefer_emulated or real is None) else real
    has_cpu = bool(found.cpu_cores)
    if acc and has_cpu and heterogeneous:
        return Plan((acc, "cpu"), acc, True, "accelerator and CPU found, heterogeneous computing on: both queues")
    if acc:
        why = ("heterogeneous computing off: accelerator queue only" if has_cpu
               else "only an accelerator found: one queue, heterogeneous computing forced off")
        return Plan((acc,), acc, False, why)
    return Plan(("cpu",), None, False, "only the CPU found: one queue, heterogeneous computing forced off")


def cpu_cores_for_instance(found: Found, n: int, reverse: bool) -> tuple[int, ...]:
    """The ``n`` cores of the CPU instance; ``reverse`` takes the highest indices first (Section IV-D:
    the service framework runs on the low cores)."""
    cores = sorted(found.cpu_cores, reverse=reverse)
    return tuple(sorted(cores[:max(1, min(n, len(cores)))]))

"""The machine named as a reader needs it: the CPU as ``lscpu`` and
``/proc/cpuinfo`` give it (model name, sockets, cores, threads, hypervisor) and the block devices as the
kernel exposes them (model or vendor, rotational flag, queue depth ``nr_requests``, scheduler, size, the
driver that serves them, e.g. ``virtio_blk`` in a VM). Every paper's numbers depend on it: ESPN's I/O
figures on the disk, every latency on the CPU.

Nothing here needs root; a field the machine does not expose is ``None`` and the words say "not exposed".
A VM's virtio disk reports ``rotational=1`` by default whatever lies beneath it, so the words say so.
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path
from typing import Any

SYS_BLOCK = Path("/sys/block")
SKIP_DEVICES = re.compile(r"^(loop|ram|zram|sr|fd|nbd)\d*")
# PCI vendor ids a VM's disks commonly show in /sys/block/*/device/vendor.
PCI_VENDORS = {"0x1af4": "Red Hat virtio", "0x1b36": "QEMU", "0x15ad": "VMware", "0x1414": "Microsoft Hyper-V",
               "0x1d0f": "Amazon", "0x1ae0": "Google"}
DRIVERS = {"virtio_blk": "virtio block device (paravirtual)",
           "virtio_scsi": "virtio SCSI device (paravirtual)", "nvme": "NVMe", "sd": "SCSI/SATA disk",
           "xen_blkfront": "Xen paravirtual disk"}


def _read(path: Path | str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def parse_lscpu(text: str) -> dict[str, str]:
    """``lscpu``'s "Key: value" lines as a dict."""
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition(":")
        if sep and k.strip():
            out[k.strip()] = v.strip()
    return out


def _lscpu() -> dict[str, str]:
    try:
        r = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10,
                           env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_lscpu(r.stdout) if r.returncode == 0 else {}


def _int(v: Any) -> int | None:
    try:
        return int(str(v).split()[0])
    except (TypeError, ValueError, IndexError):
        return None


def cpu_from(lscpu: dict[str, str], cpuinfo_model: str | None, affinity: int | None) -> dict[str, Any]:
    """The CPU's model, sockets, cores and threads from lscpu's fields (the model name from /proc/cpuinfo
    where lscpu has none), and the CPUs this process may use."""
    sockets = _int(lscpu.get("Socket(s)"))
    per_socket = _int(lscpu.get("Core(s) per socket"))
    per_core = _int(lscpu.get("Thread(s) per core"))
    cores = sockets * per_socket if sockets and per_socket else None
    return {"model_name": lscpu.get("Model name") or cpuinfo_model, "vendor": lscpu.get("Vendor ID"),
            "family": lscpu.get("CPU family"), "model": lscpu.get("Model"), "stepping": lscpu.get("Stepping"),
            "sockets": sockets, "cores_per_socket": per_socket, "threads_per_core": per_core,
            "physical_cores": cores, "logical_cpus": _int(lscpu.get("CPU(s)")), "usable_cpus": affinity,
            "hypervisor": lscpu.get("Hypervisor vendor"), "virtualization": lscpu.get("Virtualization type"),
            "l3_cache": lscpu.get("L3 cache"), "numa_nodes": _int(lscpu.get("NUMA node(s)"))}


@functools.lru_cache(maxsize=1)
def cpu() -> dict[str, Any]:
    """This machine's CPU (see :func:`cpu_from`)."""
    from . import devices

    return cpu_from(_lscpu(), devices.cpu_model(), devices.cpu_count())


def disk(name: str, root: Path = SYS_BLOCK) -> dict[str, Any]:
    """One block device as /sys exposes it."""
    d = root / name
    driver = os.path.basename(os.path.realpath(d / "device" / "driver")) if (d / "device" / "driver").exists() else None
    vendor = _read(d / "device" / "vendor")
    sectors = _int(_read(d / "size"))
    rot = _read(d / "queue" / "rotational")
    sched = _read(d / "queue" / "scheduler")
    m = re.search(r"\[([^\]]+)\]", sched or "")
    mq = d / "mq"
    return {"name": name, "model": _read(d / "device" / "model") or None, "vendor": vendor,
            "vendor_name": PCI_VENDORS.get(vendor or "", vendor), "driver": driver,
            "rotational": None if rot is None else rot == "1", "nr_requests": _int(_read(d / "queue" / "nr_requests")),
            "hw_queues": len(list(mq.iterdir())) if mq.is_dir() else None,
            "scheduler": m.group(1) if m else sched, "write_cache": _read(d / "queue" / "write_cache"),
            "size_bytes": sectors * 512 if sectors is not None else None,
            "virtual": bool((driver or "").startswith(("virtio", "xen")) or name.startswith(("vd", "xvd"))
                            or (vendor or "") in PCI_VENDORS)}


def disks(root: Path = SYS_BLOCK) -> list[dict[str, Any]]:
    """Every real block device (no loop, ram, zram, optical), with a non-zero size."""
    if not root.is_dir():
        return []
    out = [disk(p.name, root) for p in sorted(root.iterdir()) if not SKIP_DEVICES.match(p.name)]
    return [d for d in out if d["size_bytes"]]


def disk_of(path: str | os.PathLike) -> str | None:
    """The block device (its /sys/block name) holding ``path``, a partition mapped to its disk."""
    from . import devices

    dev = os.path.basename(devices.storage_of(path).get("device", ""))
    if not dev:
        return None
    if (SYS_BLOCK / dev).exists():
        return dev
    part = Path("/sys/class/block") / dev
    parent = os.path.basename(os.path.dirname(os.path.realpath(part))) if part.exists() else ""
    return parent if parent and (SYS_BLOCK / parent).exists() else None


def collect(path: str | os.PathLike = ".") -> dict[str, Any]:
    """The CPU, every disk, and which disk holds ``path`` (the working directory: results and data)."""
    return {"cpu": cpu(), "disks": disks(), "working_disk": disk_of(path)}


def _size(n: int | None) -> str:
    if not n:
        return "size not exposed"
    for div, unit in ((2 ** 40, "TiB"), (2 ** 30, "GiB"), (2 ** 20, "MiB")):
        if n >= div:
            return f"{n / div:.3g} {unit}"
    return f"{n:,} bytes"


def cpu_words(c: dict[str, Any]) -> str:
    """E.g. "AMD EPYC (family 25, model 17), 1 socket, 2 cores, 1 thread per core, 2 CPUs usable; KVM VM"."""
    if not c:
        return "CPU not recorded"
    name = c.get("model_name") or "CPU model not exposed"
    gen = f" (family {c['family']}, model {c['model']})" if c.get("family") and c.get("model") else ""
    parts = []
    if c.get("sockets"):
        parts.append(f"{c['sockets']} socket{'s' if c['sockets'] != 1 else ''}")
    if c.get("physical_cores"):
        parts.append(f"{c['physical_cores']} core{'s' if c['physical_cores'] != 1 else ''}")
    if c.get("threads_per_core"):
        parts.append(f"{c['threads_per_core']} thread{'s' if c['threads_per_core'] != 1 else ''} per core")
    if c.get("usable_cpus"):
        parts.append(f"{c['usable_cpus']} CPUs usable to the run")
    vm = f"; a {c['hypervisor']} virtual machine" if c.get("hypervisor") else ""
    return f"{name}{gen}, {', '.join(parts)}{vm}" if parts else f"{name}{gen}{vm}"


def disk_words(d: dict[str, Any]) -> str:
    """E.g. "vda: virtio block device (paravirtual...), Red Hat virtio, 256 GiB, reports rotational (...)"."""
    what = DRIVERS.get(d.get("driver") or "", d.get("driver") or "driver not exposed")
    model = d.get("model") or (f"vendor {d['vendor_name']}" if d.get("vendor_name") else "model not exposed")
    if d.get("rotational") is None:
        rot = "rotational flag not exposed"
    elif d.get("virtual"):
        rot = ("flagged rotational (a virtual disk's default; the host's disk is hidden)" if d["rotational"]
               else "flagged non-rotational (as the VM exposes it; the host's disk is hidden)")
    else:
        rot = "rotational (spinning disk)" if d["rotational"] else "non-rotational (SSD)"
    q = f"queue depth {d['nr_requests']}" if d.get("nr_requests") else "queue depth not exposed"
    if d.get("hw_queues"):
        q += f" ({d['hw_queues']} hardware queue{'s' if d['hw_queues'] != 1 else ''})"
    sched = f", scheduler {d['scheduler']}" if d.get("scheduler") else ""
    return f"{d.get('name')}: {what}, {model}, {_size(d.get('size_bytes'))}, {rot}, {q}{sched}"


def words(h: dict[str, Any]) -> dict[str, str]:
    """The machine as two lines a caption or a page can print: "cpu" and "disk" (the working disk, or all)."""
    ds = h.get("disks") or []
    work = [d for d in ds if d.get("name") == h.get("working_disk")] or ds
    return {"cpu": cpu_words(h.get("cpu") or {}),
            "disk": "; ".join(disk_words(d) for d in work) if work else "disk not exposed"}

"""An emulated slower SSD by a read-IOPS cap (beside the memory budgets of paper section 5.1): a throttle on
the disk holding the embedding table, cgroup blkio (v1) or io.max (v2). Rows measured under it are labelled
``ssd = emulated``.

An IOPS cap limits throughput, not latency: a cap at or below the disk's own QD1 rate leaves the emulated
device no internal parallelism (paper section 2.3: SSDs need deep queues), so every reader ties by
construction. The cap is therefore only accepted as a *rated peak* well above the measured QD1 rate
(:func:`check_rated_peak`, at least ``MIN_PEAK_OVER_QD1`` times it); anything lower is refused. The
latency-based slower SSD, queue depth kept, is :mod:`.fuse_ssd`."""
from __future__ import annotations

import os
from pathlib import Path

from ...core.machine import cgroups
from .backends import BackendUnavailable
from .memory_budget import BudgetError

THROTTLE_V1 = "blkio.throttle.read_iops_device"
MIN_PEAK_OVER_QD1 = 4.0   # a rated peak must be at least this many times the disk's measured QD1 rate


class CapBelowQd1(BudgetError):
    """A read-IOPS cap that is not well above the disk's QD1 rate (it would remove the device's
    parallelism instead of emulating a slower device)."""


def check_rated_peak(iops: float, qd1_iops: float, factor: float = MIN_PEAK_OVER_QD1) -> None:
    """Refuse a read-IOPS cap below ``factor`` times the measured QD1 rate (:class:`CapBelowQd1`)."""
    if not qd1_iops > 0:
        raise CapBelowQd1(f"cannot check the read-IOPS cap {iops}: the disk's QD1 rate was not measured")
    if float(iops) < factor * float(qd1_iops):
        raise CapBelowQd1(
            f"emulated SSD read-IOPS cap {int(iops)} is below {factor:g}x this disk's measured QD1 rate "
            f"({qd1_iops:.0f} IOPS): an IOPS cap there removes the device's queue depth (every reader ties "
            "by construction). Give a rated peak well above QD1, or emulate a slower SSD by latency "
            "(espn.emulated_ssd.kind: latency)")


def block_device_of(path: str | os.PathLike) -> str:
    """``MAJ:MIN`` of the whole disk holding ``path`` (blkio and io.max throttle whole disks, not
    partitions); :class:`BudgetError` when the file is not on a block device (tmpfs, overlay)."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    sysd = Path("/sys/dev/block") / dev
    if not sysd.exists():
        raise BudgetError(f"{path} is on device {dev}, which is not a block device")
    if (sysd / "partition").exists():
        dev = (sysd.resolve().parent / "dev").read_text().strip()
    return dev


def blkio_available(path: str | os.PathLike, prepare: bool = False) -> tuple[bool, str]:
    """Whether a read throttle can be put on the disk holding ``path``: cgroup blkio (v1,
    ``blkio.throttle.read_iops_device``) or io.max (v2); (True, ``MAJ:MIN``) or (False, why).
    ``prepare``: on v2 also enable the io controller for children now."""
    ok, why = cgroups.available("io", THROTTLE_V1, prepare=prepare)
    if not ok:
        return False, why
    try:
        return True, block_device_of(path)
    except (OSError, BudgetError) as exc:
        return False, str(exc)


class BlkioThrottle(cgroups.ChildCgroup):
    """An emulated slower SSD: this process (all its threads) joins a child group that caps reads from
    the table's disk at ``iops`` (and ``bps`` bytes/s if given): v1 ``blkio.throttle.read_iops_device``
    (``read_bps_device``), v2 ``io.max`` ``MAJ:MIN riops=N rbps=M``. On v2, entered inside the worker's
    memory cap, it throttles that same group (a process has one v2 group). Undone on exit."""

    what = "cgroup read throttle (blkio v1 / io.max v2)"

    def __init__(self, path: str | os.PathLike, iops: int, name: str | None = None, bps: int | None = None,
                 qd1_iops: float | None = None):
        if qd1_iops is not None:
            check_rated_peak(iops, qd1_iops)
        ok, why = blkio_available(path)
        if not ok:
            raise BackendUnavailable(f"{self.what} unavailable: {why}")
        if int(iops) < 1:
            raise BudgetError(f"emulated SSD read IOPS must be >= 1, got {iops}")
        self.device, self.iops, self.bps = why, int(iops), None if bps is None else int(bps)
        try:
            super().__init__("io", "espn-blkio", name, control_file=THROTTLE_V1)
        except cgroups.CgroupUnavailable as exc:
            raise BackendUnavailable(str(exc)) from None

    def _controls(self) -> dict[str, str]:
        if self.version == "v2":
            return {"io.max": cgroups.io_max_line(self.device, riops=self.iops, rbps=self.bps)}
        out = {THROTTLE_V1: f"{self.device} {self.iops}"}
        if self.bps is not None:
            out["blkio.throttle.read_bps_device"] = f"{self.device} {self.bps}"
        return out

    def _reset(self) -> dict[str, str]:
        return {"io.max": cgroups.io_max_line(self.device, riops="max", rbps="max")}

    def read_iops(self) -> int | None:
        """The read-IOPS limit on the disk as the kernel holds it (v1 or v2 file), for checks."""
        f = self.path / ("io.max" if self.version == "v2" else THROTTLE_V1)
        try:
            lines = f.read_text().splitlines()
        except OSError:
            return None
        for parts in (line.split() for line in lines):
            if len(parts) > 1 and parts[0] == self.device:
                val = dict(p.split("=", 1) for p in parts[1:] if "=" in p).get("riops") \
                    if self.version == "v2" else parts[1]
                return int(val) if val and val.isdigit() else None
        return None


def _sys(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def disk_info(path: str | os.PathLike) -> dict:
    """The disk holding ``path`` as the OS reports it: name, model (or the driver and ids where the disk
    reports none, as virtio disks do), rotational flag, queue depth (``nr_requests``; hardware queues and
    tags per queue). Values the OS does not give are None."""
    try:
        dev = block_device_of(path)
    except (OSError, BudgetError) as exc:
        return {"disk_name": None, "disk_model": None, "disk_note": str(exc)}
    sysd = (Path("/sys/dev/block") / dev).resolve()
    q, d = sysd / "queue", sysd / "device"
    driver = os.path.basename(os.path.realpath(d / "driver")) if (d / "driver").exists() else None
    model = _sys(d / "model")
    if model is None:
        ids = ", ".join(f"{k} {v}" for k, v in (("vendor", _sys(d / "vendor")), ("device", _sys(d / "device"))) if v)
        model = f"no model reported ({driver or 'unknown driver'}{'; ' + ids if ids else ''})"
    mq = sorted((sysd / "mq").glob("*/nr_tags")) if (sysd / "mq").exists() else []
    rot = _sys(q / "rotational")
    nr = _sys(q / "nr_requests")
    return {"disk_name": sysd.name, "disk_model": model, "disk_driver": driver, "disk_serial": _sys(sysd / "serial"),
            "disk_rotational": None if rot is None else rot == "1",
            "disk_queue_depth": int(nr) if nr and nr.isdigit() else None,
            "disk_hw_queues": len(mq) or None, "disk_tags_per_queue": int(_sys(mq[0]) or 0) or None if mq else None}

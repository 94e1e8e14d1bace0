"""The machine named (issue 32): CPU from lscpu and /proc/cpuinfo, disks from /sys/block (model or vendor,
rotational flag, queue depth, driver such as virtio), in provenance and in words."""
from __future__ import annotations

import os

from bench.core.machine import hardware

from bench.core.measuring import provenance

LSCPU = """Architecture:            x86_64
CPU(s):                  2
Vendor ID:               AuthenticAMD
Model name:              AMD EPYC
CPU family:              25
Model:                   17
Thread(s) per core:      1
Core(s) per socket:      2
Socket(s):               1
Hypervisor vendor:       KVM
Virtualization type:     full
"""


def _disk(root, name, **files):
    d = root / name
    (d / "queue").mkdir(parents=True)
    (d / "device").mkdir()
    for rel, text in files.items():
        p = d / rel.replace("__", "/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text + "\n")
    return d


def test_cpu_from_lscpu():
    c = hardware.cpu_from(hardware.parse_lscpu(LSCPU), "ignored", 2)
    assert (c["model_name"], c["sockets"], c["physical_cores"], c["threads_per_core"], c["hypervisor"]) == \
        ("AMD EPYC", 1, 2, 1, "KVM")
    w = hardware.cpu_words(c)
    assert w.startswith("AMD EPYC (family 25, model 17), 1 socket, 2 cores, 1 thread per core") and "KVM" in w
    assert hardware.cpu_from({}, "Intel(R) Xeon(R)", 4)["model_name"] == "Intel(R) Xeon(R)"


def test_disks_from_sys_block(tmp_path):
    vda = _disk(tmp_path, "vda", size="536870912", queue__rotational="1", queue__nr_requests="256",
                queue__scheduler="none [mq-deadline] kyber", device__vendor="0x1af4")
    drv = tmp_path / "drivers" / "virtio_blk"
    drv.mkdir(parents=True)
    os.symlink(drv, vda / "device" / "driver")
    _disk(tmp_path, "nvme0n1", size="2000", queue__rotational="0", queue__nr_requests="1023",
          device__model="Samsung SSD 980")
    _disk(tmp_path, "loop0", size="100", queue__rotational="0")
    found = {d["name"]: d for d in hardware.disks(tmp_path)}
    assert set(found) == {"vda", "nvme0n1"}
    v = found["vda"]
    assert (v["driver"], v["rotational"], v["nr_requests"], v["scheduler"], v["virtual"], v["size_bytes"]) == \
        ("virtio_blk", True, 256, "mq-deadline", True, 256 * 2 ** 30)
    words = hardware.disk_words(v)
    assert "virtio block device" in words and "Red Hat virtio" in words and "256 GiB" in words
    assert "the host's disk is hidden" in words and "queue depth 256" in words
    assert "Samsung SSD 980" in hardware.disk_words(found["nvme0n1"]) and "non-rotational (SSD)" in \
        hardware.disk_words(found["nvme0n1"])


def test_provenance_names_the_hardware_and_keeps_its_keys():
    p = provenance.collect(profile="t", config={"a": 1}, seed=0)
    for key in ("cpu_model", "cpu", "cpu_cores", "gpu", "hostname"):   # the keys it had
        assert key in p
    assert p["hardware"]["cpu"]["model_name"] and isinstance(p["hardware"]["disks"], list)
    assert set(p["machine"]) == {"cpu", "disk"} and p["machine"]["cpu"]

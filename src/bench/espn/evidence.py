"""What several of ESPN's ledger rows rest on (:mod:`bench.espn.claims`, :mod:`.claims_batch`,
:mod:`.claims_quality`): the end-to-end records with the native disk's parallel-SSD premise (paper section 3:
the SSD serves many reads at once, the hardware the mechanism of sections 4-5 needs), where a row ran, and
the words every row uses for our scale against the paper's (MS MARCO v1, 8.8M passages, 16.8 GB BOW table)."""
from __future__ import annotations

import dataclasses

import pandas as pd

from ..core.judging import claims, fidelity
from .analysis import E2E

STUDY = "espn"
PAPER_SCALE = "16.8 GB BOW table, 8.8M passages (MS MARCO v1)"
SSD = ("parallel-ssd",)
JUDGED_ON_SSD = ("profile paper (or small) on a machine whose SSD serves many reads at once (an NVMe SSD, as the "
                 "paper's Samsung PM983 on PCIe 3.0)")


@dataclasses.dataclass
class Evidence:
    """The end-to-end records and the native disk's parallel-SSD premise (the evidence that a native row ran
    on an SSD of the kind the mechanism needs)."""

    e: E2E
    disk: claims.Premise
    work: str = ""     # the end-to-end work per process, and what the profile shrank (:func:`work_words`)
    shrunk: str = ""   # what the profile shrank so that its fresh processes fit (:data:`SHRUNK`)

    def ran_on(self, rows: pd.DataFrame) -> frozenset[str]:
        """Where ``rows`` ran: a native measured row on an SSD that serves many reads at once when the disk is
        an NVMe SSD by what the OS reports (:func:`nvme`) and the disk's premise does not fail (undecided, it
        is one of the row's premises, so the row is inconclusive). Parallelism alone does not make a device an
        SSD: a virtual disk can serve 32 reads at once from the host's cache. An emulated or modelled row ran
        on no real hardware of its kind."""
        return fidelity.ran_on(rows, SSD if self.disk.holds is not False and nvme(rows) else ())


def nvme(rows: pd.DataFrame) -> bool:
    """Whether every row's disk is an NVMe SSD by what the OS reports: an ``nvme`` device or driver, not
    rotational. A virtio, SCSI or unrecorded disk is not (the paper's is a Samsung PM983 on PCIe 3.0)."""
    if "disk_name" not in rows or rows["disk_name"].isna().any():
        return False
    words = rows["disk_name"].astype(str) + " " + rows.get("disk_driver", pd.Series("", index=rows.index)).astype(str)
    rotational = rows["disk_rotational"].fillna(True).astype(bool) if "disk_rotational" in rows else True
    return bool((words.str.lower().str.contains("nvme") & ~rotational).all())


def scale(prov: dict) -> str:
    b = prov.get("build", {})
    return (f"{b.get('table_bytes', 0) / 1e6:.0f} MB table, {b.get('n_real', 0):,} passages + "
            f"{b.get('n_filler', 0):,} synthetic records vs {PAPER_SCALE}")


def span(lo_hi) -> str:
    return f"{lo_hi[0]:g}-{lo_hi[1]:g}x"


# what each profile shrank so that its three fresh processes cost no more than two did (its work, never its
# repeats): said in the scale of every row the shrunk steps feed
SHRUNK = {"tiny": ("tiny shrinks the work, not the repeats, so that 3 fresh processes fit make run's budget: "
                   "queries a pass cut from 25 to 10, the 1.0 budget and batch 16 dropped, fewer probe pairs a "
                   "process, the emulated SSD not run")}


def work_words(e: E2E, queries: int, profile: str) -> str:
    """The end-to-end work behind a row: queries a pass, budgets, fresh processes, and what the profile shrank."""
    m = e.ok[e.ok.ssd == "native"]
    buds = sorted((b for b in m.budget.unique() if b != "unlimited"), key=float)
    procs = m.process.nunique() if len(m) else 0
    words = f"{queries} queries a pass, budgets {', '.join(buds)}, {procs} fresh processes"
    return words + (f" ({SHRUNK[profile]})" if profile in SHRUNK else "")

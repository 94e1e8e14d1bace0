"""Small synthetic ESPN record sets (every kind the figures and claims read), from the study's own synthetic
records (:mod:`bench.espn.synthetic`: three fresh processes of each timed step, the sizes from the paper's
widths), written with provenance as the steps write them. ``emulated``: "ok" (rows measured on the emulated
SSD) or "not_run"."""
from __future__ import annotations

import numpy as np
import pandas as pd

from bench.core.measuring import records
from bench.espn import STUDY, claims, synthetic

PARAMS_OVERRIDES = {"memory_budgets": [0.25, 0.5], "emulated_ssd": {"enabled": True, "latencies_us": [100]}}


def params():
    return STUDY.parameters(PARAMS_OVERRIDES)


def frames(emulated: str = "ok") -> dict[str, pd.DataFrame]:
    """``{kind: rows}`` with provenance in ``attrs``; the emulated SSD's rows replaced by not-run rows
    (not root) where ``emulated`` says so."""
    out = synthetic.records(params())
    if emulated != "ok":
        e = out["e2e"]
        keep = e[e.ssd != "emulated"]
        nr = pd.DataFrame([{"backend": k, "budget": "0.50", "phase": "measured", "status": "not_run",
                            "reason": "emulated SSD: needs a tool we lack: not root", "source": "not_run",
                            "ssd": "emulated", "ssd_emulation": "fuse-latency", "ssd_latency_us": 100.0,
                            "ssd_threads": 32, "machine_busy": False, "process": 0, "process_uid": "e2e-0"}
                           for k in ("mmap", "direct", "direct_prefetch")])
        out["e2e"] = pd.concat([keep, nr], ignore_index=True)
        out["e2e"].attrs = e.attrs
    swap = {"backend": "vm_swap", "budget": "0.50", "phase": "measured", "status": "not_run", "ssd": "native",
            "reason": "no swap space on this machine", "source": "not_run", "machine_busy": False, "process": 0,
            "process_uid": "e2e-0"}
    attrs = out["e2e"].attrs
    out["e2e"] = pd.concat([out["e2e"], pd.DataFrame([swap])], ignore_index=True)
    out["e2e"].attrs = attrs
    return out


def write(folder, data: dict[str, pd.DataFrame]) -> dict[str, list]:
    """``{kind: [path]}`` of ``data`` written in ``folder`` with each frame's provenance."""
    out = {}
    for kind, df in data.items():
        path = folder / f"{kind}.parquet"
        records.write(path, df, df.attrs.get("provenance", {}))
        out[kind] = [path]
    return out


def write_all(folder, emulated: str = "ok") -> dict[str, list]:
    """``{kind: [path]}`` for every record kind, in ``folder``."""
    return write(folder, frames(emulated))


def build(data: dict[str, pd.DataFrame]) -> dict:
    """``{claim id: row}`` of the claims built from ``data``."""
    return {r.claim_id: r for r in claims.build(data, params(), "t")}


def with_probes(data: dict[str, pd.DataFrame], ssd: str, qd1: float, qd32: float, pairs: int = 18,
                busy: bool = False, spread: float = 0.05) -> dict[str, pd.DataFrame]:
    """``data`` with device ``ssd``'s QD1/QD32 probe pairs replaced (spread over 3 fresh processes)."""
    rng = np.random.default_rng(1)
    e = data["e2e"]
    keep = e[~((e.phase == "probe") & (e.ssd == ssd))]
    tag = {} if ssd == "native" else {"ssd_emulation": "fuse-latency", "ssd_latency_us": 100.0, "ssd_threads": 32}
    new = pd.DataFrame([{"backend": "probe", "phase": "probe", "status": "ok", "reason": "", "ssd": ssd,
                         "source": "measured" if ssd == "native" else "emulated", "probe_point": f"p{j}",
                         "probe_pair": j, "process": j % 3, "process_uid": f"e2e-{j % 3}", "machine_busy": busy,
                         "probe_qd1_iops": qd1 * rng.lognormal(0, spread),
                         "probe_qd32_iops": qd32 * rng.lognormal(0, spread), **tag} for j in range(pairs)])
    out = dict(data)
    out["e2e"] = pd.concat([keep, new], ignore_index=True)
    out["e2e"].attrs = e.attrs
    return out

"""ESPN's reference for the O_DIRECT reader (the CPU stand-in for GPUDirect Storage, paper section 4.1): our
readers against fio on the same file."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure

from . import _shared as S


def _disk(df: pd.DataFrame) -> str:
    """The disk named, from the step's provenance (as the OS reports it)."""
    d = df.attrs.get("provenance", {}).get("disk") or {}
    if not d.get("disk_name"):
        return "The disk is not recorded in these records."
    rot = d.get("disk_rotational")
    return (f"The disk: {d['disk_name']}, {d.get('disk_model')}, rotational flag "
            f"{'?' if rot is None else int(bool(rot))} and queue depth {d.get('disk_queue_depth')} as the OS "
            "reports them (a VM's virtual disk may report itself rotational).")


@figure("iops", records=("iops",), title="our O_DIRECT reader against fio",
        claims=("target-reader-vs-fio",))
def iops(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["iops"]
    keys = ["tool", "engine", "qd", "source", "status"]
    g = (df.groupby(keys, dropna=False).iops.agg(["median", "min", "max", "size"])
         .rename(columns={"median": "iops", "size": "repeats"}).reset_index())
    g = g.sort_values(["qd", "tool", "engine"]).reset_index(drop=True)
    why = df.groupby(["tool", "engine", "qd"], dropna=False)["reason"].first() if "reason" in df else None
    g["reason"] = [(why.get((r.tool, r.engine, r.qd)) if why is not None else None) or "" for r in g.itertuples()]
    labels = [f"{r.tool} ({r.engine}), QD {r.qd}" for r in g.itertuples()]
    col = plotting.colors(g.tool)
    fig, (ax,) = plotting.start(w=7, h=1.2 + 0.45 * max(len(g), 1))
    ax.barh(labels, g.iops.fillna(0), color=[col[t] for t in g.tool],
            xerr=[g.iops - g["min"], g["max"] - g.iops], capsize=3)   # NaN (not run): no bar, no cap
    for i, r in enumerate(g.itertuples()):
        if r.status != "ok":
            ax.text(0, i, f"  not run: {r.reason or r.status}", va="center", fontsize=8, color="0.3")
    ax.invert_yaxis()
    ax.set_xlabel("4 KiB random-read IOPS (O_DIRECT, median of repeats, bars min-max)")
    ran = set(g[g.status == "ok"].tool)
    ax.set_title("our reader against fio on the embedding table" if "fio" in ran else
                 "our reader on the embedding table (fio not run: see its row)")
    n = int(g[g.status == "ok"].repeats.max()) if (g.status == "ok").any() else 0
    caption = ("Our O_DIRECT readers (thread pool of preadv; Linux native AIO) against fio on the same file in the "
               f"same job, 4 KiB random reads; median of {n} repeats, bars min-max. A row marked 'not run' says why "
               "(e.g. fio not installed); the table beside the figure carries the same reason. "
               + _disk(df))
    words = {"not_run": "not run"}   # the table a reader sees says it in words, as the figure does
    return plotting.save(fig, out_png, caption) + S.table(g.replace({"source": words, "status": words}), out_png)

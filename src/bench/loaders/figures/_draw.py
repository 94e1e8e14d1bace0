"""Drawing pieces the loaders figures (Moving Stuff Around, Figure 1 and Tables 1-3) share: grouped bars
with intervals, the paper's marker, the caption's scale and implementation text, Markdown tables."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.base.atomic import write_text
from .. import analysis as A

N_BOOT = 400  # bootstrap resamples of the drawn intervals (the claims use the core default)
P_STYLE = {**plotting.PAPER_STYLE}
CPU = "CPU stand-in: DP = one replica per thread in one process; DDP = one process per replica (gloo)"


# Colours for series that are not loaders (modes, processes): the loaders' own colours (blue, orange and
# green: plotting.colors over the paper's three loaders, in every grid figure) are left out.
NON_LOADER = [plotting.COLORBLIND[i] for i in (3, 6, 7, 4, 9, 8)]


def other_colors(names) -> dict:
    """One colour per series that is not a loader, none of them a loader's colour (sorted names)."""
    names = sorted(dict.fromkeys(names))
    return {n: NON_LOADER[i % len(NON_LOADER)] for i, n in enumerate(names)}


def impl(df: pd.DataFrame) -> str:
    """What ran as DP and DDP, from the records (older records without the column: the CPU stand-ins)."""
    ran = A.implementations(df)
    return "ran as: " + "; ".join(ran) if ran else CPU


def scale(df: pd.DataFrame) -> str:
    prov = df.attrs.get("provenance", {})
    n_docs, mb = A.collection(df)
    r = df[df.kind == "step"] if "kind" in df else df
    bpr = int(r.batch_per_replica.iloc[0]) if "batch_per_replica" in r and len(r) else "?"
    ml = int(r.max_length.iloc[0]) if "max_length" in r and len(r) else "?"
    model = f", batch {bpr} per replica, max length {ml}, cut-down MiniLM" if bpr != "?" else ""
    gpu = (prov.get("gpu") or {}).get("gpu_model") if prov.get("device") == "cuda" else None
    return (f"ours: {gpu or prov.get('cpu_model', 'this CPU')}, profile {prov.get('profile', '?')}, "
            f"{n_docs} documents ({mb:.0f} MB){model}")


def label(par, n):
    return f"{par.upper()} {n}"


def grouped(ax, groups, hues, values, colors, width=0.8, hatch=None, label_suffix=""):
    """Bars at x = group index, one per hue; ``values[(g, h)] = (est, lo, hi)`` or a string (a note)."""
    w = width / max(len(hues), 1)
    for j, h in enumerate(hues):
        for i, g in enumerate(groups):
            v = values.get((g, h))
            x = i - width / 2 + (j + 0.5) * w
            if isinstance(v, str):
                ax.text(x, 0.02, v, rotation=90, ha="center", va="bottom", fontsize="x-small", color="0.2",
                        transform=ax.get_xaxis_transform())
            elif v is not None and np.isfinite(v[0]):
                ax.bar(x, v[0], w, color=colors[h], hatch=hatch, label=f"{h}{label_suffix}" if i == 0 else None,
                       edgecolor="white")
                if v[1] is not None and np.isfinite(v[1]) and v[2] != v[1]:
                    ax.errorbar(x, v[0], yerr=[[v[0] - v[1]], [v[2] - v[0]]], color="0.2", capsize=2, lw=1)
    ax.set_xticks(range(len(groups)), [label(*g) if isinstance(g, tuple) else g for g in groups])
    return [i - width / 2 + (j + 0.5) * w for i in range(len(groups)) for j in range(len(hues))]


def xpos(i, j, n_hues, width=0.8):
    return i - width / 2 + (j + 0.5) * width / max(n_hues, 1)


def fmt_cell(v, pct=None):
    if isinstance(v, str):
        return v
    if v is None:
        return "-"
    s = f"{v[0]:.1f} [{v[1]:.1f}, {v[2]:.1f}]"
    return s + (f" ({pct[0]:+.1f}%)" if pct is not None and not isinstance(pct, str) else "")


def md_table(df: pd.DataFrame) -> str:
    cols = [str(c) if not isinstance(c, tuple) else " ".join(map(str, c)) for c in df.columns]
    head = "| " + " | ".join([str(df.index.name or "")] + cols) + " |"
    rule = "|" + "---|" * (len(cols) + 1)
    body = ["| " + " | ".join([str(i)] + [str(v) for v in row]) + " |" for i, row in zip(df.index, df.to_numpy())]
    return "\n".join([head, rule, *body])


def markdown(df: pd.DataFrame, path: Path, title: str, note: str) -> Path:
    """A Markdown table (cells already formatted as text) with a title and a note."""
    write_text(path, f"# {title}\n\n{md_table(df)}\n\n{note}\n")
    return path

"""Beyond Moving Stuff Around, with no model: samples/s each loader delivers (``loader_only`` records), and
the private memory of each DataLoader worker over the batches (``workers`` records: copy-on-read)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...core.judging import claims as core_claims

from ...core.judging import intervals
from ...core.presenting import plotting
from ...core.presenting.figures import figure
from . import _draw as D


@figure("loader_only_throughput", records=("loader_only",), title="samples/s each loader delivers, no model")
def loader_only_throughput(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["loader_only"]
    m = df[df.phase == "measured"]
    loaders, modes = list(dict.fromkeys(m.loader)), list(dict.fromkeys(m["mode"]))
    col = D.other_colors(modes)
    vals = {(l, mo): intervals.bootstrap_ci(g.samples_per_s, n_boot=D.N_BOOT)
            for (l, mo), g in m.groupby(["loader", "mode"])}
    fig, (ax,) = plotting.start(1, w=7.5, h=4)
    for j, mo in enumerate(modes):  # points, not bars: a log axis has no zero for bars to start from
        for i, l in enumerate(loaders):
            if (v := vals.get((l, mo))) is not None:
                ax.errorbar(D.xpos(i, j, len(modes)), v[0], yerr=[[v[0] - v[1]], [v[2] - v[0]]], fmt="o",
                            color=col[mo], capsize=3, label=mo if i == 0 else None)
    ax.set_xticks(range(len(loaders)), loaders)
    ax.set_yscale("log")
    ax.set(ylabel="samples/s (one process, one thread)", title="loader-only throughput (no model)")
    plotting.legend_below(fig, ncol=2)
    cap = (f"Beyond the paper: samples/s each loader delivers with no model, in one process and one thread "
           f"(a sample = a query, its positive and a random negative document): 'lookup' reads the two "
           f"documents, 'lookup+tokenize' adds the collate function's tokenization (two pairs per sample). "
           f"Median of {m.groupby(['loader', 'mode']).size().min()} repeats (95% bootstrap interval), warm-up "
           f"excluded. A faster accelerator cannot train faster than this rate per data-loading core. "
           f"No paper value (the paper does not measure it). Scale: {D.scale(df)}.")
    return plotting.save(fig, out_png, cap)


WORKER_LINES = ["-", ":", "-.", (0, (5, 2, 1, 2, 1, 2))]


def _series(w, k) -> str:
    """The series name of worker ``k`` (main process: k < 0) of a run with ``w`` DataLoader workers."""
    w, k = int(w), int(k)
    return f"{w} worker{'' if w == 1 else 's'}: {'main process' if k < 0 else f'worker {k}'}"


@figure("worker_memory_growth", records=("workers",), title="memory of each DataLoader worker over batches")
def worker_memory_growth(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["workers"]
    loaders = list(dict.fromkeys(df.loader))
    series = sorted({_series(w, k) for w, k in zip(df.num_workers, df.worker)})
    mains = [s for s in series if "main" in s]   # main processes in greys, workers in no loader's colour
    col = {**D.other_colors(s for s in series if s not in mains),
           **{s: str(round(0.2 + 0.4 * i / max(1, len(mains) - 1), 2)) for i, s in enumerate(mains)}}
    fig, axes = plotting.start(len(loaders), w=5, h=4, sharey=True)
    for ax, l in zip(axes, loaders):
        g = df[df.loader == l]  # every reading: before the first batch too (the fork), as hollow markers
        for (w, k), s in g.groupby(["num_workers", "worker"]):
            name = _series(w, k)
            s = s.sort_values("t_rel_s")
            # coinciding workers stay apart: each its own marker and line style, later workers' smaller
            # markers and broken lines drawn over earlier ones' larger markers and solid lines
            k = int(k)
            mk, ls = ("s", "--") if k < 0 else ("ox+1234"[k % 7], WORKER_LINES[k % len(WORKER_LINES)])
            ax.plot(s.t_rel_s, s.uss_bytes / 1e6, color=col[name], label=name, ls=ls, marker=mk,
                    ms=7 if k < 0 else max(4, 9 - 2 * k), mew=1.8, lw=1.5 if k <= 0 else 2, zorder=2 + max(k, 0))
            early = s[s.phase != "measured"]
            ax.plot(early.t_rel_s, early.uss_bytes / 1e6, ls="none", marker="o", ms=11, mfc="none", mec=col[name],
                    mew=1.5, zorder=3)
        ax.set(title=l, ylabel="USS (MB, private pages)", xlabel="seconds (ringed: loading the collection)")
    plotting.legend_below(fig, ncol=3)
    cap = ("Beyond the paper: private memory (USS) of the main process and of each DataLoader worker over "
           "time while batches are delivered (no model); every reading is a marker, ringed while the "
           "process loads the collection (before its workers start). Where workers' lines coincide, each keeps its own marker and line style (solid, dotted, dash-dot), the later worker drawn on top. "
           + _start_method_text(df.attrs.get("provenance", {}).get("dataloader_default_start_method", "fork"))
           + f" Scale: {D.scale(df)}.")
    return plotting.save(fig, out_png, cap)


def _start_method_text(method: str) -> str:
    """What the workers' memory shows, by how they were started (the records' provenance)."""
    if method == "fork":
        return ("Workers are forked: pages of the dict loader's Python objects that a worker reads get copied "
                "into it as their reference counts change (copy-on-read, a long-standing PyTorch issue), so its "
                "USS grows with the documents it touches (the main process's USS drops when the workers fork: "
                "its pages become shared with them); loaders whose data lives in files or numpy/Arrow buffers "
                "do not grow so.")
    return (f"Workers are started by {method}: each unpickles its own copy of the loader (no pages shared "
            "with the main process, so no copy-on-read): a dict loader's worker holds a private copy of the "
            "whole collection from its start.")

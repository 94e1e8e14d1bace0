"""Table 3 of Moving Stuff Around drawn from the ``options`` records: samples/s and memory of each option
(pin_memory, DataLoader workers, RAMDISK; beyond the paper, worker start method and a cold page cache)
against the baseline, beside the paper's rows of the same setting."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis as A
from .. import paper_values as P
from . import _draw as D


def _paper_key(rid: str):
    """The paper's Table 3 row of the same setting as our run ``rid``, or None (never a row of another
    setting: our "pin_memory+2 workers+ramdisk" is not the paper's 8-worker row)."""
    opt, _, val = rid.partition("=")
    if opt.startswith("pin_memory+") and opt.endswith("ramdisk"):
        opt, val = opt, "-"
    key = (opt, val)
    return key if key in P.TABLE3 else None


def _paper_rel(key, col: int = 0):
    """The paper's value against its baseline (samples/s: col 0; memory: col 1), as a ratio."""
    return None if key is None else P.TABLE3[key][col] / P.TABLE3[("baseline", "-")][col]


def _option_rows(r) -> list[str]:
    """Our runs in their order, then the paper's Table 3 rows we did not run (their own rows)."""
    ours = list(dict.fromkeys(r.run_id))
    have = {_paper_key(rid) for rid in ours}
    return ours + [f"{o}={v}" for (o, v) in P.TABLE3 if (o, v) not in have]


def _unrun_why(df) -> str:
    w = df.attrs.get("provenance", {}).get("options", {}).get("num_workers")
    return f"this profile runs num_workers {', '.join(map(str, w))} only" if w else "not in this profile"


def _option_cells(df):
    st = A.steps(df)
    r = A.runs(df)
    order = _option_rows(r)
    base = A.tput(st, run_id="baseline=-")
    base_mem = A.mem(df, "baseline=-")
    cells, rel, mem, notes = {}, {}, {}, {}
    for rid in order:
        rows = r[r.run_id == rid]
        v = A.tput(st, run_id=rid)
        if rows.empty or rows.iloc[0].status != "ok" or not v.size:
            notes[rid] = str(rows.iloc[0].get("why") or rows.iloc[0].status) if len(rows) else _unrun_why(df)
            continue
        cells[rid] = A.tput_estimate(st, run_id=rid)
        if base.size:   # the ratio the Table 3 rows judge: same function, base and interval
            e, lo, hi = A.tput_ratio(st, {"run_id": rid}, {"run_id": "baseline=-"})
            rel[rid] = (100 * (e - 1), 100 * (lo - 1), 100 * (hi - 1))
        if A.mem(df, rid).size and base_mem.size:
            mem[rid] = A.mem_ratio(df, rid, "baseline=-")
    return order, cells, rel, mem, notes, A.per_run(r)


def _option_panel(ax, order, vals, col, title):
    for i, rid in enumerate(order):
        if (v := vals.get(rid)) is not None:
            ax.errorbar(v[0], i, xerr=[[v[0] - v[1]], [v[2] - v[0]]], fmt="o", color=col, ecolor="0.3", capsize=2,
                        lw=1, label="ours (measured; samples/s: average of steps, memory: median; 95% CI over rounds)")
    ax.set_title(title)


PAPER_DY = 0.3   # on a row with our dot, the paper's star sits this far below it, so neither hides the other


def _option_paper(ax, order, col: int, pct: bool, ours, n):
    for i, rid in enumerate(order):
        if (pv := _paper_rel(_paper_key(rid), col)) is not None:
            ax.plot(100 * (pv - 1) if pct else pv, i + (PAPER_DY if rid in ours else 0), **D.P_STYLE,
                    label=f"paper's Table 3, 4 GPUs (ours: {n} replicas); computed; just below ours where we ran it")


def _table3_md(df, order, cells, rel, notes, runs, out_png: Path) -> Path:
    md_rows = {rid: [(D.fmt_cell(cells[rid], rel.get(rid)) if rid in cells else f"not run ({notes.get(rid, '')})"),
                     (f"{runs.loc[rid].pss_peak_bytes / A.GB:.3f}" if rid in cells else "-"),
                     (f"{100 * (v - 1):+.1f}%" if (v := _paper_rel(_paper_key(rid))) is not None else "-"),
                     (f"{P.TABLE3[k][1]:.2f}" if (k := _paper_key(rid)) else "-")] for rid in order}
    t = pd.DataFrame(md_rows, index=["samples/s [95% CI] (% vs baseline)", "memory GB (summed PSS peak, mean of rounds)",
                                     "paper: % vs baseline (computed from Table 3)", "paper: memory GB"]).T
    t.index.name = "option"
    o = df.attrs.get("provenance", {}).get("options", {})
    return D.markdown(t, out_png.with_suffix(".md"), "Table 3: options on the paper's chosen configuration",
                      f"Configuration: {o.get('loader', '?')}, {str(o.get('parallel', '?')).upper()}, "
                      f"{o.get('replicas', '?')} replicas. {D.scale(df)}. Paper: ir_datasets, DDP, 4 GPUs.")


def _caption(df, o: dict, n) -> str:
    stand_in = ("" if A.on_cuda(df) else " CPU stand-in: the Table 3 rows need the paper's 4 GPUs (a worker, "
                "pinned memory or RAMDISK shows only against a GPU's step time), so the ledger marks them 'needs "
                "hardware we lack'; they are drawn here, and never judge.")
    return (f"Table 3 of the paper, measured. The paper's setting: {o.get('loader', '?')}, DDP on 4 GPUs "
            f"({P.TABLE3_SETTING[1]}); ours: {o.get('loader', '?')}, {str(o.get('parallel', '?')).upper()} on {n} "
            f"replicas, so the stars (the paper's 4 GPUs) and our dots (our {n} replicas) are not one setting. The "
            f"paper's quantity: \"{P.SAMPLES_PER_S[0]}\"; ours: the average over measured steps of samples of all "
            f"replicas over the slowest rank's step, and memory as the median summed PSS during the measured steps. "
            f"Dots: ours with the ledger's 95% intervals ({A.n_rounds(A.steps(df))} rounds of fresh processes "
            f"resampled first, then steps or readings), as a % change or ratio against the baseline (no workers, no "
            f"pin_memory, page cache warm); stars: computed from the paper's Table 3, on the row of the same option "
            f"only (just below our dot where we ran it). Rows the paper has and this profile did not run (more "
            f"workers than it runs, pin_memory without CUDA) say why. RAMDISK adds the copied files' size to memory, "
            f"as the paper does. Beyond the paper: worker start method and a cold page cache, where run.{stand_in} "
            f"Scale: {D.scale(df)}; {P.SCALE}.")


@figure("table3_options", records=("options",), title="Table 3: pin_memory, workers, RAMDISK",
        claims=("one-worker-helps", "eight-workers-hurt", "pin-memory-plus-workers-best", "ramdisk-no-gain"))
def table3_options(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    df = data["options"]
    o = df.attrs.get("provenance", {}).get("options", {})
    n = o.get("replicas", "?")
    order, cells, rel, mem, notes, runs = _option_cells(df)
    col = plotting.colors(["ours"])["ours"]
    labels = [rid.removesuffix("=-") for rid in order]
    fig, (a, b, c) = plotting.start(3, w=14 / 3, h=0.42 * len(order) + 2, sharey=True,
                                    gridspec_kw={"width_ratios": [1.2, 1, 1]})
    _option_panel(a, order, cells, col, f"ours: samples/s ({n} replicas)")
    _option_panel(b, order, rel, col, "samples/s: % vs baseline")
    _option_panel(c, order, dict(mem), col, "memory: x baseline (summed PSS)")
    for i, rid in enumerate(order):
        if rid in notes:
            a.text(0.02, i, "not run: " + notes[rid], va="center", fontsize="x-small", color="0.25",
                   transform=a.get_yaxis_transform())
    _option_paper(b, order, 0, pct=True, ours=rel, n=n)
    _option_paper(c, order, 1, pct=False, ours=mem, n=n)
    for ax in (b, c):
        ax.margins(x=0.12)   # no dot on the frame
    a.set_yticks(range(len(order)), labels, fontsize="small")
    a.invert_yaxis()
    b.axvline(0, color="0.5", lw=0.8)
    c.axvline(1, color="0.5", lw=0.8)
    a.set_xlabel("samples/s (all replicas)")
    b.set_xlabel("% samples/s vs the baseline")
    c.set_xlabel("memory / the baseline's memory (x)")
    plotting.legend_below(fig, ncol=2)
    md = _table3_md(df, order, cells, rel, notes, runs, out_png)
    cap = _caption(df, o, n)
    return [*plotting.save(fig, out_png, cap), md]

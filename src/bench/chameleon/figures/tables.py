"""Chameleon's Tables 2, 3 and 4 beside ours: the RALM models (Table 2) and vector datasets (Table 3) as
they ran, read from the ralm and search records (rows and provenance), never from the profile, beside the
paper's values (``paper_values``, each with where it is in the paper); Table 4 (FPGA resources) is the
paper's only: it needs an FPGA, so ours is marked not run and no number of ours is drawn."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from ...core.presenting import plotting
from ...core.presenting.figures import figure
from .. import analysis, paper_values
from ._draw import log_dots, paper_point, where, write_csv, write_md_tables

PAPER_ROW = "#e8e8e8"      # the paper's rows of a table: grey background, "paper" in the scale column
OURS_LABEL = "ours (records)"
PAPER_LABEL = "paper"


def _num(v, unit: str = "") -> str:
    """A plain number for a table cell: 1E+9 -> 1B, 20000 -> 20K, nan -> 'not recorded'."""
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "not recorded"
    v = float(v)
    for div, suf in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suf}{unit}"
    return f"{v:.3g}{unit}"


def _size(mb: float) -> str:
    if not np.isfinite(mb):
        return "not recorded"
    return f"{mb / 1e3:.3g} GB" if mb >= 1e3 else f"{mb:.3g} MB"


def _table(ax, header: list[str], rows: list[list[str]], paper_rows: list[bool], title: str) -> None:
    ax.set_axis_off()
    t = ax.table(cellText=rows, colLabels=header, loc="upper center", cellLoc="center")
    t.auto_set_font_size(False)
    t.set_fontsize(8.5)
    t.auto_set_column_width(range(len(header)))   # each column as wide as its text: no header clipped
    t.scale(1, 1.35)
    for (r, _), cell in t.get_celld().items():
        if r == 0:
            cell.set_text_props(weight="bold")
        elif paper_rows[r - 1]:
            cell.set_facecolor(PAPER_ROW)
    ax.set_title(title, fontsize="medium", loc="left")


def table2_rows(models: pd.DataFrame) -> tuple[list[str], list[list[str]], list[bool]]:
    """Table 2, the paper's row then ours per model."""
    header = ["model", "whose", "dim", "layers (enc, dec)", "heads", "params", "interval(s)", "K", "vocab",
              "tokens/seq", "retrieves from"]
    rows, paper = [], []
    ours = {r.model: r for r in models.itertuples()}
    for m in [*analysis.TABLE2_ORDER, *[m for m in ours if m not in analysis.TABLE2_ORDER]]:
        p = paper_values.TABLE2.get(m)
        if p:
            enc = f"{p['enc_layers']}, {p['layers']}" if p["enc_layers"] else str(p["layers"])
            rows.append([m, PAPER_LABEL, str(p["d_model"]), enc, str(p["heads"]), f"{p['params_m']}M",
                         "/".join(map(str, p["intervals"])), str(p["k"]), _num(paper_values.LM_VOCAB),
                         str(paper_values.LM_SEQ_TOKENS), paper_values.RALM_DATASET[analysis.model_size(m)] + " (1B)"])
            paper.append(True)
        o = ours.get(m)
        if o is None:
            rows.append([m, OURS_LABEL, *["not run"] * 9])
        else:
            rows.append([m, OURS_LABEL, *_ours_model_cells(o)])
        paper.append(False)
    return header, rows, paper


def _ours_model_cells(o) -> list[str]:
    get = lambda k: getattr(o, k, None)  # noqa: E731  (older records carry fewer columns)
    enc = int(get("enc_layers") or 0)
    layers = f"{enc}, {int(o.layers)}" if enc else str(int(o.layers))
    ints = "/".join(str(int(i)) for i in o.intervals)
    seq = get("seq_len")
    return [str(int(o.d_model)), layers, str(get("heads") or "not recorded"), _num(get("params")), ints,
            str(get("k") or "not recorded"), _num(get("vocab")),
            str(int(seq) - 1) + " generated" if seq else "not recorded", str(o.dataset)]


def table3_rows(ds: pd.DataFrame) -> tuple[list[str], list[list[str]], list[bool]]:
    """Table 3, the paper's column then ours per dataset (transposed: one row per dataset and source)."""
    header = ["dataset", "whose", "vectors", "D", "m", "nlist", "nprobe", "K", "raw vectors", "PQ codes + ids"]
    rows, paper = [], []
    ours = {r.dataset: r for r in ds.itertuples()}
    names = list(dict.fromkeys([*paper_values.TABLE3_OF, *ours]))
    for name in names:
        pname = paper_values.TABLE3_OF.get(name)
        p = paper_values.TABLE3.get(pname)
        if p:
            rows.append([pname, PAPER_LABEL, _num(p["n"]), str(p["dim"]), str(p["m"]), f"{p['nlist']:,}",
                         str(paper_values.PAPER_NPROBE), str(paper_values.PAPER_K), f"{p['raw_gb']:,} GB",
                         f"{p['pq_gb']} GB"])
            paper.append(True)
        o = ours.get(name)
        cells = (["not run"] * 8 if o is None else
                 [_num(o.n_base), str(int(o.dim)) if np.isfinite(o.dim) else "not recorded", str(int(o.m)), f"{int(o.nlist):,}", str(int(o.nprobe)), str(int(o.k)),
                  _size(o.raw_mb), _size(o.pq_mb)])
        rows.append([name, OURS_LABEL, *cells])
        paper.append(False)
    return header, rows, paper


def _count_ticks(ax) -> None:
    """Log-axis labels as 20K / 1M / 1B at the decades only."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import LogLocator, NullFormatter

    ax.yaxis.set_major_locator(LogLocator(base=10, numticks=12))
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: _num(v)))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _scale_panels(a_par, a_vec, models: pd.DataFrame, ds: pd.DataFrame) -> None:
    """Parameters per model and vectors per dataset, ours (dots) beside the paper's (stars), log axes."""
    ms = list(models.model)
    x = np.arange(len(ms))
    pp = np.array([paper_values.TABLE2.get(m, {}).get("params_m", np.nan) for m in ms], dtype=float) * 1e6
    if "params" in models:
        log_dots(a_par, x - 0.12, models.params, color=plotting.COLORBLIND[0], label=OURS_LABEL)
        a_par.set_ylim(min(models.params.min(), np.nanmin(pp)) / 3, np.nanmax(pp) * 3)
    else:
        a_par.text(0.5, 0.5, "ours: parameter counts not in these ralm records", transform=a_par.transAxes,
                   ha="center", va="center", fontsize="small", color="0.3")
        a_par.set_yscale("log")
    paper_point(a_par, x + 0.12, pp, "Tables 2, 3")
    _count_ticks(a_par)
    a_par.set_xticks(x, ms)
    a_par.set_xlim(-0.5, len(ms) - 0.5)
    a_par.set(ylabel="parameters", title="model size: ours vs Table 2")
    order = {n: i for i, n in enumerate(paper_values.TABLE3_OF)}
    ds = ds.sort_values("dataset", key=lambda s: s.map(lambda n: order.get(n, 99)))
    x = np.arange(len(ds))
    log_dots(a_vec, x - 0.12, ds.n_base, color=plotting.COLORBLIND[0], label=OURS_LABEL)
    pv = [paper_values.TABLE3.get(paper_values.TABLE3_OF.get(n), {}).get("n", np.nan) for n in ds.dataset]
    paper_point(a_vec, x + 0.12, pv, "Tables 2, 3")
    _count_ticks(a_vec)
    a_vec.set_xticks(x, list(ds.dataset))
    a_vec.set_xlim(-0.5, len(ds) - 0.5)
    a_vec.set(ylabel="database vectors", title="database size: ours vs Table 3")
    a_vec.set_ylim(min(ds.n_base.min(), 1e9) / 3, 3e9)


TABLES23_CAPTION = (
    "Tables 2 and 3 of Chameleon beside ours. Grey rows: the paper's values ({w2}; {w3}); white rows: what "
    "our run used, read from the ralm records' provenance (each model as built: dimension, layers, heads, "
    "parameters counted from the torch model, intervals, K, vocabulary, generated steps, dataset) and the "
    "search records' rows (vectors, D, m, nlist, nprobe, K), never from the profile; raw-vector and PQ-code "
    "sizes computed from those (n x D x 4 B; n x (m + 8) B, the paper's own arithmetic). The paper: full-size "
    "models, 1B-vector datasets; ours: the profile's scaled models (random weights) and datasets. Bottom: "
    "parameters and database vectors, ours (dots) beside the paper's (stars) on log axes. {where}.")


@figure("tables23", records=("ralm", "search"), title="Tables 2 and 3: RALM models and vector datasets")
def tables23(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    models, ds = analysis.ralm_models(data["ralm"]), analysis.search_datasets(data["search"])
    fig, axes = plotting.start(2, 3, w=8.2, h=2.9, gridspec_kw={"height_ratios": [1.25, 1.25, 1.1]})
    gs = axes[0].get_gridspec()
    for ax in axes[:4]:
        ax.remove()
    t2, t3 = fig.add_subplot(gs[0, :]), fig.add_subplot(gs[1, :])
    t2_rows, t3_rows = table2_rows(models), table3_rows(ds)
    _table(t2, *t2_rows, "Table 2: RALM models (the paper's full size vs ours, scaled)")
    _table(t3, *t3_rows, "Table 3: vector datasets (the paper's 1B vectors vs ours)")
    _scale_panels(axes[4], axes[5], models, ds)
    plotting.legend_below(fig, ncol=2)
    write_csv(pd.concat([models.assign(table="2"), ds.assign(table="3")]), out_png)
    write_md_tables(out_png, [("Table 2: RALM models, the paper's (grey in the figure) and ours", *t2_rows[:2]),
                              ("Table 3: vector datasets, the paper's and ours", *t3_rows[:2])])
    return plotting.save(fig, out_png, TABLES23_CAPTION.format(w2=paper_values.TABLE2_WHERE,
                                                               w3=paper_values.TABLE3_WHERE,
                                                               where=where(data["ralm"].attrs.get("provenance", {}))))


# --------------------------------------------------------------------------- Table 4
TABLE4_WHY = ("needs an FPGA: no AMD Alveo U250 (or any FPGA) here; the ChamVS node is modelled "
              "elsewhere in this study only for latency (figures model, fig9), never for resources")
TABLE4_MARKERS = {"SIFT": "*", "Deep": "P", "SYN-512": "D", "SYN-1024": "X"}


def _table4_paper(ax) -> None:
    res = paper_values.TABLE4_RESOURCES
    x = np.arange(len(res))
    for j, (ds, vals) in enumerate(paper_values.TABLE4.items()):
        mk = TABLE4_MARKERS[ds]
        ax.plot(x + (j - 1.5) * 0.14, vals, **{**plotting.PAPER_STYLE, "marker": mk, "markersize": 12 if mk == "*" else 7.5},
                label=plotting.label_source(f"Table 4, {ds}", "paper"))
    ax.set_xticks(x, [f"{r}\n(of {paper_values.U250_TOTALS[r]})" for r in res])
    ax.set(ylabel="share of the U250's resources (%)", ylim=(0, 40),
           title="paper: the ChamVS accelerator's FPGA resources")


def _table4_rows() -> tuple[list[str], list[list[str]], list[bool]]:
    header = ["dataset", "whose", *paper_values.TABLE4_RESOURCES]
    rows, paper = [], []
    for ds, vals in paper_values.TABLE4.items():
        rows.append([ds, PAPER_LABEL, *[f"{v:.1f}%" for v in vals]])
        rows.append([ds, "ours", *["not run"] * len(vals)])
        paper += [True, False]
    return header, rows, paper


@figure("table4", records=("search",), title="Table 4: FPGA resources (paper only; not run: needs an FPGA)")
def table4(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]:
    fig, (a_paper, a_ours, a_tab) = plotting.start(3, w=4.6, h=3.8, gridspec_kw={"width_ratios": [1.2, 0.8, 1.3]})
    _table4_paper(a_paper)
    plotting.not_run(a_ours, "\n".join(textwrap.wrap(TABLE4_WHY, 34)))
    a_ours.set_title("ours: FPGA resources", fontsize="medium")
    _table(a_tab, *_table4_rows(), "Table 4 (grey: paper; ours not run)")
    plotting.legend_below(fig, ncol=4)
    prov = data["search"].attrs.get("provenance", {})
    return plotting.save(fig, out_png, (
        f"Table 4 of Chameleon (FPGA resources of the ChamVS near-memory accelerator per dataset's build, "
        f"share of an AMD Alveo U250: LUT, FF, BRAM, URAM, DSP), the paper's values only ({paper_values.TABLE4_WHERE}). "
        f"Ours: not run, {TABLE4_WHY}; no number of ours is drawn. {where(prov)}."))

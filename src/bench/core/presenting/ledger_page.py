"""The claims ledger shown to a reader: one self-contained HTML page (counts per kind first, the verdict
legend, the tables) and one figure (verdict counts per study, paper claims and harness targets in two
panels). The rows, their order, history and stability come from :mod:`bench.core.judging.ledger`."""
from __future__ import annotations

import html
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..base.atomic import write_text
from ..judging import ledger
from ..judging.claims import VERDICTS
from ..judging.ledger import HEADINGS, HISTORY_RUNS, KINDS, VERDICT_COLORS, row_cells, scale_notes, clean, counts


def to_html(df: pd.DataFrame, title: str) -> str:
    """The ledger as one self-contained page: counts first (per kind), the verdict legend, the tables."""
    scale, notes = scale_notes(df)
    legend = " ".join(f"<span class='v' style='background:{VERDICT_COLORS[v]}'>{v}</span>" for v in VERDICTS)
    body = [f"<h1>{html.escape(title)}</h1><p>{legend}</p>"]
    head = "".join(f"<th>{h}</th>" for h in ("study", "claim", "paper", "ours [95% CI]", "threshold", "scale",
                                              "source", "verdict", "history", "reason"))
    for kind in KINDS:
        part = df[df.kind == kind]
        unstable = int(part.get("unstable", pd.Series(dtype=bool)).sum())
        rows = []
        for i, r in part.iterrows():
            c = [html.escape(clean(x)) for x in row_cells(r, scale[i])]
            c[1] = c[1].replace("**", "")
            c[7] = f"<b style='color:{VERDICT_COLORS[r['verdict']]}'>{c[7].replace('**', '')}</b>"
            rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in c) + "</tr>")
        body.append(f"<h2>{HEADINGS[kind]} ({len(part)} rows)</h2><p class='counts'>{html.escape(counts(part))}; "
                    f"unstable {unstable}</p><table><tr>{head}</tr>{''.join(rows)}</table>")
    if notes:
        body.append("<h2>Scale notes</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    style = ("body{font-family:sans-serif;font-size:13px;color:#111}td,th{border:1px solid #bbb;padding:3px;"
             "vertical-align:top}table{border-collapse:collapse}.counts{font-size:15px;font-weight:bold}"
             ".v{color:#fff;padding:2px 6px;margin-right:4px;border-radius:3px}"
             "td:nth-child(1),td:nth-child(5),td:nth-child(7),td:nth-child(8),td:nth-child(9){white-space:nowrap}")
    return (f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title><style>{style}</style>"
            + "".join(body) + "\n")


def figure(df: pd.DataFrame, out_png: str | Path, profile: str) -> list[Path]:
    """Verdict counts per study, paper claims and harness targets in two panels, one colour per verdict."""
    import matplotlib.pyplot as plt

    from . import plotting

    plotting.apply_style()
    studies = sorted(dict.fromkeys(df.study), key=ledger.rank)
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.55 * len(studies) + 2.0), layout="constrained", sharey=True,
                             sharex=True)
    for ax, kind in zip(axes, KINDS):
        part = df[df.kind == kind]
        c = part.groupby(["study", "verdict"]).size().unstack(fill_value=0).reindex(index=studies, columns=list(VERDICTS),
                                                                                      fill_value=0)
        left = np.zeros(len(c))
        for v in VERDICTS:
            bars = ax.barh(c.index, c[v], left=left, color=VERDICT_COLORS[v], label=v)
            ax.bar_label(bars, labels=[str(int(n)) if n else "" for n in c[v]], label_type="center",
                         color="white", fontsize=9, fontweight="bold")
            left += c[v].to_numpy()
        for i, st in enumerate(c.index):
            if left[i] == 0:
                ax.text(0.2, i, "none (a check of the harness)" if st in ledger.check_studies() else "none", va="center",
                        fontsize=9, color="0.35")
        unstable = int(part.get("unstable", pd.Series(dtype=bool)).sum())
        ax.set(xlabel="rows of the ledger", title=f"{HEADINGS[kind].lower()}: {len(part)} rows, {unstable} unstable")
    axes[0].invert_yaxis()
    plotting.legend_below(fig, ncol=len(VERDICTS))
    caption = (f"Verdicts per study in the claims ledger (results/{profile}/claims.md), computed from records: "
               "the papers' claims (left) and the harness's own targets and checks (right), counted apart. "
               "'needs hardware we lack' marks modelled values and configurations not run here; 'sanity check' "
               "marks values set by the paper's own numbers, which no measurement here could settle; unstable rows "
               f"changed verdict across the last {HISTORY_RUNS} runs on this machine.")
    return plotting.save(fig, out_png, caption)


def write(paths: Sequence[str | Path], out_md: str | Path, out_png: str | Path, profile: str,
          history: bool = True, history_dir: str | Path | None = None) -> pd.DataFrame:
    """The whole ledger: its records (:func:`bench.core.judging.ledger.write`), then the HTML page and the
    figure."""
    df = ledger.write(paths, out_md, profile, history, history_dir)
    write_text(Path(out_md).with_suffix(".html"), to_html(df, ledger.title(profile)))
    figure(df, out_png, profile)
    return df

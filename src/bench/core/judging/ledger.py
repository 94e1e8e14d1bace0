"""The claims ledger across the five papers (the harness's headline output), from every study's
``claims.parquet`` (:mod:`bench.core.judging.claims`):

- paper claims first, each study's rows in the order its ``claims.py`` gives them (the paper's order), with
  their own verdict counts; then the harness's own targets and checks (``target-*`` ids), counted apart;
- one long scale text per study written once (a note under the table), not on every row;
- each run appended to ``results/<profile>/history/`` (commit, machine, time), and per row the verdicts of
  the last :data:`HISTORY_RUNS` runs on the same machine and profile: a row whose verdict changed across
  them is marked unstable and counted apart (tiny verdicts can flip between runs: an interval covers the
  noise within one run, not between runs);
- written as Markdown and Parquet here; the self-contained HTML page and the figure (paper claims and
  targets in two panels) are drawn by :mod:`bench.core.presenting.ledger_page`.
"""
from __future__ import annotations

import datetime
import platform
import re
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..measuring import records
from ..base.atomic import write_text
from .claims import VERDICTS, _fmt, ours_text, threshold_text

PAPER, TARGET = "paper claim", "harness target or check"
KINDS = (PAPER, TARGET)
HEADINGS = {PAPER: "Paper claims", TARGET: "Harness targets and checks"}
HISTORY_RUNS = 5
INITIAL = {"reproduced": "R", "not reproduced": "N", "inconclusive": "I", "needs hardware we lack": "H",
           "needs a tool we lack": "T", "out of reach at this scale": "O", "sanity check, not judged": "S"}
VERDICT_COLORS = {"reproduced": "#1b9e77", "not reproduced": "#d95f02", "inconclusive": "#7570b3",
                  "needs hardware we lack": "#737373", "needs a tool we lack": "#e7298a",
                  "out of reach at this scale": "#a6761d", "sanity check, not judged": "#66a61e"}
_NUMPY_REPR = re.compile(r"np\.(?:float|int|uint|bool)\w*\((-?[^()]*)\)")
LONG_SCALE = 100


def study_order() -> list[str]:
    """The studies in their declared order (the papers as the README lists them, then the harness's checks):
    from each study's declaration, so core names none."""
    from ..declaring.study import declared

    return [s.name for s in declared()]


def check_studies() -> set[str]:
    """Studies of the harness itself (they reproduce no paper's claim): their rows count as targets."""
    from ..declaring.study import declared

    return {s.name for s in declared() if not s.reproduces_paper}


def rank(study: str) -> int:
    order = study_order()
    return order.index(study) if study in order else len(order)


def kind_of(claim_id: str, study: str = "") -> str:
    """A harness target (``target-``), an implementation check (``check-``) or a check study's row; else the
    paper's claim."""
    return TARGET if claim_id.startswith(("target-", "check-")) or study in check_studies() else PAPER


def clean(text: object) -> str:
    """Cell text with numpy reprs (``np.float64(0.5)``) turned into their numbers."""
    return _NUMPY_REPR.sub(r"\1", str(text))


def join(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Every study's rows; paper claims first, then targets, each study's own order kept."""
    df = pd.concat([records.read(p) for p in paths], ignore_index=True)
    df["kind"] = [kind_of(c, s) for c, s in zip(df.claim_id, df.study)]
    df["_order"] = np.arange(len(df))
    df["_kind"] = df.kind.map({PAPER: 0, TARGET: 1})
    df["_study"] = [rank(s) for s in df.study]
    keys = ["_kind", "_study", "_order"]
    return df.sort_values(keys, kind="stable").drop(columns=keys).reset_index(drop=True)


def machine() -> str:
    """This machine, as the history tells runs apart: host, CPU model and GPU model."""
    from ..machine import devices

    gpu = devices.gpu_info()
    return f"{platform.node()} / {devices.cpu_model()} / {gpu['gpu_model'] if gpu else 'no GPU'}"


def append_history(df: pd.DataFrame, folder: Path, profile: str) -> Path:
    """This run's verdicts as ``<folder>/<UTC time>-<commit>.parquet``."""
    from ..measuring import provenance

    now = datetime.datetime.now(datetime.timezone.utc)
    commit = str(provenance.git_state().get("git_commit") or "nocommit")[:10]
    h = df[["study", "claim_id", "kind", "verdict", "ours", "ci_low", "ci_high"]].copy()
    h["profile"], h["machine"], h["commit"], h["time"] = profile, machine(), commit, now.isoformat()
    return records.write(folder / f"{now.strftime('%Y%m%dT%H%M%S%fZ')}-{commit}.parquet", h,
                         {"profile": profile, "method": "one run of the claims ledger"})


def with_stability(df: pd.DataFrame, folder: Path, profile: str, runs: int = HISTORY_RUNS) -> pd.DataFrame:
    """``history`` (verdict initials of the last ``runs`` runs on this machine and profile, oldest first)
    and ``unstable`` (the verdict changed across them) for every row."""
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    frames = [records.read(f) for f in files]
    hist = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["study", "claim_id", "verdict"])
    if len(hist):
        hist = hist[(hist.profile == profile) & (hist.machine == machine())]
        last = sorted(hist.time.unique())[-runs:]
        hist = hist[hist.time.isin(last)].sort_values("time")
    seq = hist.groupby(["study", "claim_id"]).verdict.agg(list) if len(hist) else pd.Series(dtype=object)
    out = df.copy()
    key = list(zip(out.study, out.claim_id))
    out["history"] = ["".join(INITIAL[v] for v in seq.get(k, [])) for k in key]
    out["unstable"] = [len(set(seq.get(k, []))) > 1 for k in key]
    return out


def counts(df: pd.DataFrame) -> str:
    c = df.verdict.value_counts()
    return ", ".join(f"{v} {c.get(v, 0)}" for v in VERDICTS)


def scale_notes(df: pd.DataFrame) -> tuple[pd.Series, list[str]]:
    """Scale cells with a long text repeated in a study replaced by a reference; the notes, once each."""
    cells, notes, refs = df.scale.astype(str).copy(), [], {}
    for (study, text), n in df.groupby(["study", "scale"]).size().items():
        if n > 1 and len(str(text)) > LONG_SCALE:
            refs[(study, text)] = f"S{len(refs) + 1}"
            notes.append(f"[{refs[(study, text)]}] {study}: {clean(text)}")
    for i, r in df.iterrows():
        if (r.study, r.scale) in refs:
            cells[i] = f"see [{refs[(r.study, r.scale)]}]"
    return cells, notes


def row_cells(r, scale: str) -> list[str]:
    thr = threshold_text(r)
    also = r.get("threshold_also")
    if also is not None and pd.notna(also):
        thr = f"{r['direction']} {_fmt(also)} and {_fmt(r['threshold'])}"
    hist = r.get("history", "") or "–"
    mark = " (unstable)" if r.get("unstable", False) else ""
    return [r["study"], f"**{r['claim_id']}**: {r['claim']}", r["paper_value"], ours_text(r), thr, scale,
            r["source"], f"**{r['verdict']}**{mark}", hist, r["reason"]]


def to_markdown(df: pd.DataFrame, title: str) -> str:
    scale, notes = scale_notes(df)
    lines = [f"# {title}", "", "Ours: estimate [95% interval]. A pass within noise is inconclusive. History: "
             f"verdicts of the last {HISTORY_RUNS} runs on this machine and profile, oldest first "
             "(R reproduced, N not reproduced, I inconclusive, H needs hardware we lack, T needs a tool we lack, O out "
             "of reach, S sanity check: set by the paper's own numbers, not judged); a row "
             "whose verdict changed across them is unstable and counted apart.", ""]
    for kind in KINDS:
        part = df[df.kind == kind]
        unstable = int(part.get("unstable", pd.Series(dtype=bool)).sum())
        lines += [f"## {HEADINGS[kind]} ({len(part)} rows)", "", f"Verdicts: {counts(part)}; unstable {unstable}", "",
                  "| study | claim | paper | ours | threshold | scale | source | verdict | history | reason |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for i, r in part.iterrows():
            lines.append("| " + " | ".join(clean(c).replace("|", "/").replace("\n", " ")
                                            for c in row_cells(r, scale[i])) + " |")
        lines.append("")
    if notes:
        lines += ["## Scale notes", "", *[f"- {n}" for n in notes], ""]
    return "\n".join(lines)


def write(paths: Sequence[str | Path], out_md: str | Path, profile: str, history: bool = True,
          history_dir: str | Path | None = None) -> pd.DataFrame:
    """The whole ledger as records: append this run to the history (``history``), then Markdown and Parquet
    (the page and the figure of it: :mod:`bench.core.presenting.ledger_page`). ``history_dir``: where the
    runs' history is kept (default ``history/`` beside ``out_md``; a partial ledger reads the pipeline's)."""
    out_md = Path(out_md)
    df = join(paths)
    folder = Path(history_dir) if history_dir is not None else out_md.parent / "history"
    if history:
        append_history(df, folder, profile)
    df = with_stability(df, folder, profile)
    write_text(out_md, to_markdown(df, title(profile)))
    records.write(out_md.with_suffix(".parquet"), df, {"profile": profile, "inputs": [str(p) for p in paths],
                                                        "method": "rows of every study's claims.parquet; history: "
                                                        f"last {HISTORY_RUNS} runs on this machine and profile"})
    return df


def title(profile: str) -> str:
    return f"Claims ledger, profile {profile}"

"""Tidy records with provenance.

A record set is three files sharing a stem:

- ``<stem>.parquet``: the tidy table (one row per query, batch or run), with the provenance embedded
  in the Parquet schema metadata under the key ``bench.provenance``;
- ``<stem>.summary.csv``: a per-configuration summary (medians and spread) for quick reading;
- ``<stem>.provenance.json``: the same provenance as readable JSON.

The Parquet file is written last and each file is written atomically, so an interrupted run never
leaves a Parquet file that a later run (or Snakemake) could take as complete.

One record set may hold rows of several levels (a step declared ``levels=("run", "query")``: its timed runs
and each query's result), each naming its level in the ``level`` column; :func:`at_level` reads one.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..base.atomic import atomic_path, write_text

PROVENANCE_KEY = b"bench.provenance"


class Provenance(dict):
    """A record set's provenance as read back: a dict that a deep copy hands back as it is. pandas deep-copies
    a table's ``attrs`` on nearly every operation (a filter, a groupby), and copying a large provenance each
    time cost figure and claims jobs more than their drawing; what was read from a file is never changed
    in place."""

    def __deepcopy__(self, memo) -> "Provenance":
        return self


def _stem(path: str | os.PathLike) -> Path:
    p = Path(path)
    return p.with_suffix("") if p.suffix == ".parquet" else p


def paths(path: str | os.PathLike) -> dict[str, Path]:
    stem = _stem(path)
    return {
        "parquet": Path(f"{stem}.parquet"),   # a dotted stem (index.faiss.build) keeps its dots
        "summary": Path(f"{stem}.summary.csv"),
        "provenance": Path(f"{stem}.provenance.json"),
    }


def write(path: str | os.PathLike, records: pd.DataFrame, provenance: Mapping[str, Any],
          summary: pd.DataFrame | None = None) -> Path:
    """Write a record set atomically; returns the Parquet path."""
    if records.empty:
        raise ValueError(f"refusing to write an empty record set to {path}")
    p = paths(path)
    prov_json = json.dumps(provenance, indent=2, sort_keys=True, default=str)
    write_text(p["provenance"], prov_json + "\n")
    if summary is not None:
        with atomic_path(p["summary"]) as tmp:
            summary.to_csv(tmp, index=False)
    table = pa.Table.from_pandas(records, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[PROVENANCE_KEY] = prov_json.encode()
    table = table.replace_schema_metadata(meta)
    with atomic_path(p["parquet"]) as tmp:
        pq.write_table(table, tmp)
    return p["parquet"]


def read(path: str | os.PathLike) -> pd.DataFrame:
    """Read a record set's table; its provenance is in ``df.attrs['provenance']``."""
    p = paths(path)["parquet"]
    table = pq.read_table(p)
    df = table.to_pandas()
    raw = (table.schema.metadata or {}).get(PROVENANCE_KEY)
    df.attrs["provenance"] = Provenance(json.loads(raw) if raw else {})
    return df


def read_provenance(path: str | os.PathLike) -> dict[str, Any]:
    meta = pq.read_schema(paths(path)["parquet"]).metadata or {}
    raw = meta.get(PROVENANCE_KEY)
    return json.loads(raw) if raw else {}


def summarize_runs(df: pd.DataFrame, by: list[str], value: str) -> pd.DataFrame:
    """Per-group median and spread of ``value`` (for the summary CSV)."""
    g = df.groupby(by, sort=True)[value]
    out = g.agg(n="count", median="median", min="min", max="max").reset_index()
    q = g.quantile([0.25, 0.75]).unstack()
    out[f"p25"] = q[0.25].to_numpy()
    out[f"p75"] = q[0.75].to_numpy()
    out.insert(len(by), "metric", value)
    return out


def read_all(paths) -> pd.DataFrame:
    """Several record sets as one table; ``attrs['provenance']`` is the first set's."""
    frames = [read(p) for p in paths]
    if not frames:
        raise ValueError("no record sets to read")
    df = pd.concat(frames, ignore_index=True)
    df.attrs["provenance"] = frames[0].attrs["provenance"]   # read() made it a Provenance
    return df


def read_kinds(inputs: Mapping[str, list]) -> dict[str, pd.DataFrame]:
    """``{kind: [paths]}`` -> ``{kind: one table}``, read once for a figure or the claims. Each table
    carries ``attrs['provenance']`` (its first record set's) and ``attrs['provenances']`` (all of them)."""
    out = {}
    for kind, ps in inputs.items():
        frames = [read(p) for p in ps]
        if not frames:
            continue
        df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        df.attrs["provenance"] = frames[0].attrs["provenance"]   # read() made each a Provenance
        df.attrs["provenances"] = tuple(f.attrs["provenance"] for f in frames)
        out[kind] = df
    return out


def at_level(df: pd.DataFrame, level: str) -> pd.DataFrame:
    """The rows of one level (``level`` column: ``run``, ``query``, ...) with the columns only other levels
    fill dropped; the provenance stays in ``attrs``. A record set with no ``level`` column, or none at that
    level, is an error naming what it has."""
    if "level" not in df:
        raise ValueError(f"records have no 'level' column (their step declares no levels=); asked for {level!r}")
    rows = df[df["level"] == level]
    if rows.empty:
        raise ValueError(f"no rows at level {level!r}; the records hold {sorted(set(df['level'].astype(str)))}")
    out = rows.dropna(axis=1, how="all").reset_index(drop=True)
    out.attrs = dict(df.attrs)
    return out

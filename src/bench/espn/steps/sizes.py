"""Table 3 (paper section 3.1): the index breakdown, CLS (single vector) against BOW (multi-vector), with the
candidate-generation (ANN) index of section 5.1. Measured from the build's files on disk: the table's
offsets say how many BOW vectors each record holds, so the table splits exactly into its CLS part, its
BOW part and the zero padding to 4/8 KiB blocks; the ANN index and the offsets table are file sizes. The
paper's Table 3 and section 5.1 sizes are written beside ours as ``source = paper`` rows."""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd

from ...core.base.errors import ConfigError
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from .. import paper_values as PV
from ..system import layout
from . import inputs

METHOD = ("Sizes of the build's files on disk (os.stat), deterministic, nothing timed: the embedding table "
          "(ESPN-v1 records, CLS {cls} x fp16 = {cls_b} B per record, BOW {bow} x fp16 = {tok_b} B per stored "
          "token vector: the paper's widths, section 3.1; zero padding to a 4/8 KiB "
          "record) split by its offsets table into CLS, BOW and padding bytes; the ANN index file; the "
          "offsets table file. Per scope: 'collection passages' (the dataset's passages, the first n_real "
          "records) and 'all records' (with the synthetic filler). The paper's Table 3 (CLS/BOW, 16-bit, "
          "uncompressed) and section 5.1 (ANN index) sizes as rows with source 'paper', GB as printed = 1e9 B.")

def _check(b: dict[str, os.PathLike], meta: dict, off: layout.Offsets) -> tuple[int, int]:
    """(n_real, n_docs), after checking the build's metadata against its offsets table (bad input)."""
    try:
        n_real, n_docs = int(meta["n_real"]), int(meta["n_docs"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{b['meta']}: no usable n_real / n_docs ({exc}); rebuild with `bench espn build`") from None
    if n_docs != len(off):
        raise layout.LayoutError(f"{b['table']}: {len(off)} records but the build says {n_docs}")
    if not 0 < n_real <= n_docs:
        raise layout.LayoutError(f"{b['meta']}: n_real {n_real} outside 1..n_docs ({n_docs})")
    if os.path.getsize(b["ann"]) == 0:
        raise layout.LayoutError(f"{b['ann']}: the ANN index file is empty")
    return n_real, n_docs


def _load(build_dir) -> tuple[dict, dict, layout.Offsets, int]:
    """(paths, metadata, offsets checked against the table, number of queries), before any sizing."""
    b = inputs.paths(build_dir)
    missing = [b[k].name for k in ("meta", "table", "ann", "queries") if not b[k].exists()]
    if missing:
        raise ConfigError(f"{build_dir}: not a complete ESPN build (missing {', '.join(missing)}); "
                          "run `bench espn build` first")
    try:
        meta = json.loads(b["meta"].read_text())
    except ValueError as exc:
        raise ConfigError(f"{b['meta']}: not JSON ({exc})") from None
    off = layout.load_offsets(b["table"])  # validates the offsets against the table file
    with np.load(b["queries"]) as z:
        n_queries = int(len(z["lens"]))
    return b, meta, off, n_queries


def _row(scope, collection, part, nbytes, n, tokens, queries, **extra) -> dict:
    return {"scope": scope, "collection": collection, "part": part, "bytes": float(nbytes), "n_passages": int(n),
            "n_tokens": int(tokens), "n_queries": int(queries), "bytes_per_passage": float(nbytes) / n, **extra}


KINDS = {"ivfflat": "IVF-Flat", "ivfpq": "IVF-PQ"}


def measured_rows(build_dir, ann_kind: str = "") -> tuple[list[dict], dict]:
    """Our rows (source measured) and the build's metadata; ``ann_kind``: the index kind the build used."""
    b, meta, off, nq = _load(build_dir)
    n_real, n_docs = _check(b, meta, off)
    rows, name = [], str(meta.get("dataset", "ours"))
    for scope, n in (("collection passages", n_real), ("all records", n_docs)):
        tok = int(off.n_tokens[:n].sum(dtype=np.int64))
        rec = int(off.io_size[:n].sum(dtype=np.int64))
        cls, bow = n * layout.cls_bytes(), tok * layout.tok_bytes()
        parts = {"cls": cls, "bow": bow, "padding": rec - cls - bow, "table_file": rec}
        if n == n_docs:  # the index and the offsets cover every record: not split by scope
            parts.update(ann_index=os.path.getsize(b["ann"]), offsets=os.path.getsize(layout.offsets_path(b["table"])))
        ann = f"faiss {KINDS.get(ann_kind, ann_kind)}, nlist {meta.get('nlist', '?')}".replace("faiss ,", "faiss,")
        rows += [_row(scope, name, k, v, n, tok, nq, source="measured", where_in_paper="",
                      index=ann if k == "ann_index" else "") for k, v in parts.items()]
    return rows, meta


@step("sizes", needs=("build",), per="first", timed=False,
      keys=("datasets", "block_mode", "index", "k", "nprobe", "prefetch_steps", "prefetch_step", "prefetch_delta",
            "rerank_counts", "partial_rerank", "bow_weight", "cgroup_headroom_mib", "cgroup_headroom_io_mib",
            "backends", "e2e_queries", "repeats", "warmup", "batch_sizes", "io_depth", "device", "maxsim_threads",
            "io_engine", "prefetch_engine", "prefetch_chunk", "steady_tol", "steady_max_passes"))
def sizes(ctx: Context) -> Result:
    """The ``sizes`` step: the build (its folder, named by its meta.json)."""
    inputs.dataset_name(ctx.params)
    rows, meta = measured_rows(ctx.input("build"), ctx.params.index.kind)
    df = pd.DataFrame(rows + PV.size_rows())
    summ = df.pivot_table(index=["source", "scope", "collection"], columns="part", values="bytes").reset_index()
    prov = {"build": {k: v for k, v in meta.items() if k != "doc_ids"}}
    method = METHOD.format(cls=layout.cls_dim(), cls_b=layout.cls_bytes(), bow=layout.bow_dim(),
                           tok_b=layout.tok_bytes())
    return Result(records=df, summary=summ, method=method, provenance=prov,
                  dataset_id=meta.get("dataset"), dataset_checksum=meta.get("dataset_checksum"))

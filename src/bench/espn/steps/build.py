"""Build step ``build`` (paper sections 3.1, 4.1, 4.2): encode the collection (CLS + BOW vectors), write the
ESPN-v1 table (grown with synthetic filler records where the profile asks), build the IVF index over the
CLS vectors (inner product, through :mod:`bench.ann.ivf`), encode the queries. Not a measurement: the
encoder gets every thread."""
from __future__ import annotations

import json
import time

import numpy as np

from ...core.measuring import measure
from ...core.base.atomic import write_text
from ...core.measuring.step import Context
from ...core.declaring.study import step
from ..params import Params
from ..system import candidates, encoders, layout
from ..system.encoders import EncoderUnavailable
from .inputs import check_params, paths, set_maxsim_threads


def _encoder(p: Params, seed: int):
    """The profile's encoder, or its fallback (recorded with the reason) where it cannot load offline."""
    try:
        return p.encoder, encoders.make_encoder(p.encoder, seed=seed), None
    except EncoderUnavailable as exc:
        if not p.encoder_fallback:
            raise
        name = p.encoder_fallback
        return name, encoders.make_encoder(name, seed=seed), str(exc)


def _write_table(path, p: Params, cls, bows, seed) -> tuple[layout.Offsets, np.ndarray]:
    """The table: the collection's records, then the synthetic filler; returns offsets and all CLS."""
    w = layout.TableWriter(path, p.block_mode)
    w.add(cls, bows)
    all_cls = [cls]
    for s, e in layout.iter_chunks(int(p.filler_passages), 20000):
        fc, fb = encoders.synthetic_filler(e - s, seed + 7 + s, cls, spread=p.filler_spread)
        w.add(fc, fb)
        all_cls.append(fc)
    return w.close(), np.concatenate(all_cls).astype(np.float32)


def _encode(ds, p: Params, seed: int) -> dict:
    """The collection and the queries encoded, with the encoder and its timings."""
    empty = encoders.check_passages(ds.doc_ids, ds.docs, p.empty_passages == "encode")
    name, enc, fallback_reason = _encoder(p, seed)
    t0 = time.perf_counter()
    enc.fit(ds.docs)
    cls, bows = enc.encode_docs(ds.docs)
    t_docs = time.perf_counter() - t0
    t0 = time.perf_counter()
    qc, qt = enc.encode_queries(ds.queries)
    t_q = time.perf_counter() - t0
    return {"name": name, "enc": enc, "fallback_reason": fallback_reason, "empty": empty, "cls": cls,
            "bows": bows, "qc": qc, "qt": qt, "t_docs": t_docs, "t_q": t_q}


def _save_queries(path, qc, qt, query_ids) -> None:
    lens = np.array([len(t) for t in qt], np.int64)
    with open(path, "wb") as fh:
        np.savez(fh, cls=qc.astype(np.float32), tok=np.concatenate(qt).astype(np.float32), lens=lens,
                 query_ids=np.array(query_ids))


def build(manifest: str, p: Params, out_dir: str, seed: int, threads: int) -> dict:
    """The build into ``out_dir``; returns (and writes) its metadata."""
    from ...data import prepared

    check_params(p)
    measure.set_threads(threads)
    set_maxsim_threads(p)
    import torch

    torch.set_num_threads(threads)  # building is not measured: the encoder gets every thread
    ds = prepared.load_text(manifest)
    e = _encode(ds, p, seed)
    out = paths(out_dir)
    out["table"].parent.mkdir(parents=True, exist_ok=True)
    off, x = _write_table(out["table"], p, e["cls"], e["bows"], seed)
    ix = p.index
    index = candidates.build(x, ix.kind, ix.nlist, ix.m, ix.nbits, seed=seed, train_size=ix.train_size)
    candidates.save(index, out["ann"])
    e["enc"].save(out["encoder"])
    _save_queries(out["queries"], e["qc"], e["qt"], ds.query_ids)
    meta = {"dataset": ds.id, "dataset_checksum": ds.checksum, "encoder": e["name"],
            "encoder_requested": p.encoder, "encoder_fallback_reason": e["fallback_reason"],
            "encoder_source": getattr(e["enc"], "source", "measured"),
            "text_source": prepared.read_manifest(manifest).get("source"),
            "n_real": len(ds.doc_ids), "n_filler": int(p.filler_passages), "n_docs": len(off),
            "n_empty": len(e["empty"]), "n_truncated": off.n_truncated, "table_bytes": off.file_size,
            "mean_io_size": off.mean_io_size, "ann_index_bytes": candidates.index_bytes(index),
            "nlist": int(index.nlist), "encode_docs_s": e["t_docs"],
            "encode_docs_per_s": len(ds.docs) / max(e["t_docs"], 1e-9), "encode_queries_s": e["t_q"],
            "manifest": str(manifest), "doc_ids": list(ds.doc_ids), "seed": seed}
    write_text(out["meta"], json.dumps(meta))
    return meta


@step("build", needs=("manifest",), kind="build", out_arg="{dataset}",
      out={"meta": "{dataset}/meta.json", "table": "{dataset}/table.espn", "offsets": "{dataset}/table.espn.offsets.npz",
           "index": "{dataset}/ann.faiss", "queries": "{dataset}/queries.npz"},
      keys=("datasets", "encoder", "encoder_fallback", "empty_passages", "filler_passages", "filler_spread",
            "block_mode", "index", "k", "nprobe", "prefetch_steps", "prefetch_step", "prefetch_delta",
            "rerank_counts", "partial_rerank", "batch_sizes", "io_depth", "device", "maxsim_threads", "io_engine",
            "prefetch_engine"))
def build_step(ctx: Context) -> None:
    """``bench espn build --input manifest=PATH --out DIR``: the build directory every step reads."""
    build(ctx.input("manifest"), ctx.params, str(ctx.out), ctx.seed, ctx.threads)

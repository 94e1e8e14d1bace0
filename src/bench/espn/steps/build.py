"""The build (paper sections 3.1, 4.1, 4.2): encode the collection (CLS + BOW vectors), write the ESPN-v1
table (grown with synthetic filler records where the profile asks), build the IVF index over the CLS
vectors, encode the queries. Not a measurement: the encoder gets every thread."""
from __future__ import annotations

import json
import time

import numpy as np

from ...core.atomic import write_text
from .. import ann, encoders, layout
from ..errors import EncoderUnavailable
from .common import check_params, paths, set_threads


def _encoder(params: dict, seed: int):
    """The profile's encoder, or its fallback (recorded with the reason) where it cannot load offline."""
    try:
        return params["encoder"], encoders.make_encoder(params["encoder"], seed=seed), None
    except EncoderUnavailable as exc:
        if not params.get("encoder_fallback"):
            raise
        name = params["encoder_fallback"]
        return name, encoders.make_encoder(name, seed=seed), str(exc)


def _write_table(path, params, cls, bows, seed) -> tuple[layout.Offsets, np.ndarray]:
    """The table: the collection's records, then the synthetic filler; returns offsets and all CLS."""
    w = layout.TableWriter(path, params["block_mode"])
    w.add(cls, bows)
    all_cls = [cls]
    for s, e in layout.iter_chunks(int(params["filler_passages"]), 20000):
        fc, fb = encoders.synthetic_filler(e - s, seed + 7 + s, cls, spread=params["filler_spread"])
        w.add(fc, fb)
        all_cls.append(fc)
    return w.close(), np.concatenate(all_cls).astype(np.float32)


def build(manifest: str, params: dict, out_dir: str, seed: int, threads: int) -> dict:
    from ...data import prepared

    check_params(params)
    set_threads(threads, params)
    import torch

    torch.set_num_threads(threads)  # building is not measured: the encoder gets every thread
    ds = prepared.load_text(manifest)
    empty = encoders.check_passages(ds.doc_ids, ds.docs, params["empty_passages"] == "encode")
    name, enc, fallback_reason = _encoder(params, seed)
    t0 = time.perf_counter()
    enc.fit(ds.docs)
    cls, bows = enc.encode_docs(ds.docs)
    t_docs = time.perf_counter() - t0
    t0 = time.perf_counter()
    qc, qt = enc.encode_queries(ds.queries)
    t_q = time.perf_counter() - t0
    p = paths(out_dir)
    p["table"].parent.mkdir(parents=True, exist_ok=True)
    off, x = _write_table(p["table"], params, cls, bows, seed)
    ix = params["index"]
    index = ann.build(x, ix["kind"], ix["nlist"], ix.get("m", 16), ix.get("nbits", 8), seed=seed,
                      train_size=ix.get("train_size"))
    ann.save(index, p["ann"])
    enc.save(p["encoder"])
    lens = np.array([len(t) for t in qt], np.int64)
    with open(p["queries"], "wb") as fh:
        np.savez(fh, cls=qc.astype(np.float32), tok=np.concatenate(qt).astype(np.float32), lens=lens,
                 query_ids=np.array(ds.query_ids))
    meta = {"dataset": ds.id, "dataset_checksum": ds.checksum, "encoder": name,
            "encoder_requested": params["encoder"], "encoder_fallback_reason": fallback_reason,
            "encoder_source": getattr(enc, "source", "measured"), "text_source": prepared.read_manifest(manifest).get("source"),
            "n_real": len(ds.doc_ids), "n_filler": int(params["filler_passages"]), "n_docs": len(off),
            "n_empty": len(empty), "n_truncated": off.n_truncated, "table_bytes": off.file_size,
            "mean_io_size": off.mean_io_size, "ann_index_bytes": ann.index_bytes(index),
            "nlist": int(index.nlist), "encode_docs_s": t_docs,
            "encode_docs_per_s": len(ds.docs) / max(t_docs, 1e-9), "encode_queries_s": t_q,
            "manifest": str(manifest), "doc_ids": list(ds.doc_ids), "seed": seed}
    write_text(p["meta"], json.dumps(meta))
    return meta

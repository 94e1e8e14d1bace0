"""Measurement step ``loader_only`` of the loaders study (beyond Moving Stuff Around): samples/s each
loader delivers with no model and no DataLoader, lookups alone and lookups plus tokenization."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Params, step_keys
from ..system import collection
from ..system.stores import check_loader, make_store
from . import inputs

METHOD = ("In the step's own process, one thread, no DataLoader workers and no model: per loader, "
          "batches of batch_size samples (query, positive, random negative: two document reads each) read "
          "in order of sample index; 'lookup' times the reads only, 'lookup+tokenize' adds the collate "
          "function (two pairs per sample, truncation at max_length). Wall clock over all batches of a "
          "repeat; repeat 0 is a warm-up.")


def _dataset(ctx: Context, loader: str, n: int):
    from ..system.samples import TripletDataset

    bundle_dir, model_dir = inputs.paths(ctx)
    queries, pairs = collection.load_pairs(bundle_dir)
    with np.load(Path(bundle_dir) / collection.OFFSETS) as z:
        ids = z["ids"]
    t0 = time.perf_counter()
    store = make_store(loader, bundle_dir).open()
    load_s = time.perf_counter() - t0
    return TripletDataset(store, queries, pairs, ids, n, ctx.seed), load_s, model_dir


@step("loader_only", needs=("bundle",), per="first", keys=step_keys("loader_only"))
def loader_only(ctx: Context) -> Result:
    """Samples/s each loader delivers with no model: the three texts of each sample (lookups), and the
    same plus the collate function's tokenization; one warm-up repeat, then ``repeats`` timed ones."""
    from ..system.bert_cat import load_tokenizer
    from ..system.samples import Collate

    p: Params = ctx.params
    o = p.loader_only
    rows = []
    for loader in map(check_loader, o.loaders):
        n = o.batch_size * o.batches
        ds, load_s, model_dir = _dataset(ctx, loader, n * (o.repeats + 1))
        collate = Collate(load_tokenizer(model_dir), p.max_length, p.doc_chars)
        for mode in ("lookup", "lookup+tokenize"):
            for r in range(o.repeats + 1):
                idx = np.arange(r * n, (r + 1) * n)
                t0 = time.perf_counter()
                for b in range(o.batches):
                    batch = [ds[int(i)] for i in idx[b * o.batch_size:(b + 1) * o.batch_size]]
                    if mode != "lookup":
                        collate(batch)
                dt = time.perf_counter() - t0
                rows.append({"loader": loader, "mode": mode, "repeat": r, "phase": "warmup" if r == 0 else "measured",
                             "samples": n, "seconds": dt, "samples_per_s": n / dt, "load_s": load_s})
    return Result(records=pd.DataFrame(rows), dataset_id=ctx.dataset, provenance=inputs.provenance(ctx),
                  method=METHOD)

"""Chameleon section 6.3 (Figures 10-12): the ``ralm`` step. RALM serving per model x retrieval interval x
configuration: random-weight ChamLM models (``system.ralm``, scaled by the profile) generate tokens and
retrieve through the search back ends (``system.backends``; fpga-* retrieval modelled)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...ann import ivf as ivf_index
from ...core import records
from ...core.errors import ConfigError
from ...core.step import Context, Result
from ...core.study import step
from ...data import prepared
from ..params import LM, Params, Ralm
from ..system import backends, pqscan
from ..system import ralm as R
from .inputs import fpga_node


@dataclasses.dataclass(frozen=True)
class Corpus:
    """One model size's dataset: its name, its index and the per-dimension mean / spread of its base."""

    name: str
    index: object
    mean: np.ndarray
    std: np.ndarray


def _load_sizes(ctx: Context) -> dict[str, Corpus]:
    """Per model size (S, L): the dataset named in ``ralm.datasets`` and its index."""
    loaded = {}
    for size, ds_name in ctx.params.ralm.datasets.items():
        ds = prepared.load_vectors(ctx.input(f"manifest_{size}"))
        base = np.asarray(ds.base[:20000], dtype=np.float32)
        loaded[size] = Corpus(ds_name, ivf_index.load(ctx.input(f"index_{size}")), base.mean(0), base.std(0) + 1e-6)
    return loaded


def _spec(mname: str, lm: LM, rp: Ralm) -> R.LMSpec:
    return R.LMSpec(name=mname, arch=lm.arch, d_model=lm.d_model, layers=lm.layers, heads=lm.heads,
                    enc_layers=lm.enc_layers, vocab=rp.vocab, k=lm.k, retrieved_tokens=rp.retrieved_tokens)


def _runs(spec, model_, cfg, cname: str, lm: LM, size: str, rp: Ralm, corpus: Corpus, seed: int) -> list[dict]:
    def retrieve(q, k):
        o = cfg.search(q, k)
        return o.I, o.seconds

    rows = []
    src = "measured" if cfg is None or cfg.source == "measured" else "modelled"
    for interval in lm.intervals:
        for bs in (1, rp.throughput_batch[size]):
            for rep in range(rp.repeats):
                recs = R.generate(spec, model_, bs, rp.seq_len, None if cfg is None else interval,
                                  None if cfg is None else retrieve, corpus.mean, corpus.std, seed=seed + rep)
                rows += [{"model": spec.name, "config": cname, "interval": interval, "batch_size": bs, "rep": rep,
                          "source": src, "dataset": corpus.name, "layers": spec.layers, "d_model": spec.d_model,
                          **r} for r in recs]
    return rows


def _model_rows(ctx: Context, mname: str, lm: LM, corpus: Corpus) -> list[dict]:
    """One model: inference only (config 'none'), then each configuration of ``ralm.configs``."""
    p: Params = ctx.params
    size = "S" if mname.endswith("-S") else "L"
    ivf = pqscan.ivfpq_of(corpus.index)
    spec = _spec(mname, lm, p.ralm)
    if ivf.d != spec.d_model:
        raise ConfigError(f"{mname}: index dimension {ivf.d} != d_model {spec.d_model}")
    model_ = R.build_model(spec, ivf.d, p.ralm.seq_len + 1, ctx.seed)
    node = fpga_node(p.fpga, ivf.pq.M)
    rows = []
    for cname in ["none", *p.ralm.configs]:
        cfg = None if cname == "none" else backends.make(cname, corpus.index, p.nprobe, ctx.threads, node=node)
        ok, why = (True, "") if cfg is None else cfg.available()
        if not ok:
            rows += [{"model": mname, "config": cname, "interval": interval, "batch_size": 0, "rep": 0,
                      "step": -1, "source": "not_run", "note": why, "why": why} for interval in lm.intervals]
            continue
        rows += _runs(spec, model_, cfg, cname, lm, size, p.ralm, corpus, ctx.seed)
    return rows


@step("ralm", needs=("manifest_*", "index_*"))
def ralm(ctx: Context) -> Result:
    rp = ctx.params.ralm
    loaded = _load_sizes(ctx)
    rows = []
    for mname, lm in rp.models.items():
        rows += _model_rows(ctx, mname, lm, loaded["S" if mname.endswith("-S") else "L"])
    df = pd.DataFrame(rows)
    ok = df[df.source != "not_run"]
    summary = records.summarize_runs(ok, ["model", "config", "interval", "batch_size"], "step_s")
    return Result(
        records=df, summary=summary,
        method=f"RALM generation with random-weight torch models (KV cache), {rp.seq_len} steps, batch 1 "
               f"(latency) and the profile's throughput batch; per step: retrieval seconds (measured, or "
               f"MODELLED for fpga-* configs: measured index scan + node model) plus measured inference "
               f"seconds; config 'none' = inference only. Layers and sequence length scaled by the profile.")

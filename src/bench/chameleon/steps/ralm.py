"""Chameleon section 6.3 (Figures 10-12): the ``ralm`` step. RALM serving per model x retrieval interval x
configuration: random-weight ChamLM models (``system.ralm``: transformers' Llama and T5 architectures, scaled
by the profile) generate tokens and retrieve through the search back ends (``system.backends``; fpga-*
retrieval modelled)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...ann import ivf as ivf_index
from ...core.measuring import records
from ...core.base.errors import ConfigError
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ...data import prepared
from .. import paper_values
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


def interval_why(interval: int, lm: LM, rp: Ralm) -> str:
    """Why one of the paper's intervals for a model (Table 2) is not in this profile's run."""
    n = rp.seq_len - 1
    if interval > n // 2:
        return (f"interval {interval}: this profile generates {n} steps per sequence (a sequence of "
                f"{rp.seq_len} tokens), too few for more than one retrieval; the paper generates "
                f"{paper_values.LM_SEQ_TOKENS} tokens per sequence")
    return f"interval {interval} not in this profile's intervals {list(lm.intervals)}"


def _missing_intervals(mname: str, lm: LM, rp: Ralm, configs) -> list[dict]:
    """not_run rows for the paper's intervals of this model (Table 2) that the profile leaves out."""
    rows = []
    for interval in paper_values.table2_intervals(mname):
        if interval in lm.intervals:
            continue
        why = interval_why(interval, lm, rp)
        rows += [{"model": mname, "config": c, "interval": interval, "batch_size": 0, "rep": 0, "step": -1,
                  "source": "not_run", "note": why, "why": why} for c in ["none", *configs]]
    return rows


def _model_info(spec: R.LMSpec, model_, lm: LM, rp: Ralm, corpus: Corpus) -> dict:
    """What ran for one model (provenance): its shape, parameter count and retrieval settings."""
    return {"arch": spec.arch, "d_model": spec.d_model, "layers": spec.layers, "enc_layers": spec.enc_layers,
            "heads": spec.heads, "params": int(sum(t.numel() for t in model_.parameters())), "k": spec.k,
            "model_class": f"transformers.{type(model_.lm).__name__}",
            "intervals": list(lm.intervals), "vocab": spec.vocab, "seq_len": rp.seq_len,
            "retrieved_tokens": spec.retrieved_tokens, "dataset": corpus.name}


def _model_rows(ctx: Context, mname: str, lm: LM, corpus: Corpus) -> tuple[list[dict], dict]:
    """One model: inference only (config 'none'), then each configuration of ``ralm.configs``; and what ran."""
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
    rows += _missing_intervals(mname, lm, p.ralm, p.ralm.configs)
    return rows, _model_info(spec, model_, lm, p.ralm, corpus)


def _corpus_info(corpus: Corpus, p: Params) -> dict:
    ivf = pqscan.ivfpq_of(corpus.index)
    return {"dataset": corpus.name, "n_base": int(corpus.index.ntotal), "dim": int(ivf.d), "m": int(ivf.pq.M),
            "nlist": int(ivf.nlist), "nprobe": p.nprobe}


@step("ralm", needs=("manifest_*", "index_*"),
      keys=("datasets", "pq_m", "nlist", "nprobe", "k", "configs", "fpga", "ralm"))
def ralm(ctx: Context) -> Result:
    rp = ctx.params.ralm
    loaded = _load_sizes(ctx)
    rows, models = [], {}
    for mname, lm in rp.models.items():
        r, models[mname] = _model_rows(ctx, mname, lm, loaded["S" if mname.endswith("-S") else "L"])
        rows += r
    df = pd.DataFrame(rows)
    ok = df[df.source != "not_run"]
    summary = records.summarize_runs(ok, ["model", "config", "interval", "batch_size"], "step_s")
    return Result(
        records=df, summary=summary,
        method=f"RALM generation with random-weight transformers models (Llama-architecture decoder-only, "
               f"T5-architecture encoder-decoder; SDPA attention, static KV cache), {rp.seq_len} steps, batch 1 "
               f"(latency) and the profile's throughput batch; per step: retrieval seconds (measured, or "
               f"MODELLED for fpga-* configs: measured index scan + node model) plus measured inference "
               f"seconds; config 'none' = inference only. Layers and sequence length scaled by the profile. The "
               f"paper's intervals (Table 2) that the profile leaves out are not_run rows saying why.",
        provenance={"ralm_models": models,
                    "ralm_datasets": {s: _corpus_info(c, ctx.params) for s, c in loaded.items()}})

"""Measurement step ``roofline`` (Trinity section 2, Figure 1): on this machine, time one extend of the
engine with Q concurrent queries, one prefill pass of the shared small transformer
(bench.serving.transformer) at batch B, and one decode step at batch B; utilisation = achieved FLOP/s /
measured peak FLOP/s (a large float32 GEMM on the same device), fitted per stage with
u(X) = min(u_max, (X/X_sat)^alpha) (:mod:`..system.roofline`). On a CUDA machine the engine, the
transformer and the peak GEMM all run on the GPU, so the fit gives X_sat and alpha for the GPU, as the
paper's Figure 1 does."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...core import measure
from ...core.errors import ConfigError
from ...core.params import as_dict
from ...core.step import Context, Result
from ...core.study import step
from ...serving.transformer import Generator, LMSpec, build_model
from ..params import Params
from ..system import roofline
from . import inputs

METHOD = (
    "Peak: median FLOP/s of {pr} timed {n}x{n} float32 matmuls (torch, {threads} threads, after {pw} warm-up). "
    "Search: an engine with Q slots all busy (top-M {tm}), {ew} warm-up extends then {er} timed extends, "
    "FLOPs = 3 x d x distance tasks. Prefill: one forward pass of B prompts of {T} tokens; decode: one step "
    "of B sequences after a {ctx}-token prefill; FLOPs from the model's shapes (2 per weight per token plus "
    "attention); {lr} timed runs after {lw} warm-up. All timers time.perf_counter, CUDA synchronised. "
    "Utilisation u = FLOP/s / peak on {dev} ({proxy}).")


def _peak(n: int, repeats: int, warmup: int, dev: str) -> float:
    import torch

    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    t = measure.repeat(lambda: a @ b, repeats=repeats, warmup=warmup, cuda=dev.startswith("cuda"))
    return float(2 * n ** 3 / np.median(t.runs))


def _search_rows(p: Params, v: inputs.Vectors, seed: int, dev: str) -> list[dict]:
    rp = p.roofline
    rows = []
    for q in rp.search_batches:
        eng = inputs.engine(p, v, q, rp.search_top_m, seed)
        idx = np.arange(q) % len(v.queries)
        eng.admit(v.queries[idx], [1] * q, [rp.search_top_m] * q, [None] * q)
        for i in range(rp.search_warmup + rp.search_repeats):
            with measure.Timer(cuda=dev.startswith("cuda")) as t:
                eng.extend()
            rows.append({"stage": "search", "x": q, "phase": "warmup" if i < rp.search_warmup else "measured",
                         "repeat": i, "seconds": t.seconds, "work": eng.last_fill, "launches": eng.last_launches,
                         "flops": roofline.search_flops(eng.last_fill, v.base.shape[1]), "active": eng.n_active()})
    return rows


def _lm_flops(stage: str, lm, b: int, T: int, context: int) -> float:
    if stage == "prefill":
        return roofline.lm_flops_prefill(lm.d_model, lm.layers, lm.vocab, 4, b, T)
    return roofline.lm_flops_decode(lm.d_model, lm.layers, lm.vocab, 4, b, context)


def _lm_rows(p: Params, seed: int, dev: str) -> list[dict]:
    import torch

    rp, lm = p.roofline, p.roofline.lm
    spec = LMSpec("roofline", "dec", lm.d_model, lm.layers, lm.heads, vocab=lm.vocab)
    T, C = rp.prompt_tokens, rp.decode_context
    model = build_model(spec, 8, max_len=max(T, C) + rp.lm_repeats + rp.lm_warmup + 2, seed=seed).to(dev)
    rows = []
    cuda = dev.startswith("cuda")
    for stage, batches in (("prefill", rp.prefill_batches), ("decode", rp.decode_batches)):
        for b in batches:
            toks = torch.randint(0, lm.vocab, (b, T if stage == "prefill" else C), device=dev)
            gen = Generator(spec, model, b, model.pos.num_embeddings - 1)
            if stage == "decode":
                gen.prefill(toks)
            for i in range(rp.lm_warmup + rp.lm_repeats):
                if stage == "prefill":
                    gen.len = 0
                with measure.Timer(cuda=cuda) as t:
                    gen.prefill(toks) if stage == "prefill" else gen.step(toks[:, 0])
                rows.append({"stage": stage, "x": b, "phase": "warmup" if i < rp.lm_warmup else "measured",
                             "repeat": i, "seconds": t.seconds, "work": b * (T if stage == "prefill" else 1),
                             "flops": _lm_flops(stage, lm, b, T, gen.len)})
    return rows


def _method(rp, threads: int, dev: str) -> str:
    return METHOD.format(pr=rp.lm_repeats, n=rp.peak_n, threads=threads, pw=rp.lm_warmup, tm=rp.search_top_m,
                         ew=rp.search_warmup, er=rp.search_repeats, T=rp.prompt_tokens, ctx=rp.decode_context,
                         lr=rp.lm_repeats, lw=rp.lm_warmup, dev=dev,
                         proxy="the paper's quantity: a GPU's achieved share of its peak"
                         if dev.startswith("cuda") else "a CPU proxy for the paper's GPU utilisation")


@step("roofline", needs=("manifest", "graph"))
def roofline_step(ctx: Context) -> Result:
    p: Params = ctx.params
    rp = p.roofline
    measure.set_threads(p.engine.threads)
    v = inputs.loaded(p, ctx.input("manifest"), ctx.input("graph"))
    dev = inputs.device(p)
    if rp.search_top_m > v.base.shape[0]:
        raise ConfigError(f"trinity.roofline.search_top_m={rp.search_top_m} exceeds N={v.base.shape[0]}")
    peak = _peak(rp.peak_n, rp.lm_repeats, rp.lm_warmup, dev)
    df = pd.DataFrame(_search_rows(p, v, ctx.seed, dev) + _lm_rows(p, ctx.seed, dev))
    df["peak_flops"] = peak
    df["u"] = df.flops / df.seconds / peak
    df["work_per_s"] = df.work / df.seconds
    df["device"], df["dataset"], df["source"] = dev, v.ds.name, "measured"
    m = df[df.phase == "measured"].groupby(["stage", "x"]).u.median().reset_index()
    fits = pd.DataFrame([{"stage": s, **roofline.fit(g_.x, g_.u)} for s, g_ in m.groupby("stage")])
    return Result(records=df, summary=fits, dataset_id=f"{v.ds.name} ({v.ds.id})", dataset_checksum=v.ds.checksum,
                  method=_method(rp, p.engine.threads, dev),
                  provenance={"peak_flops": peak, "device": dev, "lm": as_dict(rp.lm)})

"""Trinity steps ``roofline`` (Figure 1) and ``placement`` (Figure 2).

On a CUDA machine the roofline measures the GPU (engine, transformer and peak GEMM all on it), so the
u(X) fit gives X_sat and alpha per stage for the GPU, as the paper's Figure 1 does.

- ``roofline``: on this machine, time one extend of the engine with Q concurrent queries, one prefill pass
  of the shared small transformer (bench.core.transformer) at batch B, and one decode step at batch B;
  utilisation = achieved FLOP/s / measured peak FLOP/s (a large float32 GEMM on the same device);
- ``placement``: the analytic model of :mod:`.placement` evaluated with the measured extend times (modelled).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core import measure, records
from ..core.errors import ConfigError
from ..core.step import Context, Result, reads
from ..core.transformer import Generator, LMSpec, build_model
from . import placement, roofline, setup
from .steps_serving import load_traces

ROOF_METHOD = (
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


def _search_rows(ctx, base, xq, g, dev) -> list[dict]:
    rp = ctx.params["roofline"]
    rows = []
    for q in rp["search_batches"]:
        eng = setup.engine(ctx.params, base, g, q, rp["search_top_m"], ctx.seed)
        idx = np.arange(q) % len(xq)
        eng.admit(xq[idx], [1] * q, [rp["search_top_m"]] * q, [None] * q)
        for i in range(rp["search_warmup"] + rp["search_repeats"]):
            with measure.Timer(cuda=dev.startswith("cuda")) as t:
                eng.extend()
            rows.append({"stage": "search", "x": q, "phase": "warmup" if i < rp["search_warmup"] else "measured",
                         "repeat": i, "seconds": t.seconds, "work": eng.last_fill, "launches": eng.last_launches,
                         "flops": roofline.search_flops(eng.last_fill, base.shape[1]), "active": eng.n_active()})
    return rows


def _lm_rows(ctx, dev) -> list[dict]:
    import torch

    rp, lm = ctx.params["roofline"], ctx.params["roofline"]["lm"]
    spec = LMSpec("roofline", "dec", lm["d_model"], lm["layers"], lm["heads"], vocab=lm["vocab"])
    T, C = rp["prompt_tokens"], rp["decode_context"]
    model = build_model(spec, 8, max_len=max(T, C) + rp["lm_repeats"] + rp["lm_warmup"] + 2, seed=ctx.seed).to(dev)
    rows = []
    cuda = dev.startswith("cuda")
    for stage, batches in (("prefill", rp["prefill_batches"]), ("decode", rp["decode_batches"])):
        for b in batches:
            toks = torch.randint(0, lm["vocab"], (b, T if stage == "prefill" else C), device=dev)
            gen = Generator(spec, model, b, model.pos.num_embeddings - 1)
            if stage == "decode":
                gen.prefill(toks)
            for i in range(rp["lm_warmup"] + rp["lm_repeats"]):
                if stage == "prefill":
                    gen.len = 0
                with measure.Timer(cuda=cuda) as t:
                    gen.prefill(toks) if stage == "prefill" else gen.step(toks[:, 0])
                f = (roofline.lm_flops_prefill(lm["d_model"], lm["layers"], lm["vocab"], 4, b, T) if stage == "prefill"
                     else roofline.lm_flops_decode(lm["d_model"], lm["layers"], lm["vocab"], 4, b, gen.len))
                rows.append({"stage": stage, "x": b, "phase": "warmup" if i < rp["lm_warmup"] else "measured",
                             "repeat": i, "seconds": t.seconds, "work": b * (T if stage == "prefill" else 1),
                             "flops": f})
    return rows


@reads("manifest", "graph")
def roofline_step(ctx: Context) -> Result:
    rp = ctx.params["roofline"]
    threads = setup.set_threads(ctx.params)
    ds, base, xq, g, side = setup.load(ctx.input("manifest"), ctx.input("graph"))
    setup.check(ctx.params, ds, base, xq, g)
    dev = setup.device(ctx.params)
    if rp["search_top_m"] > base.shape[0]:
        raise ConfigError(f"trinity.roofline.search_top_m={rp['search_top_m']} exceeds N={base.shape[0]}")
    peak = _peak(rp["peak_n"], rp["lm_repeats"], rp["lm_warmup"], dev)
    df = pd.DataFrame(_search_rows(ctx, base, xq, g, dev) + _lm_rows(ctx, dev))
    df["peak_flops"] = peak
    df["u"] = df.flops / df.seconds / peak
    df["work_per_s"] = df.work / df.seconds
    df["device"], df["dataset"], df["source"] = dev, ds.name, "measured"
    m = df[df.phase == "measured"].groupby(["stage", "x"]).u.median().reset_index()
    fits = pd.DataFrame([{"stage": s, **roofline.fit(g_.x, g_.u)} for s, g_ in m.groupby("stage")])
    return Result(records=df, summary=fits, dataset_id=f"{ds.name} ({ds.id})", dataset_checksum=ds.checksum,
                  method=ROOF_METHOD.format(pr=rp["lm_repeats"], n=rp["peak_n"], threads=threads,
                                            pw=rp["lm_warmup"], tm=rp["search_top_m"], ew=rp["search_warmup"],
                                            er=rp["search_repeats"], T=rp["prompt_tokens"], ctx=rp["decode_context"],
                                            lr=rp["lm_repeats"], lw=rp["lm_warmup"], dev=dev,
                                            proxy="the paper's quantity: a GPU's achieved share of its peak"
                                            if dev.startswith("cuda") else "a CPU proxy for the paper's GPU utilisation"),
                  provenance={"peak_flops": peak, "device": dev, "lm": rp["lm"]})


@reads("roofline", "trace")
def placement_step(ctx: Context) -> Result:
    pp = ctx.params["placement"]
    df = records.read(ctx.input("roofline"))
    s = df[(df.stage == "search") & (df.phase == "measured")].groupby("x").seconds.median()
    m = df[df.phase == "measured"].groupby(["stage", "x"]).u.median().reset_index()
    fit = roofline.fit(m[m.stage == "search"].x, m[m.stage == "search"].u)
    traced = load_traces(ctx.input("trace"), ctx.seed)
    mix = setup.all_classes(ctx.params)["mix"]
    ext = traced.extends(mix)
    q, t_ext = s.index.to_numpy(float), s.to_numpy(float)
    knee = float(np.clip(fit["x_knee"], q.min(), q.max()))
    per_dev = knee / (ext * float(np.interp(knee, q, t_ext)))
    prm = placement.PlacementParams(pp["prefill_nodes"], pp["decode_nodes"], pp["gpus_per_node"],
                                    pp["intra_node_us"] / 1e6, pp["network_us"] / 1e6, pp["prefill_share"])
    rows = placement.evaluate(q, t_ext, ext, [f * per_dev for f in pp["loads_x_device"]], fit, prm)
    out = pd.DataFrame(rows)
    out["load_x_device"] = out.load_rps / per_dev
    out["phase"] = "measured"
    return Result(records=out, source="modelled", method=(
        "Modelled (analytic, section 3.1 / Figure 2): " + placement.ASSUMPTIONS + ". Inputs measured here: the "
        f"engine's median extend time per concurrency Q (roofline step) and mean extends per request {ext:.1f} "
        f"(trace step); link latencies stated: intra-node {pp['intra_node_us']} us, network {pp['network_us']} us; "
        f"cluster {pp['prefill_nodes']}P+{pp['decode_nodes']}D nodes x {pp['gpus_per_node']} GPUs; loads are "
        f"multiples of one device's throughput at the knee Q={knee:.0f} ({per_dev:.0f} requests/s)."),
        provenance={"fit": fit, "per_device_rps_at_knee": per_dev})

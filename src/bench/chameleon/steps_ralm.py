"""Chameleon section 6.3 and Table 5: the ``ralm`` step (RALM serving per model x retrieval interval x
configuration, Figures 10-12) and the ``energy`` step (energy per query: measured where a power counter is
readable, else modelled from the power the authors' Table 5 implies)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..ann import ivf as ivf_index
from ..core import records
from ..core.errors import ConfigError
from ..core.step import Context, Result, reads
from ..data import prepared
from . import configs, fpga_model, paper_values, pqscan
from . import ralm as R
from .energy import power_counters


def _load_sizes(ctx: Context) -> dict:
    """Per model size (S, L): the dataset name, its index and the per-dimension mean / spread of its base."""
    loaded = {}
    for size, ds_name in ctx.params["ralm"]["datasets"].items():
        ds = prepared.load_vectors(ctx.input(f"manifest_{size}"))
        base = np.asarray(ds.base[:20000], dtype=np.float32)
        loaded[size] = (ds_name, ivf_index.load(ctx.input(f"index_{size}")), base.mean(0), base.std(0) + 1e-6)
    return loaded


def _spec(mname: str, mp: dict, rp: dict) -> R.LMSpec:
    return R.LMSpec(name=mname, arch=mp["arch"], d_model=mp["d_model"], layers=mp["layers"], heads=mp["heads"],
                    enc_layers=mp.get("enc_layers", 0), vocab=rp["vocab"], k=mp["k"],
                    retrieved_tokens=rp["retrieved_tokens"])


def _runs(spec, model_, cfg, cname, mp, size, rp, mu, sd, seed, ds_name) -> list[dict]:
    def retrieve(q, k):
        o = cfg.search(q, k)
        return o.I, o.seconds

    rows = []
    src = "measured" if cfg is None or cfg.source == "measured" else "modelled"
    for interval in mp["intervals"]:
        for bs in (1, rp["throughput_batch"][size]):
            for rep in range(rp["repeats"]):
                recs = R.generate(spec, model_, bs, rp["seq_len"], None if cfg is None else interval,
                                  None if cfg is None else retrieve, mu, sd, seed=seed + rep)
                rows += [{"model": spec.name, "config": cname, "interval": interval, "batch_size": bs, "rep": rep,
                          "source": src, "dataset": ds_name, "layers": spec.layers, "d_model": spec.d_model, **r}
                         for r in recs]
    return rows


@reads("manifest_*", "index_*")
def ralm(ctx: Context) -> Result:
    params, rp = ctx.params, ctx.params["ralm"]
    loaded = _load_sizes(ctx)
    rows = []
    for mname, mp in rp["models"].items():
        size = "S" if mname.endswith("-S") else "L"
        ds_name, idx, mu, sd = loaded[size]
        ivf = pqscan.ivfpq_of(idx)
        spec = _spec(mname, mp, rp)
        if ivf.d != spec.d_model:
            raise ConfigError(f"{mname}: index dimension {ivf.d} != d_model {spec.d_model}")
        model_ = R.build_model(spec, ivf.d, rp["seq_len"] + 1, ctx.seed)
        node = fpga_model.fpga_node(params, ivf.pq.M)
        for cname in ["none", *rp["configs"]]:
            cfg = None if cname == "none" else configs.make(cname, idx, params["nprobe"], ctx.threads, node=node)
            ok, why = (True, "") if cfg is None else cfg.available()
            if not ok:
                rows += [{"model": mname, "config": cname, "interval": interval, "batch_size": 0, "rep": 0,
                          "step": -1, "source": "not_run", "note": why, "why": why} for interval in mp["intervals"]]
                continue
            rows += _runs(spec, model_, cfg, cname, mp, size, rp, mu, sd, ctx.seed, ds_name)
    df = pd.DataFrame(rows)
    ok = df[df.source != "not_run"]
    summary = records.summarize_runs(ok, ["model", "config", "interval", "batch_size"], "step_s")
    return Result(
        records=df, summary=summary,
        method=f"RALM generation with random-weight torch models (KV cache), {rp['seq_len']} steps, batch 1 "
               f"(latency) and the profile's throughput batch; per step: retrieval seconds (measured, or "
               f"MODELLED for fpga-* configs: measured index scan + node model) plus measured inference "
               f"seconds; config 'none' = inference only. Layers and sequence length scaled by the profile.")


# --------------------------------------------------------------------------- energy (Table 5)
_SYSTEM = {"cpu": "CPU", "fpga-gpu": "FPGA-GPU", "fpga-cpu": "FPGA-GPU"}


def _paper_arch(pds: str, system: str) -> str:
    if system == "CPU":
        return "16CPU" if pds.startswith("RALM") else "8CPU"
    return "2FPGA-1GPU" if pds == "RALM-L1000M" else "1FPGA-1GPU"


def _energy_row(dsname, cfg, g, bs, pe, pl) -> dict | None:
    pds, system = paper_values.paper_dataset(dsname), _SYSTEM.get(cfg)
    gb = g[g.batch_size == bs]
    if pds is None or system is None or gb.empty:
        return None
    arch = _paper_arch(pds, system)
    e_row = pe[(pe.dataset == pds) & (pe.system == system) & (pe.batch_size == bs)]
    l_row = pl[(pl.dataset == pds) & (pl.arch == arch) & (pl.batch_size == bs)]
    if e_row.empty or l_row.empty:
        return None
    paper_mj, paper_ms = float(e_row.energy_mj.iloc[0]), float(l_row.median_ms.iloc[0])
    watts = paper_mj * 1e-3 * bs / (paper_ms * 1e-3)
    ours_ms = float(gb.latency_ms.median())
    measured = gb["energy_per_query_mj"].dropna() if "energy_per_query_mj" in gb else pd.Series([], dtype=float)
    if len(measured) and (gb.source == "measured").all():
        e_mj, src, note = float(measured.median()), "measured", "RAPL/NVML counters around the timed batches"
    else:
        e_mj, src = watts * ours_ms * 1e-3 / bs * 1e3, "modelled"
        note = f"no readable power counter: power implied by the paper ({arch}) x our latency"
    return {"dataset": dsname, "paper_dataset": pds, "config": cfg, "system": system, "batch_size": bs,
            "our_latency_ms": ours_ms, "paper_latency_ms": paper_ms, "paper_power_w": watts, "energy_mj": e_mj,
            "paper_energy_mj": paper_mj, "source": src, "note": note}


@reads(optional=("search",))
def energy(ctx: Context) -> Result:
    """Energy per query for CPU and ChamVS configurations, paper values beside.

    Measured where a counter was readable during the search step's timed batches (RAPL, NVML), else
    MODELLED: the power the authors' Table 5 implies (energy x batch / their median latency) times our
    median batch latency, per query.
    """
    pe, pl = paper_values.energy(), paper_values.latency()
    rows = []
    for path in ctx.inputs.get("search", []):
        df = records.read(path)
        df = df[(df.kind == "latency") & (df.phase == "measured")]
        for (dsname, cfg), g in df.groupby(["dataset", "config"]):
            rows += [r for bs in ctx.params["energy"]["batch_sizes"]
                     if (r := _energy_row(dsname, cfg, g, bs, pe, pl)) is not None]
    df = pd.DataFrame(rows)
    if df.empty:
        df = pd.DataFrame([{"dataset": "", "source": "not_run", "note": "no search records with cpu/fpga"}])
    return Result(records=df, method=energy.__doc__.split("\n\n")[1].strip().replace("\n", " "),
                  provenance={"power_counters": power_counters()})

"""Measurement step ``placement`` (Trinity section 3.1, Figure 2): the analytic model of
:mod:`..system.placement` (modelled, not measured) evaluated with the engine's measured extend times per
concurrency (``roofline`` step) and the mean extends per request of the workload (``trace`` step)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.measuring import records
from ...core.measuring.step import Context, Result
from ...core.declaring.study import step
from ..params import Params
from ..system import placement, roofline
from . import inputs


def _method(pp, ext: float, knee: float, per_dev: float) -> str:
    return ("Modelled (analytic, section 3.1 / Figure 2): " + placement.ASSUMPTIONS + ". Inputs measured here: "
            f"the engine's median extend time per concurrency Q (roofline step) and mean extends per request "
            f"{ext:.1f} (trace step); link latencies stated: intra-node {pp.intra_node_us} us, network "
            f"{pp.network_us} us; cluster {pp.prefill_nodes}P+{pp.decode_nodes}D nodes x {pp.gpus_per_node} GPUs; "
            f"loads are multiples of one device's throughput at the knee Q={knee:.0f} ({per_dev:.0f} requests/s).")


@step("placement", needs=("roofline", "trace"), per="first", threads=1, timed=False,
      keys=("graph", "engine", "recall", "workload", "load", "scheduler", "placement"))
def placement_step(ctx: Context) -> Result:
    p: Params = ctx.params
    pp = p.placement
    df = records.read(ctx.input("roofline"))
    s = df[(df.stage == "search") & (df.phase == "measured")].groupby("x").seconds.median()
    m = df[df.phase == "measured"].groupby(["stage", "x"]).u.median().reset_index()
    fit = roofline.fit(m[m.stage == "search"].x, m[m.stage == "search"].u)
    traced = inputs.load_traces(ctx.input("trace"), ctx.seed)
    ext = traced.extends(inputs.classes(p).mix)
    q, t_ext = s.index.to_numpy(float), s.to_numpy(float)
    knee = float(np.clip(fit["x_knee"], q.min(), q.max()))
    per_dev = knee / (ext * float(np.interp(knee, q, t_ext)))
    prm = placement.PlacementParams(pp.prefill_nodes, pp.decode_nodes, pp.gpus_per_node,
                                    pp.intra_node_us / 1e6, pp.network_us / 1e6, pp.prefill_share)
    out = pd.DataFrame(placement.evaluate(q, t_ext, ext, [f * per_dev for f in pp.loads_x_device], fit, prm))
    out["load_x_device"] = out.load_rps / per_dev
    out["phase"] = "measured"
    out["cluster"] = f"{pp.prefill_nodes} prefill + {pp.decode_nodes} decode nodes of {pp.gpus_per_node} GPUs"
    return Result(records=out, source="modelled", method=_method(pp, ext, knee, per_dev),
                  provenance={"fit": fit, "per_device_rps_at_knee": per_dev})

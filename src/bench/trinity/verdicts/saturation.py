"""Trinity's Figure 1 rows (section 2): vector search saturates at a different batch size than prefill, and
than decode. A GPU claim (the paper's u is a GPU's utilisation): the CPU stand-in is drawn beside the row
and never judges it; on a CUDA device the same rows are judged, under the premises that each stage's gain
flattened inside its sweep and its knee was observed, not extrapolated."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.judging import claims, fidelity, intervals
from .. import analysis
from ..params import Params
from . import paper
from .common import STUDY, shrunk

JUDGED_ON = "profile gpu on one CUDA GPU (the roofline step on the GPU, its peak a GPU GEMM)"
FLAT_PAPER = "beyond B_sat 'increasing B yields negligible utilization gains' (section 2)"


def _premises(s: analysis.Saturation, flat_gain: float) -> list[claims.Premise]:
    """A stage's saturation as the records show it (the same statistics the figure draws): its gain per
    doubling over the sweep's last two doublings, an interval over the fresh processes, below ``flat_gain``;
    and its fitted knee (with the bootstrap interval of refits) inside the measured batches."""
    stops = f" (the sweeps stopped: {s.stopped})" if s.stopped else ""
    flat = claims.premise_interval(f"{s.stage} saturates inside the sweep", s.gain, flat_gain, "<=",
                                   what=f"gain per doubling of its median utilisation{stops} from batch {s.x_low:g} "
                                        f"to {s.x_top:g}", paper=FLAT_PAPER)
    k, lo, hi = s.knee
    where = f"fitted knee {k:.3g} [{lo:.3g}, {hi:.3g}] against the measured batches [{s.x_min:g}, {s.x_max:g}]"
    knee = claims.Premise(f"{s.stage}'s knee observed", s.knee_inside,
                          where + ("" if s.knee_inside else ": extrapolated beyond the sweep"),
                          paper="knees read off measured curves (Figure 1)")
    return [flat, knee]


def _interval(m: pd.DataFrame, level: float) -> str:
    n = intervals.n_processes(m)
    return (f"bootstrap over {n} fresh process(es) (resampled first), then their timed runs at each batch, "
            f"refit; {level:.3g} interval")


def roofline_rows(df: pd.DataFrame, params: Params) -> list[claims.Claim]:
    m = analysis.measured(df)
    rp, level = params.roofline, analysis.FLAT_LEVEL
    sat = analysis.saturations(m, rp.knee_boot, level)
    have = fidelity.ran_on(m)
    out = []
    for other in ("prefill", "decode"):
        if "search" not in sat or other not in sat:
            continue
        est = analysis.knee_ratio(sat["search"].knees, sat[other].knees, level)
        ratio = intervals.Estimate(*est, clusters=intervals.n_processes(m), level=level)
        dev = str(m.device.iloc[0])
        out.append(claims.claim(
            STUDY, f"claim-saturation-search-vs-{other}", f"vector search saturates at a different batch size than "
            f"{other}", "qualitative (sec. 2, Fig. 1)", estimate=ratio, threshold=float(np.log2(rp.knee_factor)),
            unit="|log2 knee ratio|", source="measured", machine_busy=claims.busy(m),
            premises=_premises(sat["search"], rp.flat_gain) + _premises(sat[other], rp.flat_gain),
            interval=_interval(m, level), definition=paper.saturation(other), needs=("gpu",), ran_on=have,
            judged_on=JUDGED_ON,
            scale=f"ran on {dev} ({'a CUDA GPU' if dev.startswith('cuda') else 'a CPU stand-in for the GPU'}); "
                  f"knees search {sat['search'].knee[0]:.3g}, {other} {sat[other].knee[0]:.3g}; plateaus u_max "
                  f"search {sat['search'].u_max:.2f}, {other} {sat[other].u_max:.2f} (the paper: prefill ≈ 1, "
                  "decode and search bandwidth-bound, well below)"
                  + shrunk(params, (("roofline", "max_doublings"), ("roofline", "sweep_budget_s"),
                                    ("roofline", "search_batches"), ("roofline", "prefill_batches"),
                                    ("roofline", "decode_batches"))),
            quantity=f"knee ratio, search against {other}",
            reason=f"knees differ by >= {rp.knee_factor:g}x <=> |log2 ratio| >= {np.log2(rp.knee_factor):.2f}; a "
                   "knee counts only where the stage's gain flattened inside the sweep and the fit puts it inside "
                   "the measured batches"))
    return out

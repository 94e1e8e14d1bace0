"""Trinity's scheduler rows (section 3.3), judged on the ``sched`` records at one load the profile fixes
(the mildest overload), with FIFO missing prefill deadlines there as their premise and the replay's error
against the live engine (the trace step's scheduler check points) carried in every interval: the paper's
claim (TTFT protected without starving decode) and the harness's targets (deadlines met, decode stall)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.judging import claims, intervals
from .. import analysis
from ..params import Params
from . import paper
from .common import PAIRED, STUDY, busy, clusters, of_dataset, paired, replay_error, shrunk, traces_words, widened


def deadline_share(rows: pd.DataFrame) -> tuple[intervals.Estimate, str]:
    """The share of prefill retrievals that met their deadline, pooled over the seeds, with the Korn-Graubard
    interval over the fresh trace processes (:func:`bench.core.judging.intervals.cluster_proportion_ci`): the
    seeds replaying one trace share its measured extend times, so a binomial over every retrieval would leave
    out the noise between runs of the live engine. Returns the estimate and the counts in words."""
    k = np.round(rows.pre_within_deadline * rows.n_prefill)
    per = pd.DataFrame({"k": k, "n": rows.n_prefill, "g": clusters(rows)}).groupby("g")[["k", "n"]].sum()
    words = (f"{int(per.k.sum())} of {int(per.n.sum())} prefill retrievals over {rows.repeat.nunique()} seeds met "
             f"the deadline; per trace process {', '.join(f'{a / b:.3f}' for a, b in zip(per.k, per.n))}")
    return intervals.cluster_proportion_ci(per.k, per.n), words


KG = ("Korn-Graubard over the fresh trace processes (the seeds replaying one share its extend times), widened "
      "by the replay's error on the share")


def _setting(sp) -> tuple[float | None, str]:
    """The judged prefill load and how it was chosen, in words (None where no listed load overloads)."""
    load = sp.judged()
    if load is None:
        return None, (f"no listed prefill load overloads the engine with decode share {sp.decode_share} (total "
                      f"> 1), so the scheduler rows have no setting")
    how = ("named in the profile (scheduler.judged_load)" if sp.judged_load is not None else
           "the lowest listed load past capacity, the mildest overload: past it, any policy that meets prefill "
           "deadlines must cut decode by the excess")
    return load, (f"prefill load {load:.2f} + decode {sp.decode_share:.2f} = total {load + sp.decode_share:.2f} x "
                  f"capacity ({how})")


def estimates(tri: pd.DataFrame, ff: pd.DataFrame, pairs: pd.DataFrame) -> dict:
    """What the scheduler rows judge at the judged load (and the figure draws), each widened by the replay's
    error against the live engine: name -> (estimate, error, words). ``share``/``fifo_share``: the shares of
    prefill retrievals within the deadline (Korn-Graubard over trace processes); ``stall`` and ``tokens``:
    Trinity over FIFO, paired seed by seed."""
    out = {}
    for name, rows, pol in (("share", tri, "trinity"), ("fifo_share", ff, "fifo")):
        est, words = deadline_share(rows)
        err = replay_error(pairs, "sched", "pre_within_deadline", pol, absolute=True,
                           what=f"{'Trinity' if pol == 'trinity' else 'FIFO'}'s share within the deadline")
        out[name] = (widened(est, err), err, words)
    for name, col, what in (("stall", "dec_stall_fraction", "the decode stall fraction"),
                            ("tokens", "tokens_per_s", "decode tokens/s")):
        err = replay_error(pairs, "sched", col, "trinity", versus="fifo", what=f"{what}, Trinity over FIFO")
        out[name] = (widened(paired(tri, ff, col), err), err, "")
    return out


def _fifo_premise(est: dict, sp) -> claims.Premise:
    """The rows' setting, checked as the claim is (an interval over fresh trace processes, with the replay's
    error): FIFO misses more than ``fifo_miss`` of prefill deadlines at the judged load."""
    e, err, words = est["fifo_share"]
    return claims.premise_interval(
        f"FIFO misses > {sp.fifo_miss:.0%} of prefill deadlines at this load", e, 1 - sp.fifo_miss,
        "<=", what=f"FIFO met ({words}; {err.text()})",
        paper="no load stated; the scheduler is for loads where serving prefill and decode in arrival order "
              "pushes TTFT beyond the latency budget (section 3.3)")


def _over_bar(est: intervals.Estimate, bar: float) -> intervals.Estimate:
    return intervals.Estimate(est[0] / bar, est[1] / bar, est[2] / bar, est.clusters, est.level)


def _ttft(tri, ff, sp, est: dict, common: dict) -> claims.Claim:
    """TTFT protected (Trinity keeps >= 1 - fifo_miss of prefill deadlines, where FIFO misses more) without
    starving decode (Trinity keeps >= decode_tokens_floor of FIFO's decode tokens/s): both, each over its bar."""
    bar = 1 - sp.fifo_miss
    configs = [claims.Config.of(f"prefill within deadline, Trinity, over {bar:g}", _over_bar(est["share"][0], bar),
                                common["machine_busy"]),
               claims.Config.of(f"decode tokens/s, Trinity over FIFO, over {sp.decode_tokens_floor:g}",
                                _over_bar(est["tokens"][0], sp.decode_tokens_floor), common["machine_busy"])]
    return claims.claim(STUDY, "claim-sched-ttft-without-starving", "the stage-aware scheduler protects TTFT "
                        "without starving decode", "qualitative (sec. 3.3)", configs=configs, threshold=1.0,
                        unit="x its bar", definition=paper.TTFT, needs=(),
                        quantity="prefill deadlines and decode tokens, Trinity against FIFO",
                        reason=f"prefill met {tri.pre_within_deadline.median():.3f} vs FIFO "
                               f"{ff.pre_within_deadline.median():.3f}; decode tokens/s "
                               f"{tri.tokens_per_s.median():.0f} vs FIFO {ff.tokens_per_s.median():.0f} (medians); "
                               f"{est['share'][1].text()}; {est['tokens'][1].text()}; {traces_words(tri)}; {PAIRED}",
                        **common)


def _targets(tri, ff, sp, est: dict, common: dict) -> list[claims.Claim]:
    (share, e_share, words), (stall, e_stall, _) = est["share"], est["stall"]
    return [
        claims.claim(STUDY, "target-sched-deadline", "Trinity meets the prefill deadline for >= 99% of prefill "
                     "retrievals at a load where FIFO misses > 5%", ">= 0.99 (harness target)", estimate=share,
                     threshold=sp.target_met, unit="of prefill", interval=KG,
                     quantity="share of prefill retrievals within the deadline, Trinity",
                     reason=f"{words}; {e_share.text()}", **common),
        claims.claim(STUDY, "target-sched-stall", "... with a decode stall fraction no worse than FIFO's",
                     "<= 1.0x FIFO (harness target)", estimate=stall, threshold=1.0, direction="<=",
                     unit="x FIFO's stall fraction", quantity="decode stall fraction, Trinity over FIFO",
                     reason=f"stall {tri.dec_stall_fraction.median():.3f} vs FIFO {ff.dec_stall_fraction.median():.3f}"
                            f" (medians); {e_stall.text()}; {traces_words(tri)}; {PAIRED}", **common),
    ]


def sched_rows(df: pd.DataFrame, params: Params, pairs: pd.DataFrame) -> list[claims.Claim]:
    sp = params.scheduler
    runs = analysis.sched_runs(df)
    load, setting = _setting(sp)
    at = runs[np.isclose(runs.load_frac, load)] if load is not None else runs.iloc[:0]
    tri, ff = at[at.policy == "trinity"], at[at.policy == "fifo"]
    if tri.empty or ff.empty:
        why = setting if load is None else f"trinity and fifo were not both run at {setting}"
        return [claims.claim(STUDY, "claim-sched-ttft-without-starving", "the stage-aware scheduler protects TTFT "
                             "without starving decode", "qualitative (sec. 3.3)", threshold=1.0, source="not_run",
                             verdict=claims.INCONCLUSIVE, definition=paper.TTFT, needs=(),
                             reason=f"not run: {why}")]
    dur = params.load.live_check.sched_seconds(sp.duration_s)
    pairs = of_dataset(pairs, str(at.dataset.iloc[0])) if "dataset" in at else pairs
    est = estimates(tri, ff, pairs)
    common = {"source": "emulated", "machine_busy": busy(at, pairs), "premises": [_fifo_premise(est, sp)],
              "scale": f"{setting}, {tri.repeat.nunique()} seeds of {sp.duration_s:g} s (the replay checked on "
                       f"{dur:g} s runs)" + shrunk(params, (("scheduler", "duration_s"), ("trace_queries",),
                                                             ("trace_calibration",)))}
    return [*_targets(tri, ff, sp, est, common), _ttft(tri, ff, sp, est, common)]

"""The replay checked against the live engine (the harness's own check of the method behind the serving rows
of sections 3.2 and 3.3): at each check point the trace step's fresh process served the same seeded arrivals
live and on the replay of its own trace; the replay's error, replay / live, with a t-interval over the fresh
trace processes, for each point, policy and headline quantity. The serving rows carry the same errors in
their intervals (:mod:`.common`); this row states them and holds them to a band."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from ...core.judging import claims, intervals
from .. import analysis
from .common import STUDY

BAND = (0.8, 1.25)   # the harness's target: the replay within 25% of the live engine
QUANTITIES = {"load": (("p95_s", "p95 latency"), ("throughput_rps", "throughput")),
              "sched": (("tokens_per_s", "decode tokens/s"), ("pre_p95_wait_s", "prefill p95 wait"))}


POLICY = {"static": "static batching", "continuous": "continuous batching", "fifo": "FIFO", "trinity": "Trinity"}


@dataclasses.dataclass(frozen=True)
class Point:
    """The replay's error on one quantity of one policy at one check point: exp of the t-interval of
    log(replay / live) over the fresh trace processes, and each process's replay / live."""

    where: str
    quantity: str
    policy: str
    estimate: intervals.Estimate
    per_process: np.ndarray
    busy: bool

    @property
    def name(self) -> str:
        return f"{self.quantity}, {self.policy}, {self.where}"


def error_points(pairs: pd.DataFrame) -> list[Point]:
    """Every (check point, policy, quantity) of the check pairs (what the check row judges and its figure
    draws); a process where the live engine or the replay served none has no ratio and is left out."""
    out = []
    for (check, arrival, load, pol), g in pairs.groupby(["check", "arrival", "load_frac", "policy"]):
        where = f"{arrival} arrivals at {load:g}" if check == "load" else f"scheduler at prefill load {load:g}"
        for q, words in QUANTITIES.get(check, ()):
            e = analysis.per_process_error(g, q, pol)
            e = e[np.isfinite(e)]
            t = intervals.t_interval(e.to_numpy())
            est = intervals.Estimate(*(math.exp(x) for x in t), clusters=t.clusters)
            busy = bool(g.machine_busy_live.any()) if "machine_busy_live" in g else False
            out.append(Point(where, words, POLICY.get(pol, pol), est, np.exp(e.to_numpy()), busy))
    return out


def error_configs(pairs: pd.DataFrame) -> list[claims.Config]:
    return [claims.Config.of(p.name, p.estimate, p.busy) for p in error_points(pairs)]


def replay_rows(pairs: pd.DataFrame) -> list[claims.Claim]:
    if pairs.empty:
        return [claims.claim(STUDY, "check-replay-vs-live", "the replay of traced searches agrees with the live "
                             "engine", "within 25% (harness check)", band=BAND, source="not_run",
                             verdict=claims.INCONCLUSIVE, reason="not run: no check points in the trace records "
                             "(the live check is off), so no replayed row can be judged")]
    configs = error_configs(pairs)
    n = pairs.process_uid.nunique()
    return [claims.claim(STUDY, "check-replay-vs-live", "the replay of traced searches agrees with the live engine "
                         "serving the same arrivals", "within 25% (harness check)", configs=configs, band=BAND,
                         unit="x live (replay / live)", source="measured",
                         scale=f"{pairs.check.nunique()} kinds of check point, {n} fresh trace processes",
                         reason="t-interval over the fresh trace processes of log(replay / live), each process's "
                                "live engine and the replay of its own trace serving the same seeded arrivals")]

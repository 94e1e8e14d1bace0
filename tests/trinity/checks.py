"""Check rows of the trace step (the replay against the live engine) for tests of Trinity's serving rows: in
each fresh trace process, each check point served live and replayed, the replay off by a given factor."""
import pandas as pd

from bench.trinity import analysis


def check_rows(errors: dict[str, list[float]] | None = None, processes: int = 3, sched_load: float = 0.6,
               load_points=(("bursty", 0.3), ("poisson", 1.0))) -> pd.DataFrame:
    """Trace rows ``row=check``. ``errors``: policy -> the replay's factor over live in each process (the
    same factor on every quantity of that policy; 1.0 where not given)."""
    errors = errors or {}
    rows = []
    for i in range(processes):
        base = {"row": "check", "process": i, "process_uid": f"u{i}", "dataset": "d", "machine_busy": False}
        points = [("load", a, ld, pol) for a, ld in load_points for pol in ("static", "continuous")]
        points += [("sched", float("nan"), sched_load, pol) for pol in ("fifo", "trinity")]
        for check, arrival, load, pol in points:
            f = errors.get(pol, [1.0] * processes)[i]
            for engine, k in (("live", 1.0), ("replay", f)):
                q = {"p50_s": 0.01 * k, "p95_s": 0.02 * k, "throughput_rps": 100.0 * k, "lane_util": 0.5 * k,
                     "p50_jitter_s": 0.001 * k, "p95_jitter_s": 0.002 * k, "tokens_per_s": 900.0 * k,
                     "dec_stall_fraction": 0.2 * k, "pre_p95_wait_s": 0.004 * k,
                     "pre_within_deadline": min(1.0, 0.9 * k)}
                rows.append({**base, "check": check, "engine": engine, "policy": pol, "arrival": arrival,
                             "load_frac": load, "seed": 7, **q})
    return pd.DataFrame(rows)


def pairs(errors: dict[str, list[float]] | None = None, processes: int = 3) -> pd.DataFrame:
    return analysis.check_pairs(check_rows(errors, processes))

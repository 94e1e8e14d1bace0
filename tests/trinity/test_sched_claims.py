"""Trinity's scheduler rows (section 3.3) read from synthetic and replayed records: the deadline share's
interval holds the noise between fresh trace processes (Korn-Graubard), one trace process decides nothing,
and the ``sched`` and ``load`` steps replay their seeds on the trace's processes in turn."""
import numpy as np
import pandas as pd

from bench.core import claims as core_claims, records
from bench.core.step import Context, execute
from bench.trinity import STUDY, claims


def _runs(met: dict[str, list[float]], processes: int, n: int = 1344) -> pd.DataFrame:
    """Scheduler 'run' rows at one overloaded load: per policy, the share met per seed; seed r replayed
    trace process r mod ``processes``."""
    rows = []
    for policy, shares in met.items():
        for rep, share in enumerate(shares):
            rows.append({"row": "run", "policy": policy, "total_load": 1.1, "repeat": rep,
                         "trace_process": rep % processes, "n_prefill": n, "pre_within_deadline": share,
                         "dec_stall_fraction": 0.2 if policy == "fifo" else 0.1,
                         "tokens_per_s": 1000.0 + rep, "machine_busy": False})
    return pd.DataFrame(rows)


def _deadline(df: pd.DataFrame) -> core_claims.Claim:
    return next(r for r in claims._sched_claims(df, STUDY.parameters({})) if r.claim_id == "target-sched-deadline")


def test_deadline_share_is_judged_over_trace_processes_not_pooled_retrievals():
    fifo = [0.30, 0.25, 0.28]
    # one run of a quiet set: two seeds near 0.975, one at 0.998; a binomial over 4032 retrievals reads
    # [0.978, 0.987] (not reproduced); the processes' spread leaves it undecided
    row = _deadline(_runs({"fifo": fifo, "trinity": [0.9769, 0.9978, 0.9732]}, processes=3))
    assert row.verdict == core_claims.INCONCLUSIVE and "Korn-Graubard over 3 fresh trace processes" in row.reason
    assert row.ci_low < 0.978 and core_claims.proportion_ci(int(round(0.9826 * 4032)), 4032)[2] < 0.99
    every = _deadline(_runs({"fifo": fifo, "trinity": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]}, processes=6))
    assert every.verdict == core_claims.REPRODUCED and every.ci_low < 1.0      # all met: the exact floor
    far = _deadline(_runs({"fifo": fifo, "trinity": [0.80, 0.82, 0.79]}, processes=3))
    assert far.verdict == core_claims.NOT_REPRODUCED


def test_one_trace_process_decides_nothing():
    df = _runs({"fifo": [0.30, 0.25, 0.28], "trinity": [1.0, 1.0, 1.0]}, processes=1)
    rows = {r.claim_id: r for r in claims._sched_claims(df, STUDY.parameters({}))}
    for cid in ("target-sched-deadline", "target-sched-stall", "claim-sched-ttft-without-starving"):
        assert rows[cid].verdict == core_claims.INCONCLUSIVE, cid
        assert "one trace process" in rows[cid].reason, cid
    assert rows["target-sched-deadline"].ours == 1.0


def test_serving_steps_replay_seeds_on_the_trace_processes_in_turn(study, tmp_path):
    """A trace taken in two fresh processes (the second twice as slow): in ``sched`` and ``load`` seed r replays
    process r mod 2, each at its own capacity, and the load rows' intervals resample the processes first."""
    tr = records.read(study["records"]["trace"][0])
    slow = tr.assign(process=1, dur_s=tr.dur_s * 2)
    two = tmp_path / "trace2.parquet"
    records.write(two, pd.concat([tr.assign(process=0), slow], ignore_index=True), tr.attrs.get("provenance", {}))
    got = {}
    for name in ("sched", "load"):
        out = tmp_path / f"{name}.parquet"
        execute(Context("trinity", name, study["typed"], "test", 1, 1, out,
                        {**study["inputs"], "trace": [str(two)]}, "tiny-sift", section=study["params"]),
                STUDY.steps[name])
        got[name] = df = records.read(out)
        runs = df[df.row == "run"] if name == "sched" else df[df.engine == "replay"]
        assert (runs.trace_process == runs.repeat % 2).all(), name
        cap = runs.groupby("trace_process").capacity_rps.first()
        assert np.isclose(cap[0] / cap[1], 2.0, rtol=1e-6), name
        assert df.attrs["provenance"]["trace_processes"] == 2, name
    rows = {r.claim_id: r for r in claims._lane_claims(got["load"], study["typed"])}
    assert "2 fresh trace processes they replayed resampled first" in rows["claim-continuous-busy-tiny-sift"].reason
    one = {r.claim_id: r for r in claims._lane_claims(got["load"][got["load"].trace_process == 0], study["typed"])}
    assert one["claim-continuous-busy-tiny-sift"].verdict == core_claims.INCONCLUSIVE
    assert "one trace process" in one["claim-continuous-busy-tiny-sift"].reason

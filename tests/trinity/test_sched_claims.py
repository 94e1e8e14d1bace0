"""Trinity's scheduler rows (section 3.3) read from synthetic and replayed records: the deadline share's
interval holds the noise between fresh trace processes (Korn-Graubard), one trace process decides nothing,
the rows are judged at one load the profile fixes (with FIFO's misses there as their premise) and pair the
policies seed by seed, and the ``sched`` and ``load`` steps replay their seeds on the trace's processes in
turn."""
import numpy as np
import pandas as pd
import pytest

from bench.core.judging import claims as core_claims

from bench.core.judging import intervals

from bench.core.measuring import records
from bench.core.base.errors import ConfigError
from bench.core.measuring.step import Context, execute
from bench.trinity import STUDY, claims


def _runs(met: dict[str, list[float]], processes: int, n: int = 1344, load: float = 0.6,
          tokens: dict[str, list[float]] | None = None) -> pd.DataFrame:
    """Scheduler 'run' rows at prefill load ``load`` (0.6 + decode 0.5: the defaults' first overloaded load):
    per policy, the share met per seed; seed r replayed trace process r mod ``processes``."""
    rows = []
    for policy, shares in met.items():
        for rep, share in enumerate(shares):
            tok = (tokens or {}).get(policy, [1000.0 + rep] * len(shares))[rep]
            rows.append({"row": "run", "policy": policy, "load_frac": load, "total_load": load + 0.5,
                         "repeat": rep, "trace_process": rep % processes, "n_prefill": n,
                         "pre_within_deadline": share, "dec_stall_fraction": 0.2 if policy == "fifo" else 0.1,
                         "tokens_per_s": tok, "machine_busy": False})
    return pd.DataFrame(rows)


def _rows(df: pd.DataFrame, **scheduler) -> dict[str, core_claims.Claim]:
    params = STUDY.parameters({"scheduler": scheduler} if scheduler else {})
    return {r.claim_id: r for r in claims._sched_claims(df, params)}


def _deadline(df: pd.DataFrame) -> core_claims.Claim:
    return next(r for r in claims._sched_claims(df, STUDY.parameters({})) if r.claim_id == "target-sched-deadline")


def test_deadline_share_is_judged_over_trace_processes_not_pooled_retrievals():
    fifo = [0.30, 0.25, 0.28]
    # one run of a quiet set: two seeds near 0.975, one at 0.998; a binomial over 4032 retrievals reads
    # [0.978, 0.987] (not reproduced); the processes' spread leaves it undecided
    row = _deadline(_runs({"fifo": fifo, "trinity": [0.9769, 0.9978, 0.9732]}, processes=3))
    assert row.verdict == core_claims.INCONCLUSIVE and "Korn-Graubard over 3 fresh trace processes" in row.reason
    assert row.ci_low < 0.978 and intervals.proportion_ci(int(round(0.9826 * 4032)), 4032)[2] < 0.99
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


def test_rows_are_judged_at_the_profiles_load_not_where_the_records_first_miss():
    """FIFO misses at 0.6 and 0.8 in these records; the rows read the first overloaded listed load (0.6), or
    the one the profile names, never a load chosen from the records (which moved between runs)."""
    mild = _runs({"fifo": [0.3, 0.3, 0.3, 0.3], "trinity": [1.0] * 4}, processes=2, load=0.6,
                 tokens={"fifo": [1000.0] * 4, "trinity": [960.0, 950.0, 955.0, 958.0]})
    heavy = _runs({"fifo": [0.1] * 4, "trinity": [1.0] * 4}, processes=2, load=0.8,
                  tokens={"fifo": [1000.0] * 4, "trinity": [650.0, 640.0, 660.0, 655.0]})
    quiet = _runs({"fifo": [1.0] * 4, "trinity": [1.0] * 4}, processes=2, load=0.4)
    df = pd.concat([quiet, mild, heavy], ignore_index=True)
    first = _rows(df)["claim-sched-ttft-without-starving"]
    assert first.verdict == core_claims.REPRODUCED and 0.95 <= first.ours <= 0.96
    assert "total 1.10 x capacity (the lowest listed load past capacity" in first.scale
    named = _rows(df, judged_load=0.8)["claim-sched-ttft-without-starving"]
    assert named.verdict == core_claims.NOT_REPRODUCED and named.ours < 0.7
    assert "named in the profile" in named.scale
    with pytest.raises(ConfigError, match="judged_load=0.75: not one of prefill_loads"):
        STUDY.parameters({"scheduler": {"judged_load": 0.75}}).scheduler.judged()


def test_a_load_where_fifo_keeps_its_deadlines_puts_the_rows_out_of_reach():
    df = _runs({"fifo": [1.0, 0.999, 1.0, 0.999], "trinity": [1.0] * 4}, processes=4)
    for cid, row in _rows(df).items():
        assert row.verdict == core_claims.OUT_OF_REACH, cid
        assert "premise 'FIFO misses > 5% of prefill deadlines at this load' fails" in row.reason, cid
    none = _rows(_runs({"fifo": [1.0] * 2, "trinity": [1.0] * 2}, processes=2, load=0.4),
                 prefill_loads=[0.2, 0.4])
    assert list(none) == ["target-sched-deadline"] and "no listed prefill load overloads" in \
        none["target-sched-deadline"].reason


def test_policy_ratios_pair_each_seed_with_itself():
    """Trace process 1 runs 1.5x slower than process 0 for both policies; seed by seed Trinity keeps 0.95 of
    FIFO's tokens. Paired, the ratio is 0.95 with no spread; unpaired (the medians resampled apart), the
    processes' levels would spread it over [0.63, 1.43]."""
    fifo = [1000.0, 1500.0, 1000.0, 1500.0, 1000.0, 1500.0]
    df = _runs({"fifo": [0.3] * 6, "trinity": [1.0] * 6}, processes=2,
               tokens={"fifo": fifo, "trinity": [0.95 * x for x in fifo]})
    row = _rows(df)["claim-sched-ttft-without-starving"]
    assert row.ci_low == pytest.approx(0.95) and row.ci_high == pytest.approx(0.95)
    assert "ratios paired run by run" in row.reason
    unpaired = intervals.ratio_ci(np.array([0.95 * x for x in fifo]), np.array(fifo),
                                    groups=(np.arange(6) % 2, np.arange(6) % 2))
    assert unpaired[1] < 0.9 < 1.0 < unpaired[2]

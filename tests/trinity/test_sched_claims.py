"""Trinity's scheduler rows (section 3.3) read from synthetic and replayed records: the deadline share's
interval holds the noise between fresh trace processes (Korn-Graubard) and the replay's error against the
live engine; fewer than three trace processes decide nothing; the rows are judged at one load the profile
fixes (with FIFO's misses there as their premise, tested on an interval) and pair the policies seed by seed;
the ``sched`` and ``load`` steps replay their seeds on the trace's processes in turn."""
import numpy as np
import pandas as pd
import pytest

from bench.core.judging import claims as core_claims
from bench.core.judging import intervals
from bench.core.measuring import records
from bench.core.base.errors import ConfigError
from bench.core.measuring.step import Context, execute
from bench.trinity import STUDY
from bench.trinity.verdicts import batching, scheduling

from .checks import pairs as check_pairs

EXACT = check_pairs()     # the replay agrees with the live engine in every trace process (error 0)


def _runs(met: dict[str, list[float]], processes: int, n: int = 1344, load: float = 0.6,
          tokens: dict[str, list[float]] | None = None) -> pd.DataFrame:
    """Scheduler 'run' rows at prefill load ``load`` (0.6 + decode 0.5: the defaults' first overloaded load):
    per policy, the share met per seed; seed r replayed trace process r mod ``processes``."""
    rows = []
    for policy, shares in met.items():
        for rep, share in enumerate(shares):
            tok = (tokens or {}).get(policy, [1000.0 + rep] * len(shares))[rep]
            rows.append({"row": "run", "policy": policy, "load_frac": load, "total_load": load + 0.5,
                         "repeat": rep, "trace_process": rep % processes, "trace_uid": f"u{rep % processes}",
                         "n_prefill": n, "pre_within_deadline": share,
                         "dec_stall_fraction": 0.2 * (1 + 0.01 * rep) if policy == "fifo" else 0.1 * (1 + 0.03 * rep),
                         "tokens_per_s": tok, "machine_busy": False, "process_uid": "sched", "dataset": "d"})
    return pd.DataFrame(rows)


def _rows(df: pd.DataFrame, pairs=EXACT, **scheduler) -> dict[str, core_claims.Claim]:
    params = STUDY.parameters({"scheduler": scheduler} if scheduler else {})
    return {r.claim_id: r for r in scheduling.sched_rows(df, params, pairs)}


def test_deadline_share_is_judged_over_trace_processes_not_pooled_retrievals():
    fifo = [0.30, 0.25, 0.28]
    # one run of a quiet set: two seeds near 0.975, one at 0.998; a binomial over 4032 retrievals reads
    # [0.978, 0.987] (not reproduced); the processes' spread leaves it undecided
    row = _rows(_runs({"fifo": fifo, "trinity": [0.9769, 0.9978, 0.9732]}, processes=3))["target-sched-deadline"]
    assert row.verdict == core_claims.INCONCLUSIVE and "Korn-Graubard over the fresh trace processes" in row.reason
    assert row.ci_low < 0.978 and intervals.proportion_ci(int(round(0.9826 * 4032)), 4032)[2] < 0.99
    every = _rows(_runs({"fifo": fifo * 2, "trinity": [1.0] * 6}, processes=6))["target-sched-deadline"]
    assert every.verdict == core_claims.REPRODUCED and every.ci_low < 1.0      # all met: the exact floor
    far = _rows(_runs({"fifo": fifo, "trinity": [0.80, 0.82, 0.79]}, processes=3))["target-sched-deadline"]
    assert far.verdict == core_claims.NOT_REPRODUCED


@pytest.mark.parametrize("processes", [1, 2])
def test_fewer_than_three_trace_processes_decide_nothing(processes):
    """One or two fresh trace processes (1 degree of freedom was the stall premise's flaw): every row and its
    FIFO premise are inconclusive and say why."""
    df = _runs({"fifo": [0.30, 0.25, 0.28, 0.3], "trinity": [1.0, 1.0, 1.0, 1.0]}, processes=processes)
    for cid, row in _rows(df).items():
        assert row.verdict == core_claims.INCONCLUSIVE, cid
        assert "fewer than" in row.reason, cid


def test_three_trace_processes_decide_the_stall_premise():
    """With three fresh trace processes FIFO's misses are an interval with 2 degrees of freedom: the premise
    holds and the stall target is judged (Trinity's stall half FIFO's)."""
    df = _runs({"fifo": [0.30, 0.25, 0.28], "trinity": [1.0, 1.0, 1.0]}, processes=3)
    row = _rows(df)["target-sched-stall"]
    assert "premise 'FIFO misses > 5% of prefill deadlines at this load' holds" in row.reason
    assert row.verdict == core_claims.REPRODUCED and row.clusters == 3


def test_a_difference_smaller_than_the_replays_error_is_not_judged():
    """Trinity keeps 0.95 of FIFO's decode tokens against the 0.9 floor: judged where the replay matches the
    live engine; where the replay's tokens ratio is off by 5-15% in the three trace processes, the row's
    interval carries that error and no longer clears the floor."""
    fifo = [1000.0, 1010.0, 990.0]
    df = _runs({"fifo": [0.3] * 3, "trinity": [1.0] * 3}, processes=3,
               tokens={"fifo": fifo, "trinity": [k * x for k, x in zip((0.95, 0.96, 0.94), fifo)]})
    assert _rows(df)["claim-sched-ttft-without-starving"].verdict == core_claims.REPRODUCED
    off = check_pairs({"trinity": [1.05, 1.10, 1.15]})
    row = _rows(df, off)["claim-sched-ttft-without-starving"]
    assert row.verdict == core_claims.INCONCLUSIVE, row.reason
    assert "the replay's error on decode tokens/s, Trinity over FIFO" in row.reason
    assert "so a difference smaller than the replay's error is not judged" in row.reason


def test_rows_are_judged_at_the_profiles_load_not_where_the_records_first_miss():
    """FIFO misses at 0.6 and 0.8 in these records; the rows read the first overloaded listed load (0.6), or
    the one the profile names, never a load chosen from the records (which moved between runs)."""
    mild = _runs({"fifo": [0.3, 0.3, 0.3], "trinity": [1.0] * 3}, processes=3, load=0.6,
                 tokens={"fifo": [1000.0] * 3, "trinity": [960.0, 950.0, 955.0]})
    heavy = _runs({"fifo": [0.1] * 3, "trinity": [1.0] * 3}, processes=3, load=0.8,
                  tokens={"fifo": [1000.0] * 3, "trinity": [650.0, 640.0, 660.0]})
    quiet = _runs({"fifo": [1.0] * 3, "trinity": [1.0] * 3}, processes=3, load=0.4)
    df = pd.concat([quiet, mild, heavy], ignore_index=True)
    first = _rows(df)["claim-sched-ttft-without-starving"]
    assert first.verdict == core_claims.REPRODUCED, first.reason
    assert "total 1.10 x capacity (the lowest listed load past capacity" in first.scale
    named = _rows(df, judged_load=0.8)["claim-sched-ttft-without-starving"]
    assert named.verdict == core_claims.NOT_REPRODUCED and named.ours < 0.8
    assert "named in the profile" in named.scale
    with pytest.raises(ConfigError, match="judged_load=0.75: not one of prefill_loads"):
        STUDY.parameters({"scheduler": {"judged_load": 0.75}}).scheduler.judged()


def test_a_load_where_fifo_keeps_its_deadlines_puts_the_rows_out_of_reach():
    df = _runs({"fifo": [1.0, 0.999, 1.0], "trinity": [1.0] * 3}, n=4000, processes=3)
    for cid, row in _rows(df).items():
        assert row.verdict == core_claims.OUT_OF_REACH, (cid, row.reason)
        assert "premise 'FIFO misses > 5% of prefill deadlines at this load' fails" in row.reason, cid
    none = _rows(_runs({"fifo": [1.0] * 3, "trinity": [1.0] * 3}, processes=3, load=0.4), prefill_loads=[0.2, 0.4])
    assert list(none) == ["claim-sched-ttft-without-starving"]
    assert "no listed prefill load overloads" in none["claim-sched-ttft-without-starving"].reason


def test_policy_ratios_pair_each_seed_with_itself():
    """Trace process 1 runs 1.5x slower than process 0 for both policies; seed by seed Trinity keeps 0.95 of
    FIFO's tokens. Paired, the ratio is 0.95 with no spread; unpaired (the medians resampled apart), the
    processes' levels would spread it over [0.63, 1.43]."""
    fifo = [1000.0, 1500.0, 1000.0, 1500.0, 1000.0, 1500.0]
    df = _runs({"fifo": [0.3] * 6, "trinity": [1.0] * 6}, processes=3,
               tokens={"fifo": fifo, "trinity": [0.95 * x for x in fifo]})
    est, _, _ = scheduling.estimates(df[df.policy == "trinity"], df[df.policy == "fifo"], EXACT)["tokens"]
    assert est[1] == pytest.approx(0.95) and est[2] == pytest.approx(0.95) and est.clusters == 3
    unpaired = intervals.ratio_ci(np.array([0.95 * x for x in fifo]), np.array(fifo),
                                  groups=(np.arange(6) % 2, np.arange(6) % 2))
    assert unpaired[1] < 0.9 < 1.0 < unpaired[2]


def test_serving_steps_replay_seeds_on_the_trace_processes_in_turn(study, tmp_path):
    """A trace taken in three fresh processes (the second twice as slow): in ``sched`` and ``load`` seed r
    replays process r mod 3, each at its own capacity, and the rows name the trace process (its uid) they
    replayed, the cluster their intervals resample first."""
    tr = records.read(study["records"]["trace"][0])
    three = tmp_path / "trace3.parquet"
    parts = [tr.assign(process=i, process_uid=f"t{i}", dur_s=tr.dur_s * (2 if i == 1 else 1)) for i in range(3)]
    records.write(three, pd.concat(parts, ignore_index=True), tr.attrs.get("provenance", {}))
    typed = STUDY.parameters({**study["params"], "load": {**study["params"]["load"], "repeats": 3},
                              "scheduler": {**study["params"]["scheduler"], "repeats": 3}})
    got = {}
    for name in ("sched", "load"):
        out = tmp_path / f"{name}.parquet"
        execute(Context("trinity", name, typed, "test", 1, 1, out, {**study["inputs"], "trace": [str(three)]},
                        "tiny-sift", section=study["params"]), STUDY.steps[name])
        got[name] = df = records.read(out)
        runs = df[df.row == "run"] if name == "sched" else df[df.engine == "replay"]
        assert (runs.trace_process == runs.repeat % 3).all(), name
        assert (runs.trace_uid == "t" + runs.trace_process.astype(str)).all(), name
        cap = runs.groupby("trace_process").capacity_rps.first()
        assert np.isclose(cap[0] / cap[1], 2.0, rtol=1e-6), name
        assert df.attrs["provenance"]["trace_processes"] == 3, name
    rows = {r.claim_id: r for r in batching.lane_rows(got["load"], typed, check_pairs())}
    assert "3 fresh trace processes they replayed resampled first" in rows["claim-continuous-busy-tiny-sift"].reason
    assert rows["claim-continuous-busy-tiny-sift"].clusters == 3

"""Issue 29 for ESPN: verdicts that do not flip between runs. The parallel-SSD premise (paper section 2.3) is
judged from interleaved QD1/QD32 probe pairs with an interval, never from one reading; the prefetch target
and the memory saved are judged over fresh worker processes with a Student-t interval, and with fewer than
three workers the row is inconclusive, not a verdict resting on one difference."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.core.judging import claims as core_claims
from bench.core.measuring import records
from bench.core.measuring.step import Context
from bench.espn import STUDY, claims
from bench.espn.steps import e2e

from .fake_records import PARAMS_OVERRIDES, probe_rows, write_all


def _build(inputs) -> dict:
    data = records.read_kinds(inputs)
    return {r.claim_id: r for r in claims.build(data, STUDY.parameters(PARAMS_OVERRIDES), "t")}


EMULATED = {"ssd_emulation": "fuse-latency", "ssd_latency_us": 100.0, "ssd_threads": 32}


def _with_native_probes(tmp_path, qd1: float, qd32: float, pairs: int = 10, busy: bool = False,
                        ssd: str = "native") -> dict:
    """The fake records with the probe pairs of the native disk (or of the emulated SSD) replaced."""
    inputs = write_all(tmp_path, "ok")
    df = records.read(inputs["e2e"][0])
    keep = df[~((df.phase == "probe") & (df.ssd == ssd))]
    tag = {} if ssd == "native" else EMULATED
    new = pd.DataFrame([{**r, **tag} for r in probe_rows(np.random.default_rng(1), ssd, qd1, qd32,
                                                          "measured" if ssd == "native" else "emulated",
                                                          pairs=pairs, busy=busy)])
    records.write(inputs["e2e"][0], pd.concat([keep, new], ignore_index=True),
                  {"build": df.attrs["provenance"]["build"]})
    return _build(inputs)


def test_probe_pairs_alternate_their_order_and_are_rows():
    calls = []

    def measure(qd, seed):
        calls.append(qd)
        return 1000.0 * qd

    ctx = Context(study="espn", step="e2e", params=None, profile="t", seed=3, threads=1, out=None, process=1)
    rows = e2e.probe_pairs(measure, ctx, "start", 3, ssd="native", source="measured")
    assert calls == [1, 32, 32, 1, 1, 32]
    assert [r["phase"] for r in rows] == ["probe"] * 3 and {r["backend"] for r in rows} == {"probe"}
    assert rows[0]["probe_qd1_iops"] == 1000.0 and rows[0]["probe_qd32_iops"] == 32000.0

    def failing(qd, seed):
        raise OSError("no O_DIRECT here")
    assert e2e.probe_pairs(failing, ctx, "start", 2) == []


def test_premise_holds_only_when_the_whole_interval_clears(tmp_path):
    mm = _with_native_probes(tmp_path, 27000.0, 135000.0)["speedup-vs-mmap"]   # 5x, tight
    assert "holds" in mm.premise and "10 interleaved QD1/QD32 probe pairs" in mm.premise
    assert "the harness's own bar" in mm.premise   # where the threshold comes from


def test_premise_straddling_its_bar_is_undecided_not_failed(tmp_path):
    mm = _with_native_probes(tmp_path, 20000.0, 80000.0)["speedup-vs-mmap"]   # 4x: the interval straddles 4
    assert mm.verdict == core_claims.INCONCLUSIVE and "straddles" in mm.premise


def test_premise_wholly_below_its_bar_fails(tmp_path):
    mm = _with_native_probes(tmp_path, 20000.0, 40000.0)["speedup-vs-mmap"]   # 2x
    assert mm.verdict == core_claims.NEEDS_HARDWARE and "the whole interval is below it" in mm.premise


def test_premise_below_its_bar_on_a_busy_machine_is_undecided(tmp_path):
    mm = _with_native_probes(tmp_path, 20000.0, 40000.0, busy=True)["speedup-vs-mmap"]
    assert mm.verdict == core_claims.INCONCLUSIVE and "busy machine" in mm.premise


def test_one_reading_is_no_interval(tmp_path):
    mm = _with_native_probes(tmp_path, 20000.0, 40000.0, pairs=1)["speedup-vs-mmap"]
    assert mm.verdict == core_claims.INCONCLUSIVE and "at least 4 needed" in mm.premise


def test_qd_gain_resamples_whole_pairs():
    pairs = pd.DataFrame({"probe_qd1_iops": [10.0, 20.0, 10.0, 20.0], "probe_qd32_iops": [40.0, 80.0, 40.0, 80.0],
                          "process": [0, 0, 1, 1]})
    est, lo, hi = claims.qd_gain(pairs)
    assert est == pytest.approx(4.0) and lo <= 4.0 <= hi


def test_t_interval_over_workers():
    est, lo, hi = claims.t_interval([0.8, 0.9, 0.85, 0.88])
    assert lo < est < hi < 1.0
    _, lo2, hi2 = claims.t_interval([0.8, 0.9])   # one degree of freedom: wide
    assert hi2 - lo2 > hi - lo
    assert np.isnan(claims.t_interval([0.9])[1])


def test_two_workers_leave_the_target_inconclusive(tmp_path):
    rows = _build(write_all(tmp_path, "ok"))
    native = rows["target-prefetch-not-slower-than-direct"]   # 2 budgets x 2 processes, caps never bound
    assert native.verdict == core_claims.REPRODUCED and "4 workers" in native.reason
    assert "pooled over the budgets where the cap never bound (0.25, 0.50)" in native.reason
    emu = rows["target-prefetch-not-slower-than-direct-emulated-ssd-100us"]   # one budget x 2 processes
    assert emu.verdict == core_claims.INCONCLUSIVE and "fewer than the 3" in emu.reason
    mem = rows["memory-saved"]
    assert "4 workers" in mem.reason and mem.interval.startswith("noise")


def test_a_second_stage_runs_while_a_worker_row_is_undecided(tmp_path):
    """The e2e step's two-stage design: after stage 1, a row over fewer than three workers (the emulated
    target here) is undecided, so stage 2 runs, where a profile turns the design on (small, paper)."""
    inputs = write_all(tmp_path, "ok")
    df = records.read(inputs["e2e"][0])
    capped = df.budget.isin(["0.25", "0.50"])
    df = df.assign(stage=1, ann_index_bytes=14e6, budget_frac=np.where(capped, df.budget.where(capped, "nan").astype(float), np.nan))
    df["budget_embedding_bytes"] = df.budget_frac * 160e6
    assert STUDY.parameters(PARAMS_OVERRIDES).e2e_second_stage is False   # off unless a profile turns it on
    assert e2e.decided(df, STUDY.parameters({**PARAMS_OVERRIDES, "e2e_second_stage": True})) is False
    assert e2e.decided(df, STUDY.parameters(PARAMS_OVERRIDES)) is True


SIBLINGS = ("speedup-vs-mmap{}", "target-prefetch-not-slower-than-direct{}")


@pytest.mark.parametrize("ssd,suffix", [("native", ""), ("emulated", "-emulated-ssd-100us")])
def test_a_failed_parallel_premise_grades_every_sibling_the_same(tmp_path, ssd, suffix):
    """Every row on a device that rests on the SSD serving many reads at once (the speed-up over mmap and the
    prefetch target) reads "needs hardware we lack" when that premise fails there: the native target has 4
    workers (it would read reproduced), the emulated one 2 (it would read inconclusive for too few)."""
    rows = _with_native_probes(tmp_path, 20000.0, 40000.0, pairs=32, ssd=ssd)   # 2x on this device only
    for cid in (c.format(suffix) for c in SIBLINGS):
        r = rows[cid]
        assert r.verdict == core_claims.NEEDS_HARDWARE, (cid, r.verdict, r.reason)
        assert "the SSD serves many reads at once" in r.premise and "the whole interval is below it" in r.premise
        assert "32 interleaved QD1/QD32 probe pairs" in r.premise and "fewer than the 3" not in r.reason
    other = "-emulated-ssd-100us" if ssd == "native" else ""   # the other device's premise still holds
    assert rows[f"target-prefetch-not-slower-than-direct{other}"].verdict != core_claims.NEEDS_HARDWARE


@pytest.mark.parametrize("ssd,suffix", [("native", ""), ("emulated", "-emulated-ssd-100us")])
def test_an_undecided_parallel_premise_leaves_every_sibling_inconclusive(tmp_path, ssd, suffix):
    rows = _with_native_probes(tmp_path, 20000.0, 80000.0, ssd=ssd)   # 4x: the interval straddles the bar
    for cid in (c.format(suffix) for c in SIBLINGS):
        assert rows[cid].verdict == core_claims.INCONCLUSIVE and "straddles" in rows[cid].premise


def test_more_probe_pairs_narrow_the_premise_interval():
    """Issue 29: the emulated device's probe pairs went from 4 to 16, then 24, before and after its
    configuration (the disk's from 2 to 6 at each point); on the same spread of pairs, 4x as many give an
    interval about half as wide (the bar never moves)."""
    rng = np.random.default_rng(7)

    def width(n):
        p = pd.DataFrame({"probe_qd1_iops": 3000 * rng.lognormal(0, 0.1, n),
                          "probe_qd32_iops": 10500 * rng.lognormal(0, 0.15, n), "process": np.arange(n) % 2})
        _, lo, hi = claims.qd_gain(p, 0.975)
        return hi - lo
    few, many = np.median([width(16) for _ in range(5)]), np.median([width(64) for _ in range(5)])
    assert many < 0.75 * few
    assert e2e.SSD_PROBE_PAIRS >= 16 and e2e.DISK_PROBE_PAIRS >= 6 and claims.MIN_QD_GAIN == 4.0

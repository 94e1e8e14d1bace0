"""The declarations core enforces, each pinned on a synthetic study that breaks it: a circular emulation, a
GPU claim on CPU records, a premise past its own threshold, a target on a failed premise, a 2-process
interval, clusters that repeat across configurations; and the paper's definition beside ours."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.core.judging import claims, fidelity, intervals

DEF = fidelity.Definition("queries per second", "section 5", "queries per second")

# A synthetic study: an emulated accelerator that runs at a speed ratio taken from the paper, and a model
# whose power figure is the paper's. Its claims read the emulated rows.
RATIO = fidelity.PaperInput("acc_over_cpu", 4.0, "section 4: the accelerator is 4x the CPU")
WIDTH = fidelity.PaperInput("vector_width", 128.0, "section 3: 128 dimensions", "dims")
PAPER_INPUTS = (RATIO, WIDTH)


def _synthetic_records(seed: int = 0) -> pd.DataFrame:
    """Measured CPU times of 3 fresh processes and the emulated accelerator's, built by the emulation."""
    rng = np.random.default_rng(seed)
    cpu = rng.normal(1.0, 0.02, 30)
    proc = np.repeat(["a", "b", "c"], 10)
    acc = cpu / fidelity.value(RATIO)          # the emulation: the paper's ratio applied to our CPU
    return pd.DataFrame({"cpu_s": cpu, "acc_s": acc, "process": proc, "source": "emulated"})


def _build(fixed: bool) -> list[claims.Claim]:
    df = _synthetic_records()
    speedup = intervals.ratio_ci(df.cpu_s, df.acc_s, groups=(df.process, df.process))
    bytes_per_vector = 4 * fidelity.value(WIDTH)
    rows = [claims.claim("syn", "acc-speedup", "the accelerator is 3x faster", "3x", estimate=speedup,
                         threshold=3.0, unit="x", source="emulated", definition=DEF, needs=(),
                         fixed_by=(RATIO,) if fixed else ()),
            claims.claim("syn", "cpu-median", "the CPU takes about 1 s", "1 s",
                         estimate=intervals.bootstrap_ci(df.cpu_s, groups=df.process), threshold=0.5, unit="s",
                         definition=DEF, needs=()),
            claims.claim("syn", "vector-bytes", "a vector is 512 B", "512 B", ours=bytes_per_vector,
                         ci=(bytes_per_vector, bytes_per_vector), threshold=500, interval="exact: a size",
                         definition=DEF, needs=(), fixed_by=(WIDTH,) if fixed else ())]
    return rows


def test_the_sensitivity_test_catches_a_circular_emulation():
    moves = fidelity.sensitivity(lambda: _build(fixed=False), PAPER_INPUTS)
    assert set(moves) == {"acc-speedup", "vector-bytes"}            # the CPU's own time moves with nothing
    assert moves["acc-speedup"]["acc_over_cpu"] == pytest.approx(1.0, rel=0.05)
    bad = fidelity.circular_rows(_build(fixed=False), moves)
    assert any("acc-speedup moves with acc_over_cpu" in b for b in bad)
    assert any("vector-bytes moves with vector_width" in b for b in bad)


def test_a_row_that_names_its_paper_input_is_a_sanity_check_never_judged():
    rows = _build(fixed=True)
    moves = fidelity.sensitivity(lambda: _build(fixed=True), PAPER_INPUTS)
    assert fidelity.circular_rows(rows, moves) == []
    acc = rows[0]
    assert acc.verdict == claims.SANITY and "sanity check" in acc.reason and acc.fixed_by == "acc_over_cpu"
    assert "section 4" in acc.reason
    assert fidelity.value(RATIO) == 4.0   # scaling ends with the block


def test_a_gpu_claim_on_cpu_records_needs_hardware_and_names_who_would_judge_it():
    cpu = pd.DataFrame({"device": ["cpu"] * 6, "source": "measured"})
    est = intervals.Estimate(5.0, 4.5, 5.5, 3)
    row = claims.claim("syn", "gpu-speedup", "GPU 5x", "5x", estimate=est, threshold=3.0, needs=("gpu",),
                       ran_on=fidelity.ran_on(cpu), judged_on="profile gpu on one CUDA GPU", definition=DEF)
    assert row.verdict == claims.NEEDS_HARDWARE
    assert "a CUDA GPU" in row.reason and "profile gpu" in row.reason and "would read reproduced" in row.reason
    gpu = pd.DataFrame({"device": ["cuda:0"] * 6, "source": "measured"})
    on_gpu = claims.claim("syn", "gpu-speedup", "GPU 5x", "5x", estimate=est, threshold=3.0, needs=("gpu",),
                          ran_on=fidelity.ran_on(gpu), definition=DEF)
    assert on_gpu.verdict == claims.REPRODUCED and on_gpu.ran_on == "gpu"
    emulated = pd.DataFrame({"device": ["cuda:0"] * 6, "source": "emulated"})
    assert fidelity.ran_on(emulated) == frozenset()
    assert fidelity.missing(("gpus:4",), {"gpus:2", "gpu"}) == ["gpus:4"]
    with pytest.raises(ValueError, match="unknown hardware"):
        fidelity.missing(("tpu",), ())


def test_a_premise_past_its_own_threshold_is_refused():
    """ESPN's emulated SSD: a QD32/QD1 gain of at least 4x bounds the prefetcher's speed-up over mmap from
    below, so a 4x bar on it decides a 3.1x claim whenever it holds."""
    est = intervals.Estimate(4.4, 4.1, 4.8, 3)
    bar = claims.premise_interval("the SSD serves many reads at once", est, 4.0, bounds_claim=True)
    with pytest.raises(ValueError, match="past the claim's own threshold"):
        claims.claim("syn", "speedup", "3.1x faster", "3.1x", estimate=intervals.Estimate(3.8, 3.4, 4.2, 3),
                     threshold=3.1, premises=[bar])
    below = claims.premise_interval("the SSD serves many reads at once", est, 2.0, bounds_claim=True)
    ok = claims.claim("syn", "speedup", "3.1x faster", "3.1x", estimate=intervals.Estimate(3.8, 3.4, 4.2, 3),
                      threshold=3.1, premises=[below])
    assert ok.verdict == claims.REPRODUCED


def test_a_target_on_a_failed_premise_is_not_judged_and_one_that_drops_it_is_refused():
    failed = claims.premise_interval("K is a small share of N", intervals.Estimate(0.25, 0.24, 0.26, 3), 0.01,
                                     "<=", paper="0.1%")
    est = intervals.Estimate(0.95, 0.93, 0.97, 3)
    paper = claims.claim("syn", "hit-rate", "over 90%", "> 90%", estimate=est, threshold=0.9, premises=[failed],
                         quantity="hit rate", definition=DEF, needs=())
    assert paper.verdict == claims.OUT_OF_REACH and "the paper: 0.1%" in paper.reason
    target = claims.claim("syn", "target-hit-rate", "target: over 85%", "(target)", estimate=est, threshold=0.85,
                          premises=[failed], quantity="hit rate")
    assert target.verdict == claims.OUT_OF_REACH
    dropped = claims.claim("syn", "target-hit-rate", "target: over 85%", "(target)", estimate=est, threshold=0.85,
                           quantity="hit rate")
    assert claims.check([paper, target]) == []
    assert any("without its premise" in b for b in claims.check([paper, dropped]))
    with pytest.raises(ValueError, match="unfit for the ledger"):
        claims.write([paper, dropped], "/nonexistent/claims.parquet", {})


def test_a_two_process_interval_decides_nothing():
    two = claims.claim("syn", "s", "faster", "2x", estimate=intervals.Estimate(3.0, 2.8, 3.2, 2), threshold=2.0)
    assert two.verdict == claims.INCONCLUSIVE and "2 fresh processes, fewer than the 3" in two.reason
    unstated = claims.claim("syn", "s", "faster", "2x", ours=3.0, ci=(2.8, 3.2), threshold=2.0)
    assert unstated.verdict == claims.INCONCLUSIVE and "unstated number" in unstated.reason
    three = claims.claim("syn", "s", "faster", "2x", estimate=intervals.Estimate(3.0, 2.8, 3.2, 3), threshold=2.0)
    assert three.verdict == claims.REPRODUCED and "resamples 3 fresh processes" in three.reason
    one_premise = claims.premise_interval("saturated", intervals.Estimate(2.0, 1.5, 2.5, 2), 1.0)
    assert one_premise.holds is None and "fewer than the 3" in one_premise.evidence
    reading = claims.premise("saturated", 2.0, 1.0)
    assert reading.holds is None and "one reading" in reading.evidence


def test_clusters_never_repeat_across_configurations():
    """Process 0 of one dataset is not process 0 of another: clustered by process number alone, two datasets'
    three processes would read as three clusters, not six."""
    rows = pd.DataFrame({"process": [0, 1, 2] * 2, "dataset": ["sift"] * 3 + ["deep"] * 3,
                         "gbps": [1.0, 1.1, 0.9, 0.5, 0.6, 0.4]})
    assert intervals.n_processes(rows) == 6
    est = intervals.bootstrap_ci(rows.gbps, groups=intervals.process_of(rows))
    assert est.clusters == 6
    tagged = rows.assign(process_uid=["u1", "u2", "u3", "u4", "u5", "u6"])
    assert len(set(intervals.process_of(tagged))) == 6
    by_config = pd.DataFrame({"process": [0, 0], "config": ["fpga", "gpu"]})
    assert len(set(intervals.process_of(by_config, by=("config",)))) == 2


def test_a_quantity_the_paper_defines_otherwise_is_not_judged():
    other = fidelity.Definition("index memory: the compressed index in DRAM", "section 5.4, Table 5",
                                "peak resident memory of the whole process", same=False)
    row = claims.claim("syn", "mem", "12x less memory", "12x", estimate=intervals.Estimate(5.0, 4.0, 6.0, 3),
                       threshold=5.0, definition=other)
    assert row.verdict == claims.INCONCLUSIVE and "not the one the paper defines" in row.reason
    assert "section 5.4" in row.definition


def test_a_quality_claim_needs_no_processes_and_ignores_a_busy_machine():
    recall = intervals.cluster_proportion_ci([960, 955, 958], [1000] * 3)
    row = claims.claim("syn", "recall", "recall@10 >= 0.9", "0.9", estimate=recall, threshold=0.9,
                       quality="recall@10 of the built index: deterministic given the build", machine_busy=True)
    assert row.verdict == claims.REPRODUCED and not row.machine_busy
    q = claims.claim("syn", "mrr", "MRR kept", "99%", estimate=intervals.bootstrap_ci([0.99, 1.0, 0.995, 1.0]),
                     threshold=0.95, quality="MRR@10 over queries")
    assert q.verdict == claims.REPRODUCED


def test_the_checks_refuse_a_paper_row_without_its_declarations():
    row = claims.claim("syn", "bare", "faster", "2x", estimate=intervals.Estimate(3.0, 2.8, 3.2, 3), threshold=2.0)
    bad = claims.check([row])
    assert any("quotes no definition" in b for b in bad) and any("declares no hardware" in b for b in bad)
    assert claims.check([row], reproduces_paper=False) == []   # a check study's rows are targets

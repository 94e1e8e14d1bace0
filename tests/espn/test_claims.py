"""ESPN's claims ledger rows: every claim exists, quotes the paper's definition and declares the hardware it
needs; verdicts come from intervals over fresh processes (timed rows) or per-query values (hit rates, MRR);
premises are tested as the claim is; rows set by the paper's numbers are sanity checks; emulated-SSD rows are
apart from native ones and never judge a claim that needs an SSD."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.core.judging import claims as core_claims
from bench.core.measuring import records as core_records
from bench.core.declaring.config import validate_section
from bench.espn import claims, premises

from .fake_records import PARAMS_OVERRIDES, build, frames, with_probes, write_all

IDS = {"speedup-vs-mmap", "speedup-vs-ssd-reads", "hit-rate-over-90", "hit-rate-over-90-real-passages",
       "mrr-kept-partial-rerank", "batch-threshold-exact", "batch-threshold-partial", "memory-saved",
       "target-reader-vs-fio", "target-within-1.2x-cached", "target-eq4-premise",
       "target-prefetch-not-slower-than-direct", "bow-vs-cls-size", "target-mmap-slower-with-less-memory",
       "speedup-vs-mmap-emulated-ssd-100us", "target-prefetch-not-slower-than-direct-emulated-ssd-100us"}


@pytest.fixture(scope="module")
def rows():
    return build(frames())


def test_every_row_exists_and_is_fit_for_the_ledger(rows):
    assert IDS <= set(rows)
    assert core_claims.frame(rows.values()) is not None  # unique ids, valid verdicts
    assert core_claims.check(list(rows.values())) == []
    for r in rows.values():
        if not core_claims.is_target(r.claim_id):
            assert r.definition.startswith("paper, ") and "ours:" in r.definition, r.claim_id
            assert r.needs is not None, r.claim_id


def test_timed_rows_resample_three_fresh_processes(rows):
    for cid in ("speedup-vs-mmap", "speedup-vs-ssd-reads", "batch-threshold-exact", "target-eq4-premise",
                "target-within-1.2x-cached", "target-mmap-slower-with-less-memory"):
        assert rows[cid].clusters == 3, (cid, rows[cid].clusters)
        assert rows[cid].ci_low < rows[cid].ours < rows[cid].ci_high


def test_a_satisfied_parallel_premise_does_not_decide_the_speedup(rows):
    """The disk serves reads at once (QD32/QD1 3.3x against the 2x bar, which lies below the claim's 3.1x),
    yet ESPN is only 2.4x faster than mmap here (at the smallest budget, as the paper's 3.1-3.9x): the row
    reads not reproduced, judged on the disk."""
    mm = rows["speedup-vs-mmap"]
    assert "premise 'the SSD serves many reads at once (section 3)' holds" in mm.premise
    assert mm.verdict == core_claims.NOT_REPRODUCED and mm.ours == pytest.approx(96 / 40, rel=0.05)
    assert "budget 0.25 of the table" in mm.scale
    assert mm.ran_on == "parallel-ssd" and mm.needs == "parallel-ssd"
    assert premises.MIN_QD_GAIN < mm.threshold


def test_a_premise_bar_past_the_claims_threshold_is_refused():
    """core refuses a premise bounding the claim whose bar lies past the claim's threshold: the speed-up's
    parallel premise is declared bounds_claim, so a bar at or past 3.1x could not be written."""
    p = dataclass_replace(premises.parallel(frames()["e2e"].query("phase == 'probe' and ssd == 'native'"), "disk",
                                            bounds_claim=True), bar=4.0)
    with pytest.raises(ValueError, match="decide the claim"):
        core_claims.claim("espn", "x", "x", "3.1x", ours=4.0, ci=(3.5, 4.5), threshold=3.1, premises=[p])


def dataclass_replace(p, **kw):
    import dataclasses

    return dataclasses.replace(p, **kw)


def test_the_emulated_ssd_row_never_judges_a_claim_needing_an_ssd(rows):
    """The emulated device is a stand-in: the row reads needs hardware, says what the interval would read,
    and names the device's stated and measured latency."""
    emu = rows["speedup-vs-mmap-emulated-ssd-100us"]
    assert emu.verdict == core_claims.NEEDS_HARDWARE and emu.source == "emulated" and emu.ran_on == ""
    assert "it would read" in emu.reason and "judged on profile paper" in emu.reason
    assert "+100 µs per read" in emu.claim and "measured +102 µs" in emu.claim


def test_memory_saved_reads_index_memory_from_the_sizes(rows):
    """memory-saved is the paper's quantity, (ANN index + table) / ANN index from the build's sizes, never
    the processes' peaks; the sizes follow from the paper's widths and tokens per passage, so it is a sanity
    check naming them."""
    data = frames()
    s = data["sizes"]
    s = s[(s.source == "measured") & (s.scope == "all records")].set_index("part").bytes
    mem = rows["memory-saved"]
    assert mem.ours == pytest.approx((s["ann_index"] + s["table_file"]) / s["ann_index"])
    # the paper states the saving with the table on an NVMe SSD at near-cached latency: these records' disk is not
    # one, so the row needs it (its value set by the paper's widths besides)
    assert mem.ci_low == mem.ci_high == mem.ours and mem.verdict == core_claims.NEEDS_HARDWARE
    assert mem.needs == "parallel-ssd" and "set by numbers taken from the paper" in mem.reason
    assert "6 - 19% of the total retrieval indices in memory" in mem.definition
    assert set(mem.fixed_by.split(",")) == {"CLS vector width", "BOW vector width", "bytes per vector dimension",
                                           "tokens per passage (synthetic filler)"}
    data["e2e"] = data["e2e"].assign(cgroup_max_usage_bytes=1e9)   # peaks play no part
    assert build(data)["memory-saved"].ours == mem.ours


def test_bow_vs_cls_is_a_sanity_check_of_the_paper_widths(rows):
    bc = rows["bow-vs-cls-size"]
    assert bc.verdict == core_claims.SANITY and "sanity check" in bc.reason
    assert set(bc.fixed_by.split(",")) == {"CLS vector width", "BOW vector width"}


def _hit_data(scanned: int) -> dict:
    data = frames()
    data["hitrate"] = data["hitrate"].assign(n_scanned=scanned)
    return data


def test_a_failing_k_over_n_premise_puts_the_hit_rate_out_of_reach():
    """The top K (1000) against the records the search scans: at 10,500 (9.5%, ours on tiny) the premise
    fails (the paper's largest is 0.37%, its bar 3.7%) and the row is out of reach, not not reproduced; at
    1M records scanned it holds and the row is judged."""
    r = build(_hit_data(10_500))["hit-rate-over-90"]
    assert r.verdict == core_claims.OUT_OF_REACH and "(K/N)' fails" in r.premise and "v1 nprobe 3000: 0.12%" in r.premise
    ok = build(_hit_data(1_000_000))["hit-rate-over-90"]
    assert "(K/N)' holds" in ok.premise and ok.verdict in (core_claims.REPRODUCED, core_claims.NOT_REPRODUCED,
                                                          core_claims.INCONCLUSIVE)
    assert ok.clusters is None and "load-independent" in ok.reason


def test_mrr_rests_on_k_over_n(rows):
    m = rows["mrr-kept-partial-rerank"]
    assert "K = 1000 of 28,000 records" in m.premise and m.verdict == core_claims.OUT_OF_REACH


def test_a_budget_that_did_not_bind_puts_the_row_out_of_reach():
    """The paper's speed-up over mmap is made where mmap works against its cap: a budget that did not bind
    (no failcnt, no reclaim in any process) is a failed premise, not a 'not reproduced'."""
    data = frames()
    data["e2e"] = data["e2e"].assign(failcnt_pass=0.0, reclaim_pass=0.0, budget_bound=False)
    r = build(data)["speedup-vs-mmap"]
    assert r.verdict == core_claims.OUT_OF_REACH and "'the memory budget binds (Tables 4/5)' fails" in r.premise


def test_eq4_premise_has_an_interval_over_fresh_processes():
    """target-eq4-premise read [0.0199, 0.0228] then [0.0180, 0.0194] in two runs: its interval left out the
    noise between runs. Now each process of the batch step measures its own budget, and the interval
    resamples those processes and the iops step's: budgets that differ between processes widen it."""
    data = frames()
    tight = build(data)["target-eq4-premise"]
    b = data["batch"]
    data["batch"] = b.assign(prefetch_budget_s=b.process.map({0: 4e-4, 1: 6e-4, 2: 8e-4}))
    wide = build(data)["target-eq4-premise"]
    assert tight.clusters == wide.clusters == 3
    assert (wide.ci_high - wide.ci_low) > 2 * (tight.ci_high - tight.ci_low)
    assert wide.ci_low < 4e-4 / 6e-4 * wide.ours and wide.ci_high > 8e-4 / 6e-4 * wide.ours * 0.9


def test_two_processes_leave_a_timed_row_inconclusive():
    data = frames()
    for k in ("e2e", "batch", "iops"):
        d = data[k][data[k].process != 2]
        d.attrs = data[k].attrs
        data[k] = d
    rows = build(data)
    assert rows["target-mmap-slower-with-less-memory"].verdict == core_claims.INCONCLUSIVE
    assert "fewer than the 3" in rows["target-mmap-slower-with-less-memory"].reason


def test_busy_machine_makes_a_verdict_inconclusive():
    data = frames()
    data["e2e"] = data["e2e"].assign(machine_busy=True)
    assert build(data)["target-mmap-slower-with-less-memory"].verdict == core_claims.INCONCLUSIVE


def test_claims_and_figure_verbs(tmp_path):
    """``bench espn claims`` reads --records KIND=PATH as the rule passes them; a step on a missing build is a
    short error."""
    import json

    from bench.cli import main

    inputs = write_all(tmp_path, "ok")
    recs = [a for k, paths in inputs.items() for p in paths for a in ("--records", f"{k}={p}")]
    params = json.dumps(validate_section("espn", PARAMS_OVERRIDES))
    assert main(["espn", "claims", *recs, "--profile", "t", "--params", params,
                 "--out", str(tmp_path / "claims.parquet")]) == 0
    assert IDS <= set(core_records.read(tmp_path / "claims.parquet").claim_id)
    assert "| espn |" in (tmp_path / "claims.md").read_text()
    assert main(["espn", "measure", "iops", "--input", "build=/nonexistent", "--out", str(tmp_path / "b.parquet"),
                 "--profile", "t", "--seed", "1", "--threads", "1", "--params", params]) != 0


def test_emulated_not_run_rows(tmp_path):
    rows = build(frames("not_run"))
    emu = rows["target-prefetch-not-slower-than-direct-emulated-ssd-100us"]
    assert emu.source == "not_run" and "not root" in emu.reason and emu.verdict == core_claims.NEEDS_TOOL
    assert rows["speedup-vs-mmap-emulated-ssd-100us"].verdict == core_claims.NEEDS_TOOL


def test_parallel_premise_gates_the_native_rows():
    """A disk whose QD32 rate is not twice its QD1 rate (1.3x here) does not serve reads at once: every native
    row needing such an SSD reads needs hardware, naming the premise."""
    rows = build(with_probes(frames(), "native", 20000.0, 26000.0))
    for cid in ("speedup-vs-mmap", "target-prefetch-not-slower-than-direct", "target-within-1.2x-cached"):
        assert rows[cid].verdict == core_claims.NEEDS_HARDWARE, (cid, rows[cid].reason)
    assert "fails" in rows["speedup-vs-mmap"].premise


def test_a_parallel_virtual_disk_is_not_an_nvme_ssd():
    """A virtio disk that serves 32 reads at once (from the host's cache, perhaps) holds the parallel premise
    but is no NVMe SSD: every native row needing one reads needs hardware, however its interval reads."""
    data = frames()
    e = data["e2e"]
    native = e.ssd == "native"
    e.loc[native, ["disk_name", "disk_model", "disk_driver"]] = ["vda", "no model reported (virtio_blk)", "virtio_blk"]
    e.loc[native, "disk_rotational"] = True
    rows = build(data)
    for cid in ("speedup-vs-mmap", "target-prefetch-not-slower-than-direct", "target-within-1.2x-cached"):
        assert rows[cid].verdict == core_claims.NEEDS_HARDWARE and rows[cid].ran_on == "", (cid, rows[cid].reason)
    assert "holds" in rows["speedup-vs-mmap"].premise


def test_an_undecided_parallel_premise_leaves_the_row_inconclusive():
    rows = build(with_probes(frames(), "native", 20000.0, 40000.0, spread=0.3))   # straddles 2x
    assert rows["speedup-vs-mmap"].verdict in (core_claims.INCONCLUSIVE, core_claims.NEEDS_HARDWARE)
    r = rows["speedup-vs-mmap"]
    assert "undecided" in r.premise or r.verdict == core_claims.NEEDS_HARDWARE


def test_qd_gain_resamples_whole_pairs_over_processes():
    pairs = pd.DataFrame({"probe_qd1_iops": [10.0, 20.0, 10.0, 20.0, 10.0, 20.0],
                          "probe_qd32_iops": [40.0, 80.0, 40.0, 80.0, 40.0, 80.0], "process": [0, 0, 1, 1, 2, 2]})
    est = premises.qd_gain(pairs)
    assert est[0] == pytest.approx(4.0) and est[1] <= 4.0 <= est[2] and est.clusters == 3
    assert np.isfinite(est[1])


def test_rows_set_by_paper_inputs_are_exactly_those_the_sensitivity_test_moves():
    from bench.core.judging import fidelity
    from bench.espn import synthetic
    from bench.espn.system import encoders, layout

    from .fake_records import params

    p = params()
    moves = fidelity.sensitivity(lambda: claims.build(synthetic.records(p), p, "t"),
                                 layout.PAPER_INPUTS + encoders.PAPER_INPUTS)
    got = {r.claim_id: set(filter(None, r.fixed_by.split(","))) for r in claims.build(synthetic.records(p), p, "t")}
    for cid, inputs in moves.items():
        assert set(inputs) <= got[cid], cid

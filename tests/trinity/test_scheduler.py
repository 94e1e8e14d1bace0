import numpy as np
import pytest

from bench.core.base.errors import ConfigError
from bench.trinity.system import event_loop, scheduler, workload

PRE = [workload.RequestClass(10, 16), workload.RequestClass(10, 32)]
DEC = [workload.RequestClass(5, 16)]


@pytest.fixture(scope="module")
def replay(small):
    from bench.trinity.system import batching
    from bench.trinity.system.engine import ExtendEngine

    e = ExtendEngine(small["base"], small["graph"], capacity=8, top_m_max=32, trace=True, chunk=64)
    ad = event_loop.LiveAdapter(e, small["queries"])
    src = workload.Source([workload.RequestClass(32, 16), workload.RequestClass(32, 32)], 40, 0)
    for m in (16, 32):
        for qi in range(40):
            r = workload.Request(next(src.ids), qi, 16, m, 0.0)
            src.heap.append((0.0, r.rid, r))
    done, _ = event_loop.run(ad, batching.make("continuous", 8, 0), src)
    traces = {(r.qidx, r.top_m): event_loop.Trace(np.array(r.steps), r.ids) for r in done}
    ext = {m: float(np.mean([len(t.steps) for (q, mm), t in traces.items() if mm == m])) for m in (16, 32)}
    return traces, event_loop.TimeModel(ad.samples, 0), e.lanes, ext


def _run(replay, policy, rate, n_streams=6, l_pre=0.01, seed=0, horizon=0.5):
    traces, times, lanes, ext = replay
    src = workload.Source(PRE, 40, seed)
    src.add_open_loop(workload.schedule("poisson", rate, int(rate * horizon), seed), "prefill", l_pre, PRE)
    streams = workload.add_decode_streams(src, n_streams, DEC, 4, 0.002, horizon, seed)
    prm = scheduler.SchedParams(gen_s=0.008, control_s=0.05, wait_target_s=0.5 * l_pre)
    pol = scheduler.make(policy, 8, prm, ext, times.median(1))
    done, log = event_loop.run(event_loop.ReplayAdapter(traces, 8, lanes, times), pol, src)
    return done, streams, pol


@pytest.mark.parametrize("policy", sorted(scheduler.POLICIES))
def test_every_policy_serves_every_request(replay, policy):
    done, streams, pol = _run(replay, policy, 800.0)
    pre = [r for r in done if r.kind == "prefill"]
    assert len(pre) == 400 and all(r.done >= r.arrival for r in done)
    assert sum(s.tokens for s in streams) > 0


def test_expired_deadline_is_served_and_recorded_as_miss(replay):
    done, _, _ = _run(replay, "trinity", 400.0, l_pre=-1.0)      # every deadline before its arrival
    pre = [r for r in done if r.kind == "prefill"]
    assert len(pre) == 200 and all(r.missed for r in pre) and all(r.ids is not None for r in pre)


def test_priorities_order_prefill_latency(replay):
    lat = {}
    for policy in ("prefill_first", "decode_first"):
        done, _, _ = _run(replay, policy, 1500.0, n_streams=12)
        lat[policy] = np.percentile([r.latency for r in done if r.kind == "prefill"], 95)
    assert lat["prefill_first"] < lat["decode_first"]


def test_control_loop_keeps_r_in_bounds(replay):
    _, _, pol = _run(replay, "trinity", 1500.0, n_streams=12)
    assert pol.history and all(pol.prm.r_min <= h["r"] <= pol.prm.r_max for h in pol.history)


def test_bad_scheduler_parameters():
    with pytest.raises(ConfigError, match="r=0.95 must lie in"):
        scheduler.SchedParams(r=0.95, r_max=0.9).check()
    with pytest.raises(ConfigError, match="policy must be one of"):
        scheduler.make("lifo", 4, scheduler.SchedParams(), {}, 0.001)
    with pytest.raises(ConfigError, match="delta=0"):
        workload.add_decode_streams(workload.Source(DEC, 4, 0), 2, DEC, 0, 0.01, 1.0, 0)


def test_sweep_rows_vary_one_parameter_at_a_time(study):
    import pandas as pd

    df = pd.read_parquet(study["records"]["sched"][0])
    sw = df[df.row == "sweep"]
    assert set(sw.sweep_param) == {"r_min", "delta_tokens"}
    assert set(sw[sw.sweep_param == "r_min"].sweep_value) == {0.1, 0.5}
    assert set(sw.policy) == {"fifo", "trinity"} and (sw.load_frac == 0.8).all()
    # the claims read the main grid only
    assert len(df[df.row == "run"]) == 2 * 2 * len(set(df[df.row == "run"].policy))

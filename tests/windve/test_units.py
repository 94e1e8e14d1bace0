"""Units of WindVE without a server: estimator (eq. 11/12, stress test, fine-tuning), Algorithm 1,
the device detector's rules, the emulated law, the configuration checks."""
from __future__ import annotations

import asyncio
import socket

import numpy as np
import pytest

from bench.core.base.errors import ConfigError
from bench.windve.system import detector, emulation, estimator
from bench.windve.system.queue_manager import QueueManager
from bench.windve.system.service_config import ServiceConfig, check_port_free


def test_fit_recovers_law_and_keeps_coefficients_nonnegative():
    c = np.array([1, 8, 16, 32])
    f = estimator.fit(c, 0.01 * c + 0.3)
    assert f.alpha == pytest.approx(0.01) and f.beta == pytest.approx(0.3) and f.r2 == pytest.approx(1)
    g = estimator.fit(c, 0.02 * c - 0.1)      # unconstrained intercept would be negative
    assert g.beta == 0 and g.alpha > 0
    with pytest.raises(ConfigError, match="two distinct"):
        estimator.fit([8, 8], [0.1, 0.2])


def test_predict_depth_and_equation_11():
    f = estimator.LinearFit(alpha=0.02, beta=0.3, r2=1, n_points=3)
    assert estimator.predict_depth(f, 1.0) == 35
    assert estimator.predict_depth(f, 2.0) == 85
    with pytest.raises(estimator.DeviceCannotMeetSlo, match="cannot help"):
        estimator.predict_depth(f, 0.31, device="CPU")


def test_stress_test_steps_of_8_and_below_8():
    law = emulation.LinearLaw(0.02, 0.3)

    async def measure(c):
        return law.latency(c)

    s = asyncio.run(estimator.stress_test(measure, 1.0))
    assert s.depth == 32 and s.runs == 5 and [p[0] for p in s.points] == [8, 16, 24, 32, 40]
    slow = emulation.LinearLaw(0.2, 0.3)

    async def measure_slow(c):
        return slow.latency(c)

    s2 = asyncio.run(estimator.stress_test(measure_slow, 1.0))
    assert s2.depth == 3 and [p[0] for p in s2.points] == [8, 1, 2, 3, 4]


def test_fine_tune_settles_at_the_slo():
    laws = {"acc": emulation.LinearLaw(0.01, 0.2), "cpu": emulation.LinearLaw(0.05, 0.3)}

    async def measure(depths):
        return {d: laws[d].latency(c) for d, c in depths.items()}

    s = asyncio.run(estimator.fine_tune(measure, {"acc": 85, "cpu": 10}, slo_s=1.0, max_runs=30))
    assert s.depths == {"acc": 80, "cpu": 14} and s.runs > 1


def test_algorithm_1_accelerator_first_then_cpu_then_busy():
    m = QueueManager(["emulated", "cpu"], {"emulated": 2, "cpu": 1}, offload=True)
    assert [m.admit() for _ in range(4)] == ["emulated", "emulated", "cpu", None]
    m.release("emulated")
    assert m.admit() == "emulated"
    off = QueueManager(["emulated", "cpu"], {"emulated": 1, "cpu": 1}, offload=False)
    assert [off.admit(), off.admit()] == ["emulated", None]
    assert m.last_decision_ns < 1e6


@pytest.mark.parametrize("depth", [0, -3, 1.5, None])
def test_queue_depth_must_be_positive(depth):
    with pytest.raises(ConfigError, match="depth"):
        QueueManager(["cpu"], {"cpu": depth}, offload=False)
    if depth is not None:
        with pytest.raises(ConfigError, match="cpu_depth"):
            ServiceConfig(cpu_depth=depth).check()


def test_detector_rules():
    both = detector.Found(cuda=1, npu=0, cpu_cores=(0, 1))
    assert detector.plan(both, True).devices == ("cuda", "cpu")
    assert detector.plan(both, False).devices == ("cuda",)
    cpu_only = detector.Found(0, 0, (0, 1))
    p = detector.plan(cpu_only, True)
    assert p.devices == ("cpu",) and not p.heterogeneous
    assert detector.plan(cpu_only, True, emulate=True).devices == ("emulated", "cpu")
    assert detector.plan(detector.Found(0, 2, (0,)), True).accelerator == "npu"
    assert detector.cpu_cores_for_instance(detector.Found(0, 0, (0, 1, 2, 3)), 2, reverse=True) == (2, 3)
    assert detector.cpu_cores_for_instance(detector.Found(0, 0, (0, 1, 2, 3)), 2, reverse=False) == (0, 1)
    assert detector.detect().cpu_cores


def test_emulated_law_from_pairs():
    law = emulation.emulated_law(0.05, 0.32, "v100-xeon")
    assert law.alpha == pytest.approx(0.0105) and law.beta == pytest.approx(0.27)
    law2 = emulation.emulated_law(0.05, 0.85, "atlas-kunpeng")
    assert law2.alpha == pytest.approx(0.006) and law2.beta == pytest.approx(0.24)
    with pytest.raises(ConfigError, match="unknown device pair"):
        emulation.emulated_law(0.05, 0.3, "tpu")
    with pytest.raises(ConfigError, match=">= 0"):
        emulation.LinearLaw(-1, 0)


def test_port_in_use_is_a_config_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ConfigError, match="already in use"):
            check_port_free("127.0.0.1", port)


def test_exact_length_texts():
    from bench.windve.system.textgen import exact_length_texts, load_fast_tokenizer

    tok = load_fast_tokenizer()
    for n in (16, 75, 500):
        texts = exact_length_texts(tok, 3, n, seed=1)
        assert [len(e.ids) for e in tok.encode_batch(texts)] == [n + 2] * 3
    assert exact_length_texts(tok, 2, 8, seed=1) == exact_length_texts(tok, 2, 8, seed=1)
    with pytest.raises(ConfigError):
        exact_length_texts(tok, 1, 0, seed=1)


def test_prefer_emulated_keeps_the_emulated_accelerator_beside_a_gpu():
    gpu = detector.Found(cuda=1, npu=0, cpu_cores=(0, 1))
    assert detector.plan(gpu, True, emulate=True).devices == ("cuda", "cpu")
    assert detector.plan(gpu, True, emulate=True, prefer_emulated=True).devices == ("emulated", "cpu")


# -- deadline admission (Algorithm 1 + equation 12 online) -------------------------------------------
def test_predict_counts_the_running_batch_and_the_queue():
    from bench.windve.system.admission import Backlog, predict

    law = emulation.LinearLaw(0.01, 0.1).latency
    idle = predict(Backlog(0, 0.0), 5, arrival=10.0, now=10.0, law=law, slo_s=0.3, batch_delay_s=0.005)
    assert idle.latency == pytest.approx(0.005 + 0.15) and idle.ok
    # a batch of 5 started at t=10 ends at 10.15; 10 queries wait since 10.05; one more arrives at 10.06:
    # next batch starts at 10.155 and takes 0.01 * 11 + 0.1 -> ends 10.365: 0.305 s after 10.06, > SLO 0.3
    busy = Backlog(5, 10.0, tuple((1, 10.05) for _ in range(10)))
    p = predict(busy, 1, arrival=10.06, now=10.06, law=law, slo_s=0.3, batch_delay_s=0.005)
    assert p.finish == pytest.approx(10.365) and not p.ok
    assert predict(busy, 1, arrival=10.06, now=10.06, law=law, slo_s=0.32, batch_delay_s=0.005).ok
    # at SLO 0.31 the newcomer would make it (0.305 s), but the ten waiting since 10.05 would not (0.315 s)
    # where without it they would (0.305 s): refused
    assert not predict(busy, 1, arrival=10.06, now=10.06, law=law, slo_s=0.31, batch_delay_s=0.005).ok
    # the new query would itself make it, but it pushes an earlier member (arrived 9.99) past its SLO
    early = Backlog(0, 0.0, ((1, 9.99),))
    alone = predict(Backlog(0, 0.0), 19, arrival=10.0, now=10.0, law=law, slo_s=0.3)
    assert alone.ok and alone.latency == pytest.approx(0.29)
    p = predict(early, 19, arrival=10.0, now=10.0, law=law, slo_s=0.305)
    assert p.latency == pytest.approx(0.30) and not p.ok     # 10.30 - 9.99 = 0.31 s for the earlier one
    # an overrun running batch ends "now" at the earliest; max_batch splits the queue into batches
    late = predict(Backlog(5, 0.0), 1, arrival=10.0, now=10.0, law=law, slo_s=1.0)
    assert late.finish == pytest.approx(10.0 + 0.11)
    chunks = predict(Backlog(0, 0.0, ((4, 10.0),)), 4, arrival=10.0, now=10.0, law=law, slo_s=1.0, max_batch=4)
    assert chunks.finish == pytest.approx(10.0 + 0.14 + 0.14)


def test_queue_manager_refuses_by_depth_or_deadline_and_offloads():
    from bench.windve.system.admission import Prediction

    verdict = {"emulated": False, "cpu": True}

    def predict(dev, n, arrival, texts):
        return Prediction(finish=1.0, latency=0.5 if verdict[dev] else 2.0, ok=verdict[dev])

    m = QueueManager(["emulated", "cpu"], {"emulated": 4, "cpu": 1}, offload=True, slo_s=1.0, predict=predict)
    assert m.admit() == "cpu" and m.last_prediction.latency == 0.5   # accelerator would miss the SLO: offloaded
    assert m.admit() is None and m.last_reason == "deadline"         # CPU full by depth, accelerator late
    verdict["emulated"] = True
    assert m.admit() == "emulated"
    depth_only = QueueManager(["emulated"], {"emulated": 1}, offload=False, slo_s=None, predict=predict)
    verdict["emulated"] = False
    assert depth_only.admit() == "emulated" and not depth_only.last_prediction.ok   # no SLO: predicted, depth decides
    assert depth_only.admit() is None and depth_only.last_reason == "depth"
    with pytest.raises(ConfigError, match="slo_s"):
        QueueManager(["cpu"], {"cpu": 1}, offload=False, slo_s=0)


def test_law_tracker_fits_the_batches():
    from bench.windve.system.admission import LawTracker

    t = LawTracker(window=8)
    t.add(4, 0.14)
    assert t.law is None   # one size: no fit yet
    for c in (1, 8, 16):
        t.add(c, 0.01 * c + 0.1)
    assert t.law.alpha == pytest.approx(0.01) and t.law.beta == pytest.approx(0.1)
    t.reset()
    assert t.law is None and not t.points


def test_warmup_sizes_per_device():
    from types import SimpleNamespace

    from bench.windve.system import warmup
    from bench.windve.system.instances import EmulatedAccelerator, TorchInstance

    gpu = TorchInstance("cuda", SimpleNamespace(device="cuda"))   # no CUDA touched: sizes only
    assert warmup.sizes(gpu, 20) == [1, 2, 4, 8, 16, 20] and warmup.sizes(gpu, 1) == [1, 2]
    assert warmup.sizes(gpu, 100_000)[-1] == warmup.GPU_MAX
    cpu = TorchInstance("cpu", SimpleNamespace(device="cpu"))
    assert warmup.sizes(cpu, 64) == [1, 4]
    emu = EmulatedAccelerator("emulated", SimpleNamespace(device="cpu"), emulation.LinearLaw(0.001, 0.0))
    assert warmup.sizes(emu, 64) == [1]
    for inst in (gpu, cpu, emu):
        inst._close()


def test_steps_pick_the_accelerator_of_this_machine():
    """auto: the GPU where there is one, else emulated; --prefer-emulated only when asked for."""
    from bench.core.machine import devices
    from bench.windve import STUDY
    from bench.windve.steps.inputs import resolve_accelerator, run_pairs, service_args

    expected = "cuda" if devices.cuda_available() else "emulated"
    base = {"query_tokens": 75, "batch_delay_ms": 5.0, "pairs": ["v100-xeon", "atlas-kunpeng"]}
    assert resolve_accelerator("auto") == expected
    assert resolve_accelerator("emulated") == "emulated"
    if expected == "emulated":
        with pytest.raises(ConfigError, match="no CUDA GPU"):
            resolve_accelerator("cuda")
    with pytest.raises(ConfigError, match="auto, emulated or cuda"):
        resolve_accelerator("tpu")
    assert "--prefer-emulated" not in service_args(STUDY.parameters({**base, "accelerator": "auto"}), "v100-xeon")
    assert "--prefer-emulated" in service_args(STUDY.parameters({**base, "accelerator": "emulated"}), "v100-xeon")
    p = STUDY.parameters(base)
    assert run_pairs(p, "emulated") == ["v100-xeon", "atlas-kunpeng"] and run_pairs(p, "cuda") == ["v100-xeon"]


def test_failures_are_counted_once_by_kind():
    from bench.windve.system.prometheus import Metrics

    m = Metrics()
    for status in (429, 429, 422, 413, 400, 503):
        m.failed(status)
    text = m.render().decode()
    assert 'windve_request_failure_total{err="overloaded",status="429"} 2.0' in text
    assert 'windve_request_failure_total{err="validation",status="422"} 1.0' in text
    assert 'windve_request_failure_total{err="validation",status="413"} 1.0' in text
    assert 'windve_request_failure_total{err="unhealthy",status="503"} 1.0' in text
    assert 'err="validation",status="429"' not in text and "windve_rejected" not in text


def test_emulated_cache_misses_count_in_the_prediction():
    """The emulated accelerator computes texts it has not seen on this CPU before its law can hold: a batch
    takes max(law(C), their CPU time), and admission predicts with that (the issue's 2.6 s first burst)."""
    from types import SimpleNamespace

    from bench.windve.system.admission import Backlog, predict
    from bench.windve.system.instances import EmulatedAccelerator

    emu = EmulatedAccelerator("emulated", SimpleNamespace(device="cpu"), emulation.LinearLaw(0.001, 0.01))
    emu.cache["seen"] = np.zeros(3)
    emu.miss_s = 0.05
    assert emu.extra_s(["seen", "new a", "new b"]) == pytest.approx(0.1) and emu.extra_s(["seen"]) == 0
    law = emu.admission_law().latency
    cheap = predict(Backlog(0, 0.0), 3, arrival=0.0, now=0.0, law=law, slo_s=0.1)
    assert cheap.ok and cheap.latency == pytest.approx(0.013)
    dear = predict(Backlog(0, 0.0), 3, arrival=0.0, now=0.0, law=law, slo_s=0.1, extra_s=0.2)
    assert not dear.ok and dear.latency == pytest.approx(0.2)
    running = predict(Backlog(3, 0.0, (), running_extra_s=0.3), 1, arrival=0.1, now=0.1, law=law, slo_s=1.0)
    assert running.finish == pytest.approx(0.3 + 0.011)
    emu._close()

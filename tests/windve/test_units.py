"""Units of WindVE without a server: estimator (eq. 11/12, stress test, fine-tuning), Algorithm 1,
the device detector's rules, the emulated law, the configuration checks."""
from __future__ import annotations

import asyncio
import socket

import numpy as np
import pytest

from bench.core.errors import ConfigError
from bench.windve import detector, emulation, estimator
from bench.windve.queue_manager import QueueManager
from bench.windve.settings import ServiceConfig, check_port_free


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
    from bench.windve.textgen import exact_length_texts, load_fast_tokenizer

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

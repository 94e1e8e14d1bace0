import numpy as np
import pytest

from bench.chameleon import configs, pqscan
from bench.core import devices
from bench.core.errors import ConfigError


def test_cpu_torch_fpga_return_the_same_neighbours(small_index):
    index, _, xq = small_index
    out = {}
    for name in ("cpu", "torch-cpu", "fpga-cpu"):
        c = configs.make(name, index, 4, 1)
        assert c.available()[0]
        c.check(xq, 20)
        out[name] = c.search(xq, 20)
        assert out[name].seconds > 0
    assert pqscan.overlap(out["cpu"].I, out["torch-cpu"].I).mean() >= 0.99
    assert pqscan.overlap(out["cpu"].I, out["fpga-cpu"].I).mean() >= 0.99
    assert configs.make("fpga-cpu", index, 4).source == "modelled"
    assert set(out["fpga-cpu"].parts) >= {"coarse_s", "fpga_s", "network_s", "host_fixed_s"}


def test_fpga_latency_carries_the_calibrated_host_cost(small_index):
    from bench.chameleon import fpga_model
    from bench.core import config as core_config

    index, _, xq = small_index
    params = core_config.validate_section("chameleon", {})
    host = fpga_model.host_path(params)
    assert host.fixed_s > 0
    o = configs.make("fpga-cpu", index, 4, 1, host_fixed_s=host.fixed_s).search(xq, 20)
    p = o.parts
    assert o.seconds == pytest.approx(p["host_fixed_s"] + p["coarse_s"] + p["fpga_s"] + p["network_s"], rel=1e-9)
    assert p["host_fixed_s"] == host.fixed_s
    with pytest.raises(ConfigError, match="host fixed cost"):
        configs.make("fpga-cpu", index, 4, 1, host_fixed_s=-1.0)


def test_cuda_configs_report_unavailable_without_cuda(small_index):
    if devices.cuda_available():
        pytest.skip("CUDA present")
    index, _, _ = small_index
    for name in ("cpu-gpu", "gpu", "torch-cuda", "fpga-gpu"):
        ok, why = configs.make(name, index, 4).available()
        assert not ok and "CUDA" in why


def test_bad_input_fails_before_measuring(small_index):
    index, _, xq = small_index
    with pytest.raises(ConfigError, match="nprobe"):
        configs.make("cpu", index, 17)
    with pytest.raises(ConfigError, match="unknown search configuration"):
        configs.make("tpu", index, 4)
    c = configs.make("cpu", index, 1)
    with pytest.raises(pqscan.KTooLargeError):
        c.check(xq, 3000)
    with pytest.raises(ConfigError, match="queries must be"):
        c.check(xq[:, :16], 10)


@pytest.mark.gpu
def test_cuda_configs_match_cpu(small_index):
    index, _, xq = small_index
    ref = configs.make("cpu", index, 4).search(xq, 20)
    for name in ("cpu-gpu", "gpu", "torch-cuda", "fpga-gpu"):
        out = configs.make(name, index, 4).search(xq, 20)
        assert pqscan.overlap(ref.I, out.I).mean() >= 0.99

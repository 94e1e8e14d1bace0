import numpy as np
import pytest

from bench.chameleon.system import backends, pqscan
from bench.core.machine import devices
from bench.core.base.errors import ConfigError


def test_cpu_torch_fpga_return_the_same_neighbours(small_index):
    index, _, xq = small_index
    out = {}
    for name in ("cpu", "torch-cpu", "fpga-cpu"):
        c = backends.make(name, index, 4, 1)
        assert c.available()[0]
        c.check(xq, 20)
        out[name] = c.search(xq, 20)
        assert out[name].seconds > 0
    assert pqscan.overlap(out["cpu"].I, out["torch-cpu"].I).mean() >= 0.99
    assert pqscan.overlap(out["cpu"].I, out["fpga-cpu"].I).mean() >= 0.99
    assert backends.make("fpga-cpu", index, 4).source == "modelled"
    assert set(out["fpga-cpu"].parts) >= {"coarse_s", "fpga_s", "network_s", "host_fixed_s"}


def test_fpga_latency_carries_the_calibrated_host_cost(small_index):
    from bench.chameleon import STUDY
    from bench.chameleon.steps.inputs import host_path

    index, _, xq = small_index
    host = host_path(STUDY.parameters({}).fpga)
    assert host.fixed_s > 0
    o = backends.make("fpga-cpu", index, 4, 1, host_fixed_s=host.fixed_s).search(xq, 20)
    p = o.parts
    assert o.seconds == pytest.approx(p["host_fixed_s"] + p["coarse_s"] + p["fpga_s"] + p["network_s"], rel=1e-9)
    assert p["host_fixed_s"] == host.fixed_s
    with pytest.raises(ConfigError, match="host fixed cost"):
        backends.make("fpga-cpu", index, 4, 1, host_fixed_s=-1.0)


def test_cuda_configs_report_unavailable_without_cuda(small_index):
    if devices.cuda_available():
        pytest.skip("CUDA present")
    index, xb, _ = small_index
    for name in ("cpu-gpu", "gpu", "torch-cuda", "fpga-gpu", "exact-cuda"):
        ok, why = backends.make(name, index, 4, base=xb).available()
        assert not ok and "CUDA" in why


def test_every_named_configuration_can_be_made(small_index):
    index, xb, _ = small_index
    for name in backends.NAMES:
        assert backends.make(name, index, 4, base=xb).name == name


def test_exact_cpu_equals_faiss_brute_force(small_index):
    import faiss

    index, xb, xq = small_index
    c = backends.make("exact-cpu", index, 4, 1, base=xb)
    assert c.available() == (True, "")
    c.check(xq, 20)
    out = c.search(xq, 20)
    flat = faiss.IndexFlatL2(xb.shape[1])
    flat.add(xb)
    D, I = flat.search(xq, 20)
    assert out.seconds > 0 and out.I.shape == (len(xq), 20)
    assert pqscan.overlap(I, out.I).mean() >= 0.99
    np.testing.assert_allclose(out.D, D, rtol=1e-4, atol=1e-2)


def test_exact_needs_the_matching_base(small_index):
    index, xb, xq = small_index
    ok, why = backends.make("exact-cpu", index, 4).available()
    assert not ok and "base vectors" in why
    with pytest.raises(ConfigError, match="base vectors"):
        backends.make("exact-cpu", index, 4, base=xb[:10])
    with pytest.raises(ConfigError, match="K="):
        backends.make("exact-cpu", index, 4, base=xb).check(xq, len(xb) + 1)


def test_bad_input_fails_before_measuring(small_index):
    index, _, xq = small_index
    with pytest.raises(ConfigError, match="nprobe"):
        backends.make("cpu", index, 17)
    with pytest.raises(ConfigError, match="unknown search configuration"):
        backends.make("tpu", index, 4)
    c = backends.make("cpu", index, 1)
    with pytest.raises(pqscan.KTooLargeError):
        c.check(xq, 3000)
    with pytest.raises(ConfigError, match="queries must be"):
        c.check(xq[:, :16], 10)


@pytest.mark.gpu
def test_cuda_configs_match_cpu(small_index):
    index, xb, xq = small_index
    ref = backends.make("cpu", index, 4).search(xq, 20)
    for name in ("cpu-gpu", "gpu", "torch-cuda", "fpga-gpu"):
        c = backends.make(name, index, 4)
        assert c.available()[0]
        out = c.search(xq, 20)
        assert pqscan.overlap(ref.I, out.I).mean() >= 0.99, name
        np.testing.assert_allclose(out.D, ref.D, rtol=1e-3, atol=1e-2, err_msg=name)
    ref = backends.make("exact-cpu", index, 4, base=xb).search(xq, 20)
    out = backends.make("exact-cuda", index, 4, base=xb).search(xq, 20)
    assert pqscan.overlap(ref.I, out.I).mean() >= 0.99


@pytest.mark.gpu
def test_gpu_config_names_its_backend(small_index):
    index, _, xq = small_index
    out = backends.make("gpu", index, 4).search(xq, 20)
    want = "faiss-gpu" if devices.faiss_gpu_available() else "torch-cuda"
    assert out.parts["backend"].startswith(want)


@pytest.mark.gpu
def test_faiss_gpu_matches_cpu_and_torch_cuda(small_index):
    if not devices.faiss_gpu_available():
        pytest.skip("faiss without GPU support here")
    index, _, xq = small_index
    ref = backends.make("cpu", index, 4).search(xq, 20)
    fg = backends.make("gpu", index, 4).search(xq, 20)
    tc = backends.make("torch-cuda", index, 4).search(xq, 20)
    assert fg.parts["backend"].startswith("faiss-gpu")
    for out in (fg, tc):
        assert pqscan.overlap(ref.I, out.I).mean() >= 0.99

"""The step skeleton, the figure registry, the legend check, the shared transformer."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from bench.core import devices, plotting, records
from bench.core.figures import Registry
from bench.core.step import Context, Result, execute


def test_execute_writes_records_with_quiet_check(tmp_path):
    ctx = Context("demo", "s", {"a": 1}, "t", 3, 1, tmp_path / "s.parquet")
    execute(ctx, lambda c: Result(pd.DataFrame({"x": [1.0, 2.0]}), method="demo"))
    df = records.read(tmp_path / "s.parquet")
    assert set(df.columns) >= {"source", "phase", "machine_busy"}
    prov = df.attrs["provenance"]
    assert prov["method"] == "demo" and prov["seed"] == 3 and "busy" in prov["quiet_check"]
    assert prov["cpu"]["family"] is not None or prov["cpu"] == {}


def test_registry_draw_needs_its_records(tmp_path):
    reg = Registry()

    @reg.figure("f", records=("a",))
    def f(inputs, out):
        return [out]

    assert list(reg) == ["f"] and reg.records_of("f") == ("a",)
    with pytest.raises(ValueError, match="reads record kind"):
        reg.draw("f", {}, tmp_path / "f.png")
    with pytest.raises(ValueError, match="twice"):
        reg.figure("f", records=())(f)


def test_legend_over_data_fails_in_tests(tmp_path):
    fig, ax = plt.subplots(layout="constrained")
    ax.plot(range(10), [5] * 10, label="flat")
    ax.legend(loc="center")
    with pytest.raises(AssertionError, match="covers data"):
        plotting.save(fig, tmp_path / "bad.png")
    fig, ax = plt.subplots(layout="constrained")
    ax.plot(range(10), [5] * 10, label="flat")
    plotting.legend_below(fig)
    assert plotting.legend_overlaps(fig) == []
    plotting.save(fig, tmp_path / "good.png")


def test_storage_of_names_device_and_filesystem(tmp_path):
    s = devices.storage_of(tmp_path)
    assert s["fstype"] and s["mount"]


def test_prefill_equals_token_by_token_decode():
    import torch

    from bench.serving.transformer import Generator, LMSpec, build_model

    spec = LMSpec("t", "dec", 32, 2, 4, vocab=50)
    model = build_model(spec, 8, 16, seed=0)
    tokens = torch.randint(0, 50, (3, 6), generator=torch.Generator().manual_seed(0))
    logits, _ = Generator(spec, model, 3, 16).prefill(tokens)
    g = Generator(spec, model, 3, 16)
    for i in range(6):
        step_logits, _ = g.step(tokens[:, i])
    assert torch.allclose(logits, step_logits, atol=1e-4)


@pytest.mark.gpu
def test_transformer_runs_on_cuda_with_its_cache_there_and_matches_the_cpu():
    """The GPU-ready issue: the KV cache and every buffer live on the model's device."""
    import torch

    from bench.serving.transformer import Generator, LMSpec, build_model

    for arch in ("dec", "encdec"):
        spec = LMSpec("t", arch, 32, 2, 4, vocab=50, enc_layers=1 if arch == "encdec" else 0)
        cpu = build_model(spec, 8, 16, seed=0)
        gpu = build_model(spec, 8, 16, seed=0).to("cuda")
        tokens = torch.randint(0, 50, (3, 6), generator=torch.Generator().manual_seed(0))
        outs = []
        for model in (cpu, gpu):
            g = Generator(spec, model, 3, 16)
            assert g.kc[0].device == next(model.parameters()).device
            if arch == "encdec":
                g.set_memory(tokens)  # given on the CPU, moved to the model's device
            logits, _ = g.prefill(tokens)
            step, _ = g.step(tokens[:, 0])
            outs.append((logits.cpu(), step.cpu()))
        assert torch.allclose(outs[0][0], outs[1][0], atol=1e-3) and torch.allclose(outs[0][1], outs[1][1], atol=1e-3)

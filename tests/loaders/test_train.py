"""Training runs: DP threads (CPU stand-in), DDP over gloo, dead ranks, timeouts, the memory cap."""
from __future__ import annotations

import dataclasses
import time

import psutil
import pytest
import torch

from bench.loaders import launch, memory, model as M, train
from bench.loaders.errors import ConfigError, RankFailed, RankTimeout, StoreError


@pytest.fixture(scope="module", autouse=True)
def _preload(model_dir):
    M.preload(model_dir)


def _spec(bundle, model_dir, **kw):
    base = dict(loader="ir_datasets", parallel="ddp", replicas=2, bundle_dir=str(bundle),
                model_dir=str(model_dir), batch_per_replica=2, steps=2, warmup_steps=1, max_length=16,
                freeze_embeddings=True, seed=1)
    return train.RunSpec(**(base | kw))


def _no_children_left():
    time.sleep(0.2)
    return [c for c in psutil.Process().children(recursive=True) if c.status() != psutil.STATUS_ZOMBIE]


def test_thread_replicas_average_gradients_like_one_full_batch():
    torch.manual_seed(0)

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 1)

        def forward(self, x, labels):
            return torch.nn.functional.mse_loss(self.lin(x).squeeze(-1), labels)

    full, split = Tiny(), Tiny()
    split.load_state_dict(full.state_dict())
    batch = {"x": torch.randn(8, 4), "labels": torch.randn(8)}
    opt_full = torch.optim.SGD(full.parameters(), lr=0.1)
    full(**batch).backward()
    opt_full.step()
    reps = train.ThreadReplicas(split, 2)
    reps.step(batch, torch.optim.SGD(split.parameters(), lr=0.1))
    reps.close()
    for a, b, c in zip(full.parameters(), split.parameters(), reps.reps[1].parameters()):
        assert torch.allclose(a, b, atol=1e-6) and torch.equal(b, c)


@pytest.mark.parametrize("parallel", ["dp", "ddp"])
def test_two_replica_run_times_every_step(bundle, model_dir, parallel):
    out = launch.launch(_spec(bundle, model_dir, parallel=parallel), timeout_s=60, sample_interval_s=0.05)
    assert out.status == "ok" and len(out.results) == (1 if parallel == "dp" else 2)
    for res in out.results:
        assert [r["phase"] for r in res["rows"]] == ["warmup", "measured", "measured"]
        assert all(r["wait_s"] > 0 and r["compute_s"] > 0 for r in res["rows"])
        assert res["load_s"] >= 0 and not res["pin_memory_applied"]
    assert out.samples and max(s["pss_bytes"] for s in out.samples) > 0
    assert not _no_children_left()


def test_workers_are_in_the_sampled_tree(bundle, model_dir):
    out = launch.launch(_spec(bundle, model_dir, parallel="dp", replicas=1, loader="in-memory",
                              num_workers=2, steps=4), timeout_s=60, sample_interval_s=0.02, per_process=True)
    roles = {r for s in out.samples for _, r, _, _ in s["procs"]}
    assert roles == {"main", "worker"}
    assert not _no_children_left()


def test_dead_rank_fails_the_run_quickly_and_stops_the_others(bundle, model_dir):
    t0 = time.monotonic()
    with pytest.raises(RankFailed, match="rank 1 failed .*-9.*other ranks were stopped"):
        launch.launch(_spec(bundle, model_dir, kill_rank=1, kill_rank_at_step=1, steps=4), timeout_s=60)
    assert time.monotonic() - t0 < 30
    assert not _no_children_left()


def test_run_past_its_time_limit_is_killed(bundle, model_dir):
    with pytest.raises(RankTimeout, match="did not finish within 1 s"):
        launch.launch(_spec(bundle, model_dir, steps=500), timeout_s=1)
    assert not _no_children_left()


def test_bad_input_in_a_rank_is_reported_with_its_class(copy_bundle, model_dir):
    (copy_bundle / "docs.tsv.pklz4" / "bin").unlink()
    # every rank reads the same docstore; a slow rank may miss the grace period, so either may report
    with pytest.raises(StoreError, match="rank [01]: .*missing"):
        launch.launch(_spec(copy_bundle, model_dir), timeout_s=60)


def test_failures_are_reported_cause_first():
    bad0, bad1 = StoreError("missing a"), StoreError("missing b")
    got = sorted([(1, "RuntimeError: gloo"), (1, bad1), (0, bad0), (2, -9)], key=launch._cause_first)
    assert got == [(2, -9), (0, bad0), (1, bad1), (1, "RuntimeError: gloo")]


@pytest.mark.parametrize("bad, match", [({"num_workers": -1}, "num_workers must be >= 0"),
                                        ({"loader": "redis"}, "unknown loader"),
                                        ({"parallel": "fsdp"}, "unknown parallelism"),
                                        ({"worker_start_method": "thread"}, "start method")])
def test_bad_run_settings(bundle, model_dir, bad, match):
    with pytest.raises(ConfigError, match=match):
        launch.launch(_spec(bundle, model_dir, **bad))


@pytest.mark.skipif(not memory.cap_available()[0], reason="needs root and the cgroup v1 memory controller")
def test_in_memory_ddp_over_the_cap_is_an_oom_row(bundle, model_dir):
    out = launch.launch(_spec(bundle, model_dir, loader="in-memory"), timeout_s=60, cap_bytes=24 << 20)
    assert out.status == "oom" and out.cap["cap_oom_kills"] >= 1 and "OOM-killed" in out.error
    assert not _no_children_left()


def test_spec_is_checked_before_anything_starts():
    with pytest.raises(ConfigError, match="replicas must be >= 1"):
        dataclasses.replace(train.RunSpec("in-memory", "dp", 0, ".", "."), replicas=0).check()

"""Training runs: DP threads (CPU stand-in), DDP over gloo, dead ranks, timeouts, the memory cap; ranks
started from the forkserver after this process has run torch; DP and DDP on CUDA (marked gpu)."""
from __future__ import annotations

import dataclasses
import re
import threading
import time
from pathlib import Path

import psutil
import pytest
import torch

from bench.core.machine import devices
from bench.loaders.steps import inputs
from bench.loaders.system import footprint
from bench.loaders.system import launch, train
from bench.loaders.system.errors import ConfigError, RankFailed, RankTimeout, StoreError


@pytest.fixture(scope="module", autouse=True)
def _preload(model_dir):
    launch.preload(model_dir)


def _spec(bundle, model_dir, **kw):
    base = dict(loader="ir_datasets", parallel="ddp", replicas=2, bundle_dir=str(bundle),
                model_dir=str(model_dir), batch_per_replica=2, steps=2, warmup_steps=1, max_length=16,
                freeze_embeddings=True, seed=1)
    return train.RunSpec(**(base | kw))


def _no_children_left():
    time.sleep(0.2)
    server = launch.server_pids()  # the forkserver outlives the runs; the ranks are its children
    return [c for c in psutil.Process().children(recursive=True)
            if c.status() != psutil.STATUS_ZOMBIE and c.pid not in server]


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
        # start-up is timed apart, and every step starts after it
        assert 0 <= res["startup_s"] < out.wall_s and res["t_measured"] >= res["t_start"]
        assert res["implementation"] == train.implementation(parallel, "cpu")
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


@pytest.mark.skipif(not footprint.cap_available()[0], reason="needs root and a cgroup memory controller (v1 or v2)")
def test_in_memory_ddp_over_the_cap_is_an_oom_row(bundle, model_dir):
    out = launch.launch(_spec(bundle, model_dir, loader="in-memory"), timeout_s=60, cap_bytes=24 << 20)
    assert out.status == "oom" and out.cap["cap_oom_kills"] >= 1 and "OOM-killed" in out.error
    assert not _no_children_left()


def test_spec_is_checked_before_anything_starts():
    with pytest.raises(ConfigError, match="replicas must be >= 1"):
        dataclasses.replace(train.RunSpec("in-memory", "dp", 0, ".", "."), replicas=0).check()


# ------------------------------------------------------------------ never fork a process that ran torch

FORK = re.compile(r"""get_context\(\s*["']fork["']|set_start_method\(\s*["']fork["']|os\.fork\(|start_method\s*=\s*["']fork["']""")


def test_no_launcher_under_src_uses_fork(repo):
    hits = [f"{p.relative_to(repo)}:{i}" for p in sorted((repo / "src").rglob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1) if FORK.search(line)]
    assert not hits, f"fork start method used at {hits}"
    assert launch.context().get_start_method() != "fork"


def _threaded_backward():
    """What the pytest process (or a pipeline job) may have done before starting ranks: torch's intra-op
    pool and autograd's threads, busy in several threads at once."""
    torch.set_num_threads(2)
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))

    def work():
        for _ in range(5):
            net(torch.randn(128, 64)).sum().backward()
    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def test_runs_after_threaded_backward_in_this_process_neither_crash_nor_hang(bundle, model_dir):
    """The segfault of the flaky-fork issue: ranks forked from a process that had run backward. Five
    times in a row: backward here, then a two-replica DP run and a two-rank DDP run."""
    for _ in range(5):
        _threaded_backward()
        for parallel in ("dp", "ddp"):
            out = launch.launch(_spec(bundle, model_dir, parallel=parallel, steps=1), timeout_s=60,
                                sample_interval_s=0.2)
            assert out.status == "ok"
    assert not _no_children_left()


def test_rank_takes_the_launchers_environment_of_the_moment(monkeypatch):
    monkeypatch.setenv("BENCH_TEST_MARK", str(time.monotonic()))
    out = launch.run_processes([_env_mark], what="env probe", timeout_s=60)
    assert out.results[0]["mark"] == __import__("os").environ["BENCH_TEST_MARK"]


def _env_mark() -> dict:
    import os

    return {"mark": os.environ.get("BENCH_TEST_MARK")}


def test_grid_point_with_more_replicas_than_gpus_is_not_run(monkeypatch):
    monkeypatch.setattr(devices, "gpu_count", lambda: 1)
    assert inputs.too_many_replicas(2, True) == "needs 2 GPUs, 1 visible"
    assert inputs.too_many_replicas(1, True) is None and inputs.too_many_replicas(8, False) is None


def test_dataloader_workers_use_pytorchs_default_start_method(bundle, model_dir):
    out = launch.launch(_spec(bundle, model_dir, parallel="dp", replicas=1, num_workers=1), timeout_s=60)
    import multiprocessing

    assert out.results[0]["worker_start_method_used"] == multiprocessing.get_start_method()


def test_a_run_with_spawned_workers_reads_every_loader(bundle, model_dir):
    """The options step's start-method rows: DataLoader workers started by spawn get the loader pickled."""
    out = launch.launch(_spec(bundle, model_dir, parallel="dp", replicas=1, num_workers=1,
                              worker_start_method="spawn"), timeout_s=120)
    assert out.results[0]["worker_start_method_used"] == "spawn"


# ------------------------------------------------------------------ CUDA (real DataParallel and DDP over nccl)

@pytest.mark.gpu
@pytest.mark.parametrize("parallel", ["dp", "ddp"])
def test_cuda_run_uses_the_gpu_pins_memory_and_times_the_copy(bundle, model_dir, parallel):
    out = launch.launch(_spec(bundle, model_dir, parallel=parallel, replicas=1, device="cuda", pin_memory=True,
                              num_workers=1), timeout_s=120)
    res = out.results[0]
    assert res["device"] == "cuda" and res["pin_memory_applied"]
    assert res["implementation"] == train.implementation(parallel, "cuda")
    assert all(r["copy_s"] > 0 for r in res["rows"])


@pytest.mark.gpu
def test_cuda_dp_over_every_visible_gpu(bundle, model_dir):
    n = devices.gpu_count()
    out = launch.launch(_spec(bundle, model_dir, parallel="dp", replicas=n, device="cuda"), timeout_s=120)
    assert out.status == "ok" and out.results[0]["implementation"] == "DataParallel (CUDA)"

"""DDP ranks started by torchrun: two launchers with --nnodes 2 on 127.0.0.1 stand for two nodes (static
rendezvous, as a multi-node run uses), and each rank writes its result; outside torchrun the verb says so."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from bench.loaders.system import torchrun
from bench.loaders.system.errors import ConfigError


def _torchrun(node_rank, port, bundle, model_dir, out, tmp):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc_per_node", "1",
           "--node_rank", str(node_rank), "--master_addr", "127.0.0.1", "--master_port", str(port),
           "-m", "bench", "loaders", "ddp-rank", "--bundle", str(bundle / "bundle.json"), "--model", str(model_dir),
           "--loader", "indexed", "--out-dir", str(out), "--batch-per-replica", "2", "--steps", "2",
           "--warmup-steps", "1", "--max-length", "16", "--doc-chars", "80", "--timeout-s", "60"]
    # torchrun makes a torchelastic_* folder in the temp directory and leaves it: point it into the test's own
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "TMPDIR": str(tmp)}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_two_torchrun_nodes_train_together(bundle, model_dir, tmp_path):
    from bench.loaders.system.launch import free_port

    port = free_port()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    procs = [_torchrun(n, port, bundle, model_dir, tmp_path, tmp) for n in (0, 1)]
    try:
        outs = [p.communicate(timeout=240)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)   # torchrun's torchelastic_* folders, never left behind
    assert all(p.returncode == 0 for p in procs), outs
    ranks = [json.loads((tmp_path / f"rank_{r}.json").read_text()) for r in (0, 1)]
    for r, res in enumerate(ranks):
        assert res["rank"] == r and res["world"] == 2 and res["launcher"] == "torchrun"
        assert res["measured_steps"] == 2 and res["samples_per_s"] > 0
        assert [s["phase"] for s in res["steps"]] == ["warmup", "measured", "measured"]
        assert res["memory_at_end"]["pss_bytes"] > 0


def test_ddp_rank_outside_torchrun_is_a_clear_error():
    with pytest.raises(ConfigError, match="RANK, WORLD_SIZE.*torchrun"):
        torchrun.torchrun_env({})

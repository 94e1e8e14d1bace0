"""``make gpu-check`` (scripts/gpu_check.py, issue 28): run shrunk on this CPU machine, every GPU row is
"not run" with its reason; bad PARTS and a missing offline pack are refused before any work; the sizing
that shrinks or skips a target on a small GPU; the GPU code paths of the targets run on the CPU."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

import gpu_check  # noqa: E402
import gpu_parts  # noqa: E402
import gpu_targets  # noqa: E402

GIB = 1 << 30


def _run(*args, env=None, timeout=600):
    return subprocess.run([sys.executable, str(REPO / "scripts" / "gpu_check.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


def test_an_unknown_part_is_refused_before_any_work(tmp_path):
    r = _run("--parts", "env,bogus", "--work", str(tmp_path / "gc"))
    assert r.returncode == 2
    assert r.stderr.strip() == "bench: error: unknown part 'bogus' in PARTS; known: env, tests, targets, profile"
    assert not (tmp_path / "gc").exists()
    assert gpu_check.parse_parts("targets, env") == ["env", "targets"]
    assert gpu_check.parse_parts("") == list(gpu_check.PARTS)


def test_a_missing_venv_or_an_incomplete_offline_pack_is_named(tmp_path, monkeypatch):
    with pytest.raises(gpu_check.Refused, match="no .venv/bin/python and no offline pack"):
        gpu_check.choose_python(tmp_path, ".venv")
    monkeypatch.setattr(gpu_check, "nvidia_present", lambda: False)
    assert gpu_check.choose_python(tmp_path, ".venv", can_make_venv=True)[1].endswith("(made by make venv)")
    monkeypatch.setattr(gpu_check, "nvidia_present", lambda: True)   # an offline CUDA host: no pip there
    with pytest.raises(gpu_check.Refused, match="no offline pack .offline-gpu/ on this CUDA host"):
        gpu_check.choose_python(tmp_path, ".venv", can_make_venv=True)
    monkeypatch.undo()
    (tmp_path / ".offline-gpu" / "whl").mkdir(parents=True)
    (tmp_path / ".offline-gpu" / "setup.sh").write_text("")
    with pytest.raises(gpu_check.Refused, match=r"incomplete: missing site.tar.xz, whl/\*.whl"):
        gpu_check.choose_python(tmp_path, ".venv")
    (tmp_path / ".offline-gpu" / "site.tar.xz").write_text("")
    (tmp_path / ".offline-gpu" / "whl" / "faiss_cpu-1-cp312.whl").write_text("")
    monkeypatch.setattr(gpu_check.shutil, "which", lambda name: None)
    with pytest.raises(gpu_check.Refused, match="nvidia-smi is not on PATH"):
        gpu_check.choose_python(tmp_path, ".venv")
    monkeypatch.setattr(gpu_check, "nvidia_present", lambda: True)
    with pytest.raises(gpu_check.Refused, match="NVIDIA device is present.*nvidia-smi"):
        gpu_check.preflight(tmp_path, ".venv")


def test_a_failing_offline_setup_is_refused_with_its_last_line(tmp_path):
    (tmp_path / ".offline-gpu").mkdir()
    (tmp_path / ".offline-gpu" / "setup.sh").write_text("echo unpacking\necho 'no space left' >&2\nexit 3\n")
    py = tmp_path / "python3"          # a host python3 that cannot import the project yet
    py.write_text("#!/bin/sh\nexit 1\n")
    py.chmod(0o755)
    with pytest.raises(gpu_check.Refused, match=r"setup.sh failed \(exit 3\).*no space left"):
        gpu_check.install(str(py), "host python3", tmp_path, root=tmp_path)
    assert gpu_check.install(sys.executable, "host python3", tmp_path, root=REPO)["status"] == "already installed"
    assert gpu_check.install(sys.executable, ".venv/bin/python", tmp_path) is None


def test_the_profile_records_are_counted_gpu_other_and_not_run(tmp_path):
    import pandas as pd

    from bench.core.measuring import records

    res = tmp_path / "results" / "gpu-check"
    records.write(res / "trinity" / "recall", pd.DataFrame(
        {"system": ["engine-continuous", "faiss-hnsw"], "source": ["measured", "measured"]}), {"device": "cuda"})
    records.write(res / "chameleon" / "search", pd.DataFrame(
        {"config": ["gpu", "cpu", "fpga-cpu"], "source": ["not_run", "measured", "modelled"],
         "why": ["needs CUDA (none on this machine)", None, None]}), {})
    got = gpu_parts.count_results(res)
    assert (got["rows_gpu"], got["rows_other"], got["rows_not_run"]) == (1, 3, 1)
    assert got["not_run_reasons"] == {"needs CUDA (none on this machine)": 1}
    assert got["per_study"]["trinity"] == {"gpu": 1, "other": 1, "not_run": 0}


def test_a_small_gpu_shrinks_or_skips_each_target_with_the_reason():
    big = gpu_targets.plan(True, 80 * GIB)
    assert big["trinity-engine"]["n"] == 1_000_000 and big["trinity-build"]["n"] == 1_000_000
    assert big["chameleon"]["n"] == 1_000_000 and not big["chameleon"]["note"]
    mid = gpu_targets.plan(True, 8 * GIB)
    assert mid["trinity-build"]["n"] < 1_000_000 and "shrunk from 1,000,000" in mid["trinity-build"]["note"]
    assert gpu_targets.gpu_bytes("trinity-build", mid["trinity-build"]["n"]) <= 0.8 * 8 * GIB
    tiny = gpu_targets.plan(True, 2 * GIB)
    assert tiny["chameleon"]["n"] is None and "GPU too small: 2.0 GiB" in tiny["chameleon"]["skip"]
    cpu = gpu_targets.plan(False)
    assert all(v["note"].startswith("no CUDA") for v in cpu.values())
    assert cpu["chameleon"]["n"] < 100_000


def test_part_limits_shrink_to_the_total_left():
    assert gpu_check.limits(["env", "targets"], False, None) == {"env": 10.0, "targets": 70.0}
    lim = gpu_check.limits(list(gpu_check.PARTS), True, 200.0)
    assert sum(lim.values()) <= 200.0 + 1e-6 and lim["targets"] > lim["env"]


def test_time_a_part_left_passes_on_and_the_profile_takes_the_rest():
    b = gpu_check.BUDGET_CUDA
    assert gpu_check.PARTS[-1] == "profile"
    # plenty left: env may run until only the later budgets remain
    assert gpu_check.part_limit("env", ["tests", "targets", "profile"], True, 400.0) == 400.0 - (
        b["tests"] + b["targets"] + b["profile"])
    assert gpu_check.part_limit("profile", [], True, 250.0) == 250.0
    # too little left: the part's proportional share, never under 10 s
    got = gpu_check.part_limit("tests", ["targets", "profile"], True, 100.0)
    assert got == b["tests"] * 100.0 / (b["tests"] + b["targets"] + b["profile"])
    assert gpu_check.part_limit("env", ["tests"], True, 1.0) == 10.0
    assert gpu_check.part_limit("env", ["tests"], False, None) == gpu_check.BUDGET_CPU["env"]


def test_pytest_reports_are_read_whole_or_cut_off(tmp_path):
    x = tmp_path / "j.xml"
    x.write_text('<testsuites><testsuite><testcase classname="t.a" name="ok"/>'
                 '<testcase classname="t.a" name="bad"><failure message="assert 1 == 2&#10;more">tb</failure></testcase>'
                 '<testcase classname="t.b" name="s"><skipped message="needs CUDA"/></testcase>'
                 '<testcase classname="t.b" name="e"><error message="RuntimeError: CUDA error">tb</error></testcase>'
                 '</testsuite></testsuites>')
    got = gpu_parts.parse_junit(x)
    assert got["counts"] == {"passed": 1, "failed": 1, "errors": 1, "skipped": 1}
    assert [f["reason"] for f in got["failures"]] == ["assert 1 == 2", "RuntimeError: CUDA error"]
    cut = gpu_parts.parse_verbose("tests/a.py::test_x PASSED\ntests/a.py::test_y FAILED\ntests/b.py::test_z \n")
    assert cut["counts"]["passed"] == 1 and cut["counts"]["failed"] == 1
    assert cut["running_at_cutoff"] == "tests/b.py::test_z"


def test_records_rows_are_counted_by_where_they_ran():
    import pandas as pd

    df = pd.DataFrame({"system": ["engine-continuous", "faiss-hnsw", "exact-cuda", "x"],
                       "source": ["measured", "measured", "measured", "not_run"],
                       "why": [None, None, None, "needs CUDA (none on this machine)"]})
    gpu, other, why = gpu_parts.classify_rows(df, "cuda")
    assert (gpu, other, why) == (2, 1, {"needs CUDA (none on this machine)": 1})
    assert gpu_parts.classify_rows(df, "cpu")[0] == 1


def test_the_targets_gpu_code_paths_run_on_the_cpu(tmp_path, monkeypatch):
    """What the GPU host runs, with device "cpu": the engine sweep to recall 0.95, exact brute force, MaxSim."""
    from bench.chameleon.system import exact
    from bench.espn.system import maxsim
    from bench.ann import graph as G

    monkeypatch.setenv("GPU_CHECK_CACHE", str(tmp_path))
    x, q = gpu_targets.sift(3000, 64)
    base = exact.Base.from_numpy(x, "cpu")
    gt = gpu_targets.exact_topk(base, q, 10, "cpu")
    graph = G.build_graph(x, G.GraphParams(), 0, "cpu")
    curve = gpu_targets.engine_curve(x, graph, q, gt, "cpu", capacity=32, chunk=1024, repeats=1)
    assert curve[-1]["recall"] >= gpu_targets.RECALL and curve[-1]["mode"] == "eager"
    assert [c["top_m"] for c in curve] == list(gpu_targets.TOP_M[:len(curve)])
    rng = np.random.default_rng(0)
    out = maxsim.maxsim(rng.standard_normal((4, 32)).astype(np.float32),
                        rng.standard_normal((5, 8, 32)).astype(np.float16), np.array([8, 3, 0, 5, 8]), "cpu")
    assert out.shape == (5,) and out[2] == 0
    assert gpu_targets.sift(3000, 64)[0].shape == (3000, 128)   # cached


def test_the_gpu_branch_of_a_target_runs_as_a_labelled_stand_in_on_the_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_CHECK_CACHE", str(tmp_path))
    plan = gpu_targets.plan(False)
    rows = gpu_targets.run_target("espn", plan["espn"], "cpu", 1)
    rows += gpu_targets.run_target("trinity-build", {**plan["trinity-build"], "n": 1500}, "cpu", 1)
    assert {r["status"] for r in rows} == {"stand-in"}
    assert all(r["value"] > 0 and r["anchor_value"] > 0 and "not a GPU measurement" in r["why"] for r in rows)


@pytest.mark.slow
def test_make_gpu_check_runs_shrunk_without_cuda_and_every_gpu_row_says_not_run(tmp_path):
    """The whole command as on this machine (the tests part apart: pytest inside pytest; its parsing is
    tested above): env, profile and targets, each GPU row "not run: no CUDA"; the summary and $OUT copies."""
    from bench.core.machine import devices

    if devices.cuda_available():
        pytest.skip("this test checks the run without CUDA")
    work, out = tmp_path / "gc", tmp_path / "out"
    r = _run("--parts", "env,profile,targets", "--work", str(work),
             env={"OUT": str(out), "GPU_CHECK_CACHE": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((work / "summary.json").read_text())
    assert s["cuda"] is False and s["ran"] == ["env", "targets", "profile"]
    env = s["parts"]["env"]["env"]
    assert env["cores"] >= 1 and env["torch"] and env["faiss_gpu"] is False and env["gpu_model"] is None
    assert s["parts"]["profile"]["status"] == "not run" and "no CUDA" in s["parts"]["profile"]["why"]
    assert s["parts"]["profile"]["jobs_planned"] > 10
    rows = s["parts"]["targets"]["rows"]
    targets = {r["target"] for r in rows}
    assert len(targets) >= 6, targets
    for row in rows:
        assert row["status"] == "not run" and row["why"], row
        assert row["value"] is None
    assert any(r["why"] == gpu_targets.NO_CUDA for r in rows)
    md = (work / "summary.md").read_text()
    assert "| env | ok |" in md and "not run: no CUDA" in md and "## GPU targets" in md
    assert (out / "gpu-check" / "summary.md").read_text() == md
    assert (out / "gpu-check" / "summary.json").exists()

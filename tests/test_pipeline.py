"""The whole chain through Snakemake on a micro profile in a temporary working directory:
data rule -> index rule -> measurement rule -> figure rule -> report, with a user dataset declared in
the profile (u8bin base/queries/ground truth) whose recall equals faiss's for the same index."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import faiss
import numpy as np
import pytest
import yaml

from bench.core.measuring import records
from bench.data import formats, groundtruth, synthetic

pytestmark = pytest.mark.slow


def _snakemake(repo: Path, workdir: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-d", str(workdir),
           "--cores", "2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env=None if env is None else {**os.environ, **env})


def _profile(repo: Path, tmp: Path, **extra) -> Path:
    from bench.core.declaring.config import section_names

    other = {s: {"enabled": False} for s in section_names() if s != "ivf_recall"}
    cfg = {"profile": "micro", "seed": 7, "threads": 1,
           "datasets": {"syn": {"source": "synthetic/sift-like", "n_base": 3000, "n_query": 40, "gt_k": 10},
                        "mine": {"source": "user", "format": "u8bin", "base": "user/base.u8bin",
                                 "queries": "user/query.u8bin", "groundtruth": "user/gt.ibin"}},
           "ivf_recall": {"datasets": ["syn", "mine"], "index": {"nlist": 32, "m": 16},
                          "nprobe": [1, 4, 32], "k": [1, 10], "repeats": 2, "warmup": 1},
           **other, **extra}
    p = tmp / "micro.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def test_micro_profile_end_to_end_with_a_user_dataset(repo, tmp_path):
    xb, xq = synthetic.sift_like(2500, seed=11, n_queries=30)
    (tmp_path / "user").mkdir()
    formats.write_bin(tmp_path / "user" / "base.u8bin", xb)
    formats.write_bin(tmp_path / "user" / "query.u8bin", xq)
    gt, _ = groundtruth.exact_knn(xb, xq, 10)
    formats.write_groundtruth(tmp_path / "user" / "gt.ibin", gt)
    prof = _profile(repo, tmp_path)

    r = _snakemake(repo, tmp_path, "--configfile", str(prof))
    assert r.returncode == 0, r.stderr[-3000:]
    fig = tmp_path / "figures/micro/ivf_recall/recall_vs_nprobe.png"
    assert fig.exists() and fig.with_suffix(".pdf").exists()
    assert (tmp_path / "results/micro/benchmarks/ivf_recall/recall_mine.tsv").exists()

    df = records.read(tmp_path / "results/micro/ivf_recall/recall_mine.parquet")
    assert df.attrs["provenance"]["profile"] == "micro"
    # the same index parameters in faiss directly give the same recall
    ref = faiss.read_index(str(tmp_path / "data/micro/indexes/ivf_recall/mine.faiss"))
    for nprobe in (1, 4, 32):
        ref.nprobe = nprobe
        _, found = ref.search(xq.astype(np.float32), 10)
        expect = np.mean([np.intersect1d(f, g).size for f, g in zip(found, gt)]) / 10
        assert df[df.nprobe == nprobe].recall_at_10.iloc[0] == pytest.approx(expect)

    r = _snakemake(repo, tmp_path, "--configfile", str(prof), "--report", "report.html")
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "report.html").stat().st_size > 10_000

    # restyling a figure reruns only plotting, never a measurement
    r = _snakemake(repo, tmp_path, "--configfile", str(prof), "-n", "--forcerun", "ivf_recall_figures")
    assert "ivf_recall_figures" in r.stdout and "ivf_recall_recall" not in r.stdout

    # an edit to a figure's code reruns that figure, and only it (a hash of its code is a param of its job):
    # the same tree with one comment added to the figures' package, imported from a copy
    copy = tmp_path / "edited"
    shutil.copytree(repo / "src" / "bench", copy / "src" / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "experiments").symlink_to(repo / "experiments")   # the schemas, found beside the package
    figs = copy / "src" / "bench" / "ivf_recall" / "figures" / "__init__.py"
    figs.write_text(figs.read_text() + "\n# an edit\n")
    r = _snakemake(repo, tmp_path, "--configfile", str(prof), "-n", env={"PYTHONPATH": str(copy / "src")})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ivf_recall_figures" in r.stdout, r.stdout[-3000:]
    assert "ivf_recall_claims" not in r.stdout and "ivf_recall_recall" not in r.stdout, r.stdout[-3000:]


def test_bad_config_fails_before_any_rule_runs(repo, tmp_path):
    prof = _profile(repo, tmp_path, ivf_recall={"nprobes": [1]})
    r = _snakemake(repo, tmp_path, "--configfile", str(prof))
    assert r.returncode != 0 and "ivf_recall.nprobes" in r.stderr and "allowed keys here" in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 15, r.stderr
    assert not (tmp_path / "data").exists() and not (tmp_path / "results").exists()
    r = _snakemake(repo, tmp_path, "--configfile", str(prof), "-n", "--config", "espn={'nprobee': 3}")
    assert r.returncode != 0 and "espn.nprobee" in r.stderr and len(r.stderr.strip().splitlines()) <= 15, r.stderr
    prof = _profile(repo, tmp_path, ivf_recall={"datasets": ["ghost"]})
    r = _snakemake(repo, tmp_path, "--configfile", str(prof))
    assert r.returncode != 0 and "ivf_recall uses dataset(s) ['ghost']" in r.stderr
    assert "declared: mine, syn" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) <= 3, r.stderr


def test_every_report_caption_exists(repo):
    """`snakemake --report` fails at the end of a run on a missing caption: check them all up front."""
    import re

    found = 0
    for smk in (repo / "workflows").glob("*.smk"):
        for cap in re.findall(r'caption="([^"]+)"', smk.read_text()):
            assert "{" not in cap, f"{smk.name}: caption paths are not expanded by wildcards: {cap}"
            assert (repo / "workflows" / cap).is_file(), f"{smk.name}: missing caption {cap}"
            found += 1
    assert found >= 2   # the ledger's; a figure's report caption is written by its figure job (test_contract)


def _readme_line(repo: Path, needle: str) -> list[str]:
    """The README's `.venv/bin/snakemake ...` command holding ``needle``, as arguments (N cores -> 1)."""
    import re
    import shlex

    for cmd in re.findall(r"`(\.venv/bin/snakemake [^`]*)`", (repo / "README.md").read_text()):
        if needle in cmd:
            return ["1" if a == "N" else a for a in shlex.split(cmd.replace("<profile>", "micro"))[1:]]
    raise AssertionError(f"no `{needle}` command in the README")


def test_the_readmes_recovery_after_kill_works(repo, tmp_path):
    """A run killed with SIGKILL leaves Snakemake's lock; the README's unlock line clears it (Snakemake 9
    wants --cores even to unlock) and its --rerun-incomplete line then plans the cut-off jobs."""
    import os
    import signal
    import time

    cfg = yaml.safe_load(_profile(repo, tmp_path).read_text())
    del cfg["datasets"]["mine"]
    cfg["ivf_recall"]["datasets"] = ["syn"]
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "micro.yaml").write_text(yaml.safe_dump(cfg))
    sm = [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-d", str(tmp_path)]

    def readme(needle, *extra):
        return subprocess.run([*sm, *_readme_line(repo, needle), *extra], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)

    # the run, killed -9 (with its job: one process group) as soon as it holds the lock
    run = subprocess.Popen([*sm, "--cores", "1", "--configfile", "experiments/micro.yaml"], cwd=tmp_path,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    locks = tmp_path / ".snakemake" / "locks"
    try:
        deadline = time.monotonic() + 120
        while not (locks.is_dir() and any(locks.iterdir())):
            assert run.poll() is None and time.monotonic() < deadline, "the run never took its lock"
            time.sleep(0.02)
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    assert any(locks.iterdir())
    r = readme("--rerun-incomplete", "-n")          # still locked: a dry run says so
    assert "cannot be locked" in r.stdout + r.stderr, (r.stdout[-1000:], r.stderr[-1000:])

    r = readme("--unlock")
    assert r.returncode == 0, r.stderr[-2000:]
    assert not (locks.is_dir() and any(locks.iterdir()))
    r = readme("--rerun-incomplete", "-n")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "cannot be locked" not in r.stdout + r.stderr and "ivf_recall_recall" in r.stdout


def test_a_truncated_user_file_fails_at_validation_with_both_sizes(repo, tmp_path):
    xb, xq = synthetic.sift_like(500, seed=11, n_queries=10)
    (tmp_path / "user").mkdir()
    formats.write_bin(tmp_path / "user" / "base.u8bin", xb)
    formats.write_bin(tmp_path / "user" / "query.u8bin", xq)
    formats.write_groundtruth(tmp_path / "user" / "gt.ibin", groundtruth.exact_knn(xb, xq, 10)[0])
    base = tmp_path / "user" / "base.u8bin"
    base.write_bytes(base.read_bytes()[:-100])
    r = _snakemake(repo, tmp_path, "-n", "--configfile", str(_profile(repo, tmp_path)))
    assert r.returncode != 0
    assert "dataset 'mine' base" in r.stderr and "base.u8bin" in r.stderr
    assert f"{8 + 500 * 128} B" in r.stderr and f"{8 + 500 * 128 - 100} B" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) <= 3, r.stderr
    assert not (tmp_path / "data").exists()


def test_config_numbers_in_datasets_are_numbers_and_merge_into_the_profile(repo, tmp_path):
    """`--config datasets=...` on the default profile: a quoted number is read as the schema's integer, and
    the value is merged into tiny's datasets (the studies' other datasets stay declared)."""
    r = _snakemake(repo, tmp_path, "-n", "--config", 'datasets={"sift-like": {"n_base": "100"}}')
    assert r.returncode == 0, r.stderr[-2000:]
    r = _snakemake(repo, tmp_path, "-n", "--config", 'datasets={"sift-like": {"n_base": "lots"}}')
    assert r.returncode != 0 and "datasets.sift-like.n_base" in r.stderr and "'lots'" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) <= 3, r.stderr


@pytest.mark.parametrize("profile", ["tiny", "small", "gpu", "gpu-check", "paper"])
def test_every_shipped_profile_plans_every_study(repo, tmp_path, profile):
    """`snakemake -n` with each shipped profile: the whole DAG builds (no download, no GPU needed), and
    every enabled study's figure and claims jobs are in it."""
    r = _snakemake(repo, tmp_path, "-n", "--configfile", str(repo / "experiments" / f"{profile}.yaml"))
    assert r.returncode == 0, r.stderr[-2000:]
    from bench.core.declaring.config import section_names, validate_profile

    cfg = validate_profile(yaml.safe_load((repo / "experiments" / f"{profile}.yaml").read_text()))
    studies = [s for s in section_names() if cfg[s]["enabled"]]   # a study the profile leaves out runs on its defaults
    assert studies and "claims_ledger" in r.stdout
    for study in studies:
        assert f"{study}_claims" in r.stdout and f"{study}_figures" in r.stdout, study

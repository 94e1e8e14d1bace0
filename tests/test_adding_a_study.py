"""docs/adding-a-study.md is true (issue 31, item 8): the minimal study its code blocks spell out (each block
whose first line names a file: ``title="PATH"`` is the whole file, ``append="PATH"`` is added to it) is
written into a temporary copy of the repository; its rules run there with snakemake, every other study
disabled, and its row reaches the claims ledger; the contract test and the study's own test pass on it
there; and the doc's table of line counts is the blocks' own. Nothing is written into the real tree."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "adding-a-study.md"
BLOCK = re.compile(r'^```\w+ (title|append)="([^"]+)"\n(.*?)^```$', re.M | re.S)
STUDY, CLAIM, FIGURE = "flat_scan", "check-batching-raises-qps", "qps_vs_batch"
PROFILE = "adding"   # the temporary profile: results/adding/, figures/adding/
COPIED = ("src", "workflows", "experiments", "Snakefile", "pyproject.toml",
          "tests/__init__.py", "tests/conftest.py", "tests/test_contract.py")


def blocks() -> list[tuple[str, str, str]]:
    """(mode, path, text) of every block of the doc that names its file."""
    return [(m[1], m[2], m[3]) for m in BLOCK.finditer(DOC.read_text())]


def _count(text: str) -> int:
    return len(text.splitlines())


def test_the_doc_spells_out_a_whole_study():
    paths = {p for _, p, _ in blocks()}
    pkg = f"src/bench/{STUDY}"
    for part in ("__init__.py", "params.py", "system/__init__.py", "steps/__init__.py", "analysis.py",
                 "figures/__init__.py", "claims.py"):
        assert f"{pkg}/{part}" in paths, part
    assert f"tests/{STUDY}/__init__.py" in paths
    assert not [p for p in paths if p.startswith("workflows/")], "no rule file: the rules come from the declaration"
    profile_lines = [ln for mode, p, body in blocks() if p.startswith("experiments/") for ln in body.splitlines()
                     if ln.strip()]
    assert len(profile_lines) <= 1, f"at most one profile line, not {profile_lines}"
    outside = {p for p in paths if not p.startswith((f"{pkg}/", f"tests/{STUDY}/", "experiments/"))}
    assert not outside, f"the study touches only its package, its tests and one profile line: {outside}"
    assert any(p.startswith(f"{pkg}/steps/") for p in paths - {f"{pkg}/steps/__init__.py"})
    assert any(p.startswith(f"tests/{STUDY}/test_") for p in paths)
    created = [p for mode, p, _ in blocks() if mode == "title"]
    assert len(created) == len(set(created)), "a file given twice with title="
    assert not [p for p in created if (REPO / p).exists()], "the example must not shadow a real file"


def test_the_line_counts_in_the_doc_are_the_blocks():
    text = DOC.read_text()
    per_file: dict[str, int] = {}
    for _, path, body in blocks():
        per_file[path] = per_file.get(path, 0) + _count(body)
    for path, n in per_file.items():
        assert f"| `{path}` | {n} |" in text, f"the doc's table should give {path} {n} lines"
    total = sum(per_file.values())
    pkg = sum(n for p, n in per_file.items() if p.startswith(f"src/bench/{STUDY}/"))
    tests = sum(n for p, n in per_file.items() if p.startswith(f"tests/{STUDY}/"))
    assert f"| **all** | **{total}** |" in text
    assert f"the package {pkg} lines, its tests {tests}, outside both {total - pkg - tests}" in text


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """A copy of the repository's code, workflows and profiles with the doc's study written into it."""
    root = tmp_path_factory.mktemp("adding") / "repo"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for rel in COPIED:
        src, dst = REPO / rel, root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, dst, ignore=skip) if src.is_dir() else shutil.copy2(src, dst)
    for mode, rel, body in blocks():
        dst = root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        with open(dst, "w" if mode == "title" else "a") as fh:
            fh.write(body)
    return root


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "BENCH_EXPERIMENTS_DIR"}
    return {**env, "PYTHONPATH": str(root / "src"), "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}


def _profile(root: Path) -> Path:
    """tiny with the doc's section, every other study disabled and the example's datasets small."""
    cfg = yaml.safe_load((root / "experiments" / "tiny.yaml").read_text())
    studies = {p.parent.name for p in (root / "src" / "bench").glob("*/params.py")} - {"core", "ann", "serving",
                                                                                        "data"}
    others = sorted(studies - {STUDY})
    names = cfg[STUDY].get("datasets", ["sift-like"])   # the example's default datasets (its params.py)
    small = {n: {**cfg["datasets"][n], "n_base": 5000, "n_query": 256} for n in names}
    cfg.update({o: {"enabled": False} for o in others})
    cfg.update(profile=PROFILE, processes=1, figure_formats=["png"], datasets={**cfg["datasets"], **small})
    path = root / f"{PROFILE}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


@pytest.mark.slow   # about 30 s on 2 quiet cores; the step's bounded waits for a quiet machine add up to 40 s
def test_the_doc_study_runs_through_snakemake_into_the_ledger(copy):
    import pandas as pd

    profile = _profile(copy)
    r = subprocess.run([sys.executable, "-m", "snakemake", f"results/{PROFILE}/claims.parquet", f"{STUDY}_figures",
                        "--cores", "2", "--configfile", str(profile)],
                       cwd=copy, env=_env(copy), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    ledger = pd.read_parquet(copy / "results" / PROFILE / "claims.parquet")
    assert set(ledger.study) == {STUDY}, "only the new study is enabled"
    assert ledger.claim_id.tolist() == [CLAIM]
    assert (copy / "results" / PROFILE / STUDY / "scan_sift-like.parquet").is_file()
    assert (copy / "figures" / PROFILE / STUDY / f"{FIGURE}.png").is_file()
    assert CLAIM in (copy / "results" / PROFILE / "claims.md").read_text()
    assert (copy / "figures" / PROFILE / "claims.png").is_file()


def test_the_doc_study_passes_the_contract_and_its_own_tests(copy):
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"tests/{STUDY}",
                        "tests/test_contract.py", "-k",
                        f"{STUDY} or declares_its_place or core_names_no_study"],
                       cwd=copy, env=_env(copy), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
    assert " passed" in r.stdout and "deselected" in r.stdout
    ran = int(re.search(r"(\d+) passed", r.stdout)[1])
    assert ran >= 12, f"the contract's per-study tests and the study's own ({ran} ran)"

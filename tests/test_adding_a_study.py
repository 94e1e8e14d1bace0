"""docs/adding-a-study.md is true: the minimal study its code blocks spell out (each block whose first line
names a file: ``title="PATH"`` is the whole file, ``append="PATH"`` is added to it) is written into a temporary
copy of the repository; ``bench study`` runs its rules there, every other study disabled, and shows its rows
in the ledger and report joined over what exists; the whole ledger's rule takes them too, and the rows'
verdicts follow their declarations (a timed row over three fresh processes, a quality row); the contract test
with ``--study`` (its profile-wide checks kept) and the study's own test pass there; the doc's table of line
counts is the blocks' own; every ``python check`` block runs as it stands; and the doc gives ``Context``'s
fields in their order. Nothing is written into the real tree."""
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
CHECK = re.compile(r'^```python check\n(.*?)^```$', re.M | re.S)
STUDY, FIGURE = "flat_scan", "qps_vs_batch"
SPEED, RECALL = "check-batching-raises-qps", "check-exact-search-recall"
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
    cfg.update(profile=PROFILE, figure_formats=["png"], datasets={**cfg["datasets"], **small})   # tiny's processes
    path = root / f"{PROFILE}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _run(args: list[str], root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=root, env=_env(root), capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow   # 2 min on 2 loaded cores (the scan step in three fresh processes); no quiet waits in tests
def test_the_doc_study_runs_alone_into_the_ledger_and_the_report(copy):
    import pandas as pd

    profile = _profile(copy)
    r = _run(["-m", "bench", "study", STUDY, "--configfile", str(profile), "--cores", "2"], copy)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"{SPEED}: " in r.stdout and f"{RECALL}: reproduced" in r.stdout, r.stdout
    partial = pd.read_parquet(copy / "results" / PROFILE / "partial" / "claims.parquet")
    assert partial.claim_id.tolist() == [SPEED, RECALL] and set(partial.study) == {STUDY}
    page = (copy / "reports" / PROFILE / "partial" / "index.html").read_text()
    assert SPEED in page and RECALL in page and "Flat scan" in page
    assert (copy / "results" / PROFILE / STUDY / "scan_sift-like.parquet").is_file()
    assert (copy / "figures" / PROFILE / STUDY / f"{FIGURE}.png").is_file()
    assert not (copy / "results" / PROFILE / "claims.md").exists(), "the pipeline's own ledger is left alone"
    r = _run(["-m", "snakemake", f"results/{PROFILE}/claims.parquet", "--cores", "2", "--configfile", str(profile)],
             copy)
    assert r.returncode == 0, r.stderr[-3000:]
    ledger = pd.read_parquet(copy / "results" / PROFILE / "claims.parquet").set_index("claim_id")
    assert ledger.index.tolist() == [SPEED, RECALL] and (copy / "figures" / PROFILE / "claims.png").is_file()
    speed, recall = ledger.loc[SPEED], ledger.loc[RECALL]
    assert speed.clusters == 3, "the timed row's interval resamples tiny's three fresh processes"
    assert "fewer than the" not in speed.reason, "three fresh processes are enough to decide"
    assert speed.verdict in ("reproduced", "not reproduced", "inconclusive"), "judged (a timed row: any verdict)"
    assert recall.verdict == "reproduced" and recall.ci_low < 1.0 and "busy machine does not touch it" in recall.reason


def test_the_doc_study_passes_the_contract_and_its_own_tests(copy):
    r = _run(["-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", f"tests/{STUDY}", "tests/test_contract.py",
              "--study", STUDY], copy)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
    assert " passed" in r.stdout and "deselected" in r.stdout
    ran = set(re.findall(r"^PASSED (\S+)", r.stdout, re.M))
    for profile_wide in ("test_generated_rules_agree_with_the_declarations", "test_every_study_declares_its_place",
                         "test_core_names_no_study", "test_every_enabled_study_names_datasets_its_profile_declares",
                         "test_a_profile_holds_only_what_differs_from_the_defaults"):
        assert any(profile_wide in t for t in ran), f"--study keeps the profile-wide {profile_wide}"
    assert any(f"[{STUDY}]" in t for t in ran) and not any("[ivf_recall]" in t for t in ran)
    assert any(t.startswith(f"tests/{STUDY}/") for t in ran)


def _checks() -> list[str]:
    return CHECK.findall(DOC.read_text())


@pytest.mark.parametrize("i", range(len(_checks())))
def test_the_doc_checks_run_as_they_stand(i):
    exec(compile(_checks()[i], f"{DOC.name}, python check block {i + 1}", "exec"), {"__name__": f"doc_check_{i}"})


def test_the_doc_gives_the_context_fields_in_their_order():
    import dataclasses

    from bench.core.measuring.step import Context

    said = re.search(r"`Context`'s fields, in order: `([^`]+)`", " ".join(DOC.read_text().split()))
    assert said, "the doc names Context's fields in order"
    assert [f.strip() for f in said[1].split(",")] == [f.name for f in dataclasses.fields(Context)]

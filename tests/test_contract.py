"""The study contract (docs/adding-a-study.md), checked for every study: no study imports another, and
each has every part (runner steps, figure registry, claims, CLI, rule file, schema, profile sections,
tests)."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
import yaml

from bench.core.figures import Registry

SRC = Path(__file__).resolve().parents[1] / "src" / "bench"
REPO = SRC.parents[1]
STUDIES = sorted(p.parent.name for p in SRC.glob("*/runner.py"))


def _imports(path: Path) -> set[str]:
    """Absolute module names a file imports (relative imports resolved against its package)."""
    pkg = ".".join(path.relative_to(SRC.parent).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
                out |= {mod} | ({f"{mod}.{a.name}" for a in node.names} if not node.module else set())
            else:
                out.add(node.module or "")
    return out


def test_studies_found():
    assert {"ivf_recall", "espn", "chameleon"} <= set(STUDIES)


@pytest.mark.parametrize("study", STUDIES)
def test_no_study_imports_another(study):
    others = set(STUDIES) - {study}
    bad = []
    for py in (SRC / study).rglob("*.py"):
        for mod in _imports(py):
            parts = mod.split(".")
            if len(parts) > 1 and parts[0] == "bench" and parts[1] in others:
                bad.append(f"{py.relative_to(SRC)} imports {mod}")
    assert not bad, "a study imports another (move the shared piece to bench.core or bench.ann): " + "; ".join(bad)


@pytest.mark.parametrize("study", STUDIES)
def test_study_has_every_part(study):
    runner = importlib.import_module(f"bench.{study}.runner")
    assert isinstance(getattr(runner, "STEPS", None), dict) and runner.STEPS, "runner.STEPS: {step: fn(ctx)}"
    figs = importlib.import_module(f"bench.{study}.figures").FIGURES
    assert isinstance(figs, Registry) and len(figs), "figures.FIGURES: a non-empty Registry"
    claims = importlib.import_module(f"bench.{study}.claims")
    assert callable(claims.build) and isinstance(claims.RECORDS, tuple) and claims.RECORDS
    assert callable(importlib.import_module(f"bench.{study}.cli").register)
    smk = REPO / "workflows" / f"{study}.smk"
    assert smk.is_file(), f"missing {smk}"
    text = smk.read_text()
    # the figure and claims rules are generated from this one declaration (workflows/outputs.smk)
    assert f'study_outputs("{study}"' in text, "the rule file declares its record sets with study_outputs()"
    assert f"rule {study}_figures" not in text and f"rule {study}_claims" not in text, "no hand-written copy"
    for p in (f"{s}_figures" for s in STUDIES):
        assert p not in text or p.startswith(study)
    assert (REPO / "experiments" / "schema" / f"{study}.yaml").is_file()
    for prof in ("tiny", "small", "paper"):
        assert study in yaml.safe_load((REPO / "experiments" / f"{prof}.yaml").read_text()), f"{prof}.yaml"
    assert (REPO / "tests" / study).is_dir()
    doc = importlib.import_module(f"bench.{study}").__doc__
    assert doc and len(doc) > 40, "the package docstring says which paper it reproduces"


def test_every_step_declares_what_it_reads_and_the_rules_agree():
    """Each step declares its --input keys (bench.core.step.reads); every key a rule passes is one of them."""
    import re

    from bench.core.step import declared_inputs

    for study in STUDIES:
        steps = importlib.import_module(f"bench.{study}.runner").STEPS
        for name, fn in steps.items():
            assert declared_inputs(fn) is not None, f"{study} step {name} declares no inputs (step.reads)"
        text = (REPO / "workflows" / f"{study}.smk").read_text()
        for step, keys in re.findall(r'measure (\w+) ((?:[^"]*?--input \w+=[^"]*)+)"', text):
            if step not in steps:
                continue
            req, opt = declared_inputs(steps[step])
            for key in re.findall(r"--input (\w+)=", keys):
                assert any(__import__("fnmatch").fnmatchcase(key, k) for k in (*req, *opt)), (study, step, key)


@pytest.mark.parametrize("study", STUDIES)
def test_rule_shell_strings_take_values_from_params(study):
    """Every value a rule passes goes through `params:` (a changed value reruns the rule): no study
    config dict is interpolated into a shell string directly."""
    text = (REPO / "workflows" / f"{study}.smk").read_text()
    for line in text.splitlines():
        s = line.strip()
        if s.startswith('"{BENCH}') or s.startswith('"--') or s.startswith("f\"{{BENCH}}"):
            assert "_P:q}" not in s and "{RUN_ARGS}" not in s, f"{study}.smk: use params: for {s}"


@pytest.mark.parametrize("study", STUDIES)
def test_measure_jobs_import_neither_matplotlib_nor_torch_for_the_cli(study):
    """A measurement job's start-up: the study's command line is built without importing matplotlib
    (the figure registry loads only for the figure verb) or torch (steps import it when they use it)."""
    import subprocess
    import sys

    code = (f"import sys; from bench.cli import build_parser; build_parser({[study.replace('_', '-')]!r}); "
            "print(sorted(m for m in ('matplotlib', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", f"bench {study} imports {out.stdout.strip()} before any verb runs"


def test_registry_writes_the_report_caption(tmp_path):
    from bench.core import plotting

    reg = Registry(descriptions={"a": "What A shows."})

    @reg.figure("a", records=("r",), title="title a")
    def _a(inputs, out_png):
        import matplotlib.pyplot as plt

        fig, _ = plt.subplots()
        return plotting.save(fig, out_png, "This run: {not a template}.")

    written = reg.draw("a", {"r": [tmp_path / "r.parquet"]}, tmp_path / "a.png")
    rst = (tmp_path / "a.report.rst").read_text()
    assert tmp_path / "a.report.rst" in written
    assert rst.startswith("{% raw %}") and "What A shows." in rst and "This run: {not a template}." in rst


def test_figure_verb_takes_several_names_or_all():
    from bench.cli import build_parser
    from bench.core.errors import ConfigError

    p = build_parser(["ivf-recall"])
    a = p.parse_args(["ivf-recall", "figure", "all", "--records", "recall=x.parquet", "--out-dir", "d"])
    assert a.names == ["all"] and a.out_dir == "d"
    with pytest.raises(SystemExit):
        p.parse_args(["ivf-recall", "figure", "nope", "--records", "recall=x", "--out-dir", "d"])
    a = p.parse_args(["ivf-recall", "figure", "recall_vs_nprobe", "recall_vs_nprobe", "--records", "recall=x",
                      "--out", "y.png"])
    a.names.append("other")
    with pytest.raises(ConfigError, match="--out takes one figure"):
        a.func(a)

"""The study contract (docs/adding-a-study.md), checked for every study from its ``STUDY`` declaration and
its imports: no study imports another; each has every part of the one shape (params, system/, steps/,
analysis, figures/, claims, rule file, schema, profile sections, tests); ``system/`` imports nothing above
it; no step imports another; every need has a producer; the typed parameters match the schema; no
``params[...]`` lookup; no import circle inside a study; no function over 60 lines.

For one study: ``pytest tests/test_contract.py tests/NAME --study NAME`` (tests/conftest.py) runs that
study's checks and every profile-wide one (the profiles, the generated rules, the orders, core naming no
study); ``-k NAME`` would skip the profile-wide ones."""
from __future__ import annotations

import ast
import dataclasses
import fnmatch
import importlib
import re
from pathlib import Path

import pytest
import yaml

from bench.core.presenting.figures import Registry
from bench.core.declaring.study import Study

SRC = Path(__file__).resolve().parents[1] / "src" / "bench"
REPO = SRC.parents[1]
NOT_STUDIES = ("core", "ann", "serving", "data")
STUDIES = sorted(p.parent.name for p in SRC.glob("*/params.py") if p.parent.name not in NOT_STUDIES)
PROFILES = sorted(p.stem for p in (REPO / "experiments").glob("*.yaml") if p.stem != "schema")
SHARED = ("bench.core", "bench.ann", "bench.serving", "bench.data")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Absolute module names a file imports (relative imports resolved against its package; ``from X import
    name`` gives ``X.name`` too, which is the module where ``name`` is one)."""
    mod = _module_name(path)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                m = ".".join(base + ([node.module] if node.module else []))
            else:
                m = node.module or ""
            out |= {m} | {f"{m}.{a.name}" for a in node.names}
    return out


def _study_modules(study: str) -> dict[str, Path]:
    return {_module_name(p): p for p in (SRC / study).rglob("*.py")}


def _arrows(study: str) -> set[tuple[str, str]]:
    """(importer, imported) between the study's own modules; a package's ``__init__`` counts only when a
    name is imported from it (not when Python runs it on the way to a submodule)."""
    mods = _study_modules(study)
    out = set()
    for name, path in mods.items():
        for imp in _imports(path):
            if imp in mods and imp != name and not (mods[imp].name == "__init__.py" and f"{imp}." in " ".join(
                    i for i in _imports(path) if i.startswith(imp + ".") and i in mods)):
                out.add((name, imp))
    return out


def test_studies_found():
    assert {"ivf_recall", "espn", "chameleon", "loaders", "windve", "trinity"} <= set(STUDIES)


@pytest.mark.parametrize("study", STUDIES)
def test_no_study_imports_another(study):
    others = set(STUDIES) - {study}
    bad = []
    for py in (SRC / study).rglob("*.py"):
        for mod in _imports(py):
            parts = mod.split(".")
            if len(parts) > 1 and parts[0] == "bench" and parts[1] in others:
                bad.append(f"{py.relative_to(SRC)} imports {mod}")
    assert not bad, "a study imports another (move the shared piece to bench.core, ann, serving or data): " + "; ".join(bad)


@pytest.mark.parametrize("study", STUDIES)
def test_study_has_every_part(study):
    pkg = importlib.import_module(f"bench.{study}")
    st = pkg.STUDY
    assert isinstance(st, Study) and st.name == study
    assert len(st.steps.measures()), "at least one measurement step in steps/"
    for part in ("params.py", "analysis.py", "claims.py", "system/__init__.py", "steps/__init__.py",
                 "figures/__init__.py"):
        assert (SRC / study / part).is_file(), f"src/bench/{study}/{part}"
    figs = importlib.import_module(st.figures).FIGURES
    assert isinstance(figs, Registry) and len(figs), "figures.FIGURES: a non-empty Registry"
    claims = importlib.import_module(st.claims)
    assert callable(claims.build) and isinstance(claims.RECORDS, tuple) and claims.RECORDS
    assert not (SRC / study / "runner.py").exists(), "steps are declared in steps/, no runner.py"
    smk = REPO / "workflows" / f"{study}.smk"
    if smk.exists():   # wiring of its own: it says why, and still writes no rule
        text = smk.read_text()
        assert re.search(r"^# Why a rule file", text, re.M), f"{smk.name} says why the derived rules do not do"
        assert f'study_jobs("{study}"' in text and f'study_outputs("{study}"' in text
        assert not re.search(r"^\s*rule \w+:", text, re.M), "no hand-written rule: workflows/steps.smk generates them"
        for name in st.steps:
            assert f'"{name}": job(' in text, f"{study}.smk gives no job for step {name}"
    else:   # its rules are derived from the declaration (workflows/studies.smk)
        from bench.core.declaring import rules

        section = config_section(study)
        if section.get("enabled"):
            jobs, records = rules.derive(st, section, results="R", indexes="I", manifest=lambda d: f"M/{d}")
            assert set(jobs) == set(st.steps)
            assert set(claims.RECORDS) <= set(records), "every record kind the claims read has a producing step"
    from bench.core.declaring import config

    assert config.declared_params(study) is not None, "params.py declares every key with bench.core.declaring.keys.key"
    assert (REPO / "tests" / study).is_dir()
    assert pkg.__doc__ and len(pkg.__doc__) > 40, "the package docstring says which paper it reproduces"


@pytest.mark.parametrize("study", STUDIES)
def test_params_are_declared_once(study):
    """One source: every key declared on the typed parameters (bench.core.declaring.keys.key); the section's schema
    generated from them, no schema file beside them, the defaults alone build a Params."""
    from bench.core.declaring import config, keys

    st = importlib.import_module(f"bench.{study}").STUDY
    assert dataclasses.is_dataclass(st.params) and st.params.__dataclass_params__.frozen
    assert keys.declares_keys(st.params), "every field of Params is declared with key(...)"
    assert not (REPO / "experiments" / "schema" / f"{study}.yaml").exists(), "the schema is generated"
    assert config.study_schema(study)["properties"].keys() == {f.name for f in dataclasses.fields(st.params)}
    st.parameters({})


@pytest.mark.parametrize("study", STUDIES)
def test_no_string_lookup_of_parameters(study):
    bad = [f"{p.relative_to(SRC)}:{i}" for p in (SRC / study).rglob("*.py")
           for i, line in enumerate(p.read_text().splitlines(), 1)
           if re.search(r"params(\[\s*[\"']|\.get\(\s*[\"'])", line)]
    assert not bad, "parameters are attributes of the typed Params: " + ", ".join(bad)


@pytest.mark.parametrize("study", STUDIES)
def test_system_imports_nothing_above_it(study):
    own = f"bench.{study}.system"
    bad = [f"{p.relative_to(SRC)} imports {m}" for p in (SRC / study / "system").rglob("*.py")
           for m in _imports(p) if m.startswith("bench") and not m.startswith((own, *SHARED))
           and m not in ("bench", f"bench.{study}")]
    assert not bad, "system/ uses bench.core, ann, serving, data and itself only: " + "; ".join(bad)


@pytest.mark.parametrize("study", STUDIES)
def test_no_step_imports_another(study):
    steps = f"bench.{study}.steps"
    step_mods = {_module_name(p) for p in (SRC / study / "steps").glob("*.py")
                 if p.name != "__init__.py" and p.name != "inputs.py" and not p.name.startswith("_")}
    bad = [f"{p.relative_to(SRC)} imports {m}" for p in (SRC / study).rglob("*.py")
           for m in _imports(p) if m in step_mods and m != _module_name(p)]
    assert not bad, f"shared step inputs go in {steps}.inputs: " + "; ".join(bad)


@pytest.mark.parametrize("study", STUDIES)
def test_every_need_has_a_producer(study):
    st = importlib.import_module(f"bench.{study}").STUDY
    assert st.unproduced() == [], "a need no step writes, no dataset and no declared external provides"


@pytest.mark.parametrize("study", STUDIES)
def test_no_import_circle_inside_a_study(study):
    graph: dict[str, set[str]] = {}
    for a, b in _arrows(study):
        graph.setdefault(a, set()).add(b)
    state: dict[str, int] = {}   # 1 on the current path, 2 done

    def circle_from(node, path):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := circle_from(nxt, path + [nxt])):
                return found
        state[node] = 2
        return None

    circles = [c for n in sorted(graph) if n not in state and (c := circle_from(n, [n]))]
    assert not circles, f"import circle in {study}: {' -> '.join(circles[0])}"


@pytest.mark.parametrize("study", STUDIES)
def test_functions_are_short(study):
    long_ = [f"{p.relative_to(SRC)}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"
             for p in (SRC / study).rglob("*.py") for n in ast.walk(ast.parse(p.read_text()))
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 60]
    assert not long_, "split functions over 60 lines: " + "; ".join(long_)


def test_generated_rules_agree_with_the_declarations(tmp_path):
    """The rule files name only declared steps, give each the needs it declares (checked at parse time by
    study_jobs), and every generated rule is named <study>_<step>: a dry run of the whole tiny pipeline."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "snakemake", "--list-rules",
                          "--config", f"results_dir={tmp_path}/r", f"figures_dir={tmp_path}/f"],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    for study in STUDIES:
        st = importlib.import_module(f"bench.{study}").STUDY
        for name in st.steps:
            assert f"{study}_{name}" in out.stdout, f"no rule {study}_{name} in the dry run"


def config_section(study: str) -> dict:
    """The study's section as the tiny profile gives it (its defaults where tiny has no section)."""
    from bench.core.declaring import config

    return config.validate_section(study, yaml.safe_load((REPO / "experiments" / "tiny.yaml").read_text())
                                   .get(study) or {})


@pytest.mark.parametrize("profile", PROFILES)
def test_every_enabled_study_names_datasets_its_profile_declares(profile):
    """A profile holds only what differs from the defaults: a study without a section runs on them, so a
    study enabled in a profile (by its section or its defaults) names datasets that profile declares."""
    from bench.core.declaring import config

    prof = config.validate_profile(yaml.safe_load((REPO / "experiments" / f"{profile}.yaml").read_text()))
    for study in STUDIES:
        sec = prof[study]
        missing = [d for d in sec.get("datasets") or [] if d not in prof["datasets"]] if sec["enabled"] else []
        assert not missing, f"{profile}.yaml: {study} (enabled) names undeclared dataset(s) {missing}"


def _same_as_default(value, schema: dict, path: list) -> list[str]:
    """Key paths under ``value`` whose value is the one their schema defaults to."""
    out = []
    if isinstance(value, dict) and isinstance(schema, dict) and "properties" in schema:
        for k, v in value.items():
            sub = schema["properties"].get(k, {})
            out += [".".join([*path, k])] if "default" in sub and sub["default"] == v else \
                _same_as_default(v, sub, [*path, k])
    return out


@pytest.mark.parametrize("profile", PROFILES)
def test_a_profile_holds_only_what_differs_from_the_defaults(profile):
    """Issue 31: one source for every default (the typed keys); a profile repeating one would go stale."""
    from bench.core.declaring import config

    cfg = yaml.safe_load((REPO / "experiments" / f"{profile}.yaml").read_text())
    same = _same_as_default({k: v for k, v in cfg.items() if k not in STUDIES}, config.top_schema(), [])
    for study in STUDIES:
        same += _same_as_default(cfg.get(study) or {}, config.study_schema(study), [study])
    assert not same, f"{profile}.yaml repeats the defaults of {same}"


@pytest.mark.parametrize("study", [s for s in STUDIES if (REPO / "workflows" / f"{s}.smk").exists()])
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
    from bench.core.presenting import plotting

    import pandas as pd

    from bench.core.measuring import records

    reg = Registry(descriptions={"a": "What A shows."})
    records.write(tmp_path / "r.parquet", pd.DataFrame({"x": [1, 2]}), {"profile": "t"})

    @reg.figure("a", records=("r",), title="title a")
    def _a(data, out_png):
        assert list(data["r"].x) == [1, 2] and data["r"].attrs["provenance"]["profile"] == "t"
        fig, _ = plotting.start()
        return plotting.save(fig, out_png, "This run: {not a template}.")

    written = reg.draw("a", {"r": [tmp_path / "r.parquet"]}, tmp_path / "a.png")
    rst = (tmp_path / "a.report.rst").read_text()
    assert tmp_path / "a.report.rst" in written
    assert rst.startswith("{% raw %}") and "What A shows." in rst and "This run: {not a template}." in rst


def test_figure_verb_takes_several_names_or_all():
    from bench.cli import build_parser
    from bench.core.base.errors import ConfigError

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


def test_core_names_no_study():
    """Order, titles and the harness-check flag come from each study's declaration (issue 31): no study's
    name appears as a string in core's code (docstrings and comments may cite a paper)."""
    import ast

    names = set(STUDIES)
    for path in sorted((SRC / "core").glob("*.py")):
        tree = ast.parse(path.read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                assert node.value not in names, f"{path.name}:{node.lineno} names the study {node.value!r}"


def test_every_study_declares_its_place_and_title():
    from bench.core.declaring import study

    declared = study.declared()
    assert sorted(s.name for s in declared) == STUDIES
    for s in declared:
        assert s.title and s.short, f"{s.name}: no title or short name in its STUDY declaration"
    assert len({s.order for s in declared}) == len(declared), "two studies share an order"


def _paper_inputs(study: str):
    """Every ``PAPER_INPUTS`` the study's modules declare (its emulations and models)."""
    from bench.core.judging import fidelity

    mods = [importlib.import_module(m) for m in sorted(_study_modules(study))
            if "PAPER_INPUTS" in _study_modules(study)[m].read_text()]
    return fidelity.inputs_of(mods)


@pytest.mark.parametrize("study", STUDIES)
def test_what_the_paper_fixed_never_judges_a_row(study):
    """The sensitivity test (bench.core.judging.fidelity): a study whose emulations or models take numbers
    from the paper provides synthetic records built by them (``STUDY.synthetic``); its claims are rebuilt with
    each such number scaled x0.8 and x1.25, and no row whose value moves with one may be judged without
    naming it (``fixed_by=``). The rows built from the synthetic records are fit for the ledger
    (:func:`bench.core.judging.claims.check`: definitions, hardware, targets' premises)."""
    from bench.core.declaring.study import by_name
    from bench.core.judging import claims, fidelity

    inputs = _paper_inputs(study)
    decl = by_name()[study]
    if not inputs and decl.synthetic is None:
        return
    assert decl.synthetic, f"{study} declares paper inputs {[i.name for i in inputs]} but no synthetic records"
    synth = importlib.import_module(decl.synthetic)
    params = decl.parameters({})
    module = importlib.import_module(decl.claims)

    def build():
        return module.build(synth.records(params), params, "tiny")

    rows = build()
    assert claims.check(rows, decl.reproduces_paper) == []
    assert fidelity.circular_rows(rows, fidelity.sensitivity(build, inputs)) == []

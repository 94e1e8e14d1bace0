# Shared definitions: paths of the active profile, the `bench` command, JSON params, TARGETS.
import json
import os
import re
import shlex
import sys

PROFILE = config["profile"]
SEED = config["seed"]
THREADS = config["threads"]
DATA = config["data_dir"]
RESULTS = f"{config['results_dir']}/{PROFILE}"
FIGURES = f"{config['figures_dir']}/{PROFILE}"
BENCHMARKS = f"{RESULTS}/benchmarks"  # snakemake `benchmark:` files of every rule
# One process per job: the interpreter snakemake runs under, so the venv's `bench` is used.
BENCH = f"{shlex.quote(sys.executable)} -m bench"
RUN_ARGS = f"--profile {PROFILE} --seed {SEED} --threads {THREADS}"
# a step that can repeat cheaply (declared processes=True) splits its repeats over this many fresh processes
PROCESSES = config["processes"]
FIGURE_FORMATS = ",".join(config["figure_formats"])  # png, plus pdf/svg where the profile asks

# Figure and claims jobs (one core each) run after the measurements (which take every core), two at a
# time, instead of one at a time beside an idle core whenever one becomes ready.
LAST = -10

# Each study's rule file appends its final outputs here; `rule all` builds them all.
TARGETS = {}
# Each study's rule file registers its claims record set here; workflows/ledger.smk joins them.
CLAIMS = {}
# study -> {step: job}: what workflows/steps.smk needs to generate the study's build and measurement rules
STUDY_JOBS = {}
# study -> what workflows/outputs.smk needs to generate its figure and claims rules (study_outputs)
STUDY_OUTPUTS = {}


def as_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def dataset_manifest(name):
    return f"{DATA}/{PROFILE}/prepared/{name}/manifest.json"


def require_datasets(study, names):
    """Fail at parse time, before any rule runs, when a study names an undeclared dataset."""
    missing = [n for n in names if n not in config["datasets"]]
    if missing:  # a short message, no traceback (as the profile validation in the Snakefile)
        print(f"bench: config: {study} uses dataset(s) {missing} that the profile's `datasets:` section does "
              f"not declare\n  declared: {', '.join(sorted(config['datasets'])) or '(none)'}", file=sys.stderr)
        sys.exit(1)


def figure_registry(study):
    """The study's figure registry (bench.<study>.figures.FIGURES): the rule file and the CLI read one list."""
    import importlib

    return importlib.import_module(f"bench.{study}.figures").FIGURES


def code_hash(study, part):
    """A hash of the code behind a study's figures or claims (its ``figures/`` or ``claims.py``, its
    ``analysis.py`` and the core modules they draw on), passed as a param: Snakemake reruns a job whose params
    changed, so an edit to a figure's or a claim's code reruns that job without ``--forcerun``."""
    import hashlib
    from pathlib import Path

    import bench

    root = Path(bench.__path__[0])
    own = {"figures": sorted((root / study / "figures").rglob("*.py")), "claims": [root / study / "claims.py"]}[part]
    core = {"figures": ["presenting/plotting.py", "presenting/figures.py", "presenting/figure_checks.py"],
            "claims": ["judging/claims.py", "judging/intervals.py", "judging/fidelity.py"]}[part]
    files = [*own, root / study / "analysis.py", *(root / "core" / c for c in core)]
    h = hashlib.sha256()
    for f in files:
        if f.is_file():
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def figure_names(figs, records):
    """The registered figures whose record kinds some rule of this profile produces."""
    return [n for n in figs if set(figs.records_of(n)) <= set(records)]


def figure_inputs(figs, records, names):
    """``{kind: [paths]}`` of every record kind the figures ``names`` read (one job draws them all)."""
    return pick(records, list(dict.fromkeys(k for n in names for k in figs.records_of(n))))


def figure_outputs(study, names, category):
    """A study's figures: each PNG in the report (captioned by the ``NAME.report.rst`` the figure job
    writes beside it: what the figure shows, then the run's details) and its other FIGURE_FORMATS."""
    d = f"{FIGURES}/{study}"
    out = {"png": [report(f"{d}/{n}.png", caption=os.path.abspath(f"{d}/{n}.report.rst"), category=category)
                   for n in names]}
    out.update({f: [f"{d}/{n}.{f}" for n in names] for f in config["figure_formats"] if f != "png"})
    return out


def claims_records(study, produced=None):
    """The record kinds the study's claims read (bench.<study>.claims.RECORDS), and those of its
    OPTIONAL_RECORDS that some rule produces (``produced``: the study's record sets)."""
    import importlib

    mod = importlib.import_module(f"bench.{study}.claims")
    extra = [k for k in getattr(mod, "OPTIONAL_RECORDS", ()) if produced and k in produced]
    return [*mod.RECORDS, *extra]


def pick(records, kinds):
    """``{kind: [paths]}`` restricted to ``kinds`` (an input function's named inputs)."""
    missing = [k for k in kinds if k not in records]
    if missing:
        raise ValueError(f"no rule produces record kind(s) {missing}; known: {sorted(records)}")
    return {k: records[k] for k in kinds}


def records_arg(input):
    """Named inputs -> ``--records kind=path ...`` for a figure or claims command."""
    out = []
    for kind, paths in input.items():
        for p in [paths] if isinstance(paths, str) else paths:
            out.append(f"--records {shlex.quote(f'{kind}={p}')}")
    return " ".join(out)


def study_outputs(study, *, cli, records, section, category, claim_kinds):
    """Declare a study's record sets once: workflows/outputs.smk generates its figure rule (every registered
    figure whose record kinds some rule produces, in one job) and its claims rule from this, and adds the
    study's figures, records and claims to TARGETS and its claims to the ledger."""
    STUDY_OUTPUTS[study] = {"cli": cli, "records": records, "section": section, "category": category,
                            "claim_kinds": list(claim_kinds)}


def job(out, needs=None, *, params, after=None, dataset=None, out_arg=None, threads=None):
    """One step's rule, as a study's rule file names it: the file(s) it writes (``out``: a path or
    ``{name: path}``, ``--out`` is the first unless ``out_arg`` says otherwise), the file(s) feeding each of
    the step's needs (``{need: path or [paths]}``, each passed as ``--input need=path``), files it waits
    for without reading them (``after``), its profile section (``params``: a dict or ``wildcards -> dict``),
    its dataset (a ``{dataset}`` wildcard in ``out`` is passed on by itself) and threads (all by default:
    a measurement runs alone)."""
    return {"out": out if isinstance(out, dict) else {"out": out}, "needs": dict(needs or {}),
            "after": dict(after or {}), "params": params, "dataset": dataset, "out_arg": out_arg,
            "threads": threads}


def _step_of(study, name):
    """The step ``name`` of the study's STUDY declaration; a rule file naming an undeclared step stops here."""
    import importlib

    steps = importlib.import_module(f"bench.{study}").STUDY.steps
    if name not in steps:
        raise ValueError(f"workflows/{study}.smk: no step {name!r} in bench.{study}.STUDY ({', '.join(steps)})")
    return steps[name]


def study_jobs(study, jobs):
    """Declare a study's build and measurement jobs: workflows/steps.smk generates one rule per step. Each
    job's needs are checked against the step's declaration here, at parse time, so a rule and its step
    cannot disagree."""
    import fnmatch

    for name, j in jobs.items():
        s = _step_of(study, name)
        given = list(j["needs"])
        unknown = [k for k in given if not any(fnmatch.fnmatchcase(k, d) for d in (*s.needs, *s.optional))]
        missing = [d for d in s.needs if not any(fnmatch.fnmatchcase(k, d) for k in given)]
        if unknown or missing:
            raise ValueError(f"workflows/{study}.smk: step {name} needs {list(s.needs)} (optional "
                             f"{list(s.optional)}); the rule gives {given}")
        j["verb"] = "build" if s.kind == "build" else "measure"
        j["processes"] = s.processes
        if s.keys is not None:   # the job's params are the keys its step reads, no more
            _check_keys(study, name, s.keys)
            f = j["params"]
            j["params"] = ((lambda wc, _f=f, _k=s.keys: select_keys(_f(wc), _k)) if callable(f)
                           else select_keys(f, s.keys))
    STUDY_JOBS[study] = jobs


def select_keys(section, keys):
    from bench.core.declaring.params import select

    return select(section, keys)


def _check_keys(study, name, keys):
    from bench.core.declaring.config import study_schema

    known = set((study_schema(study) or {}).get("properties", {}))
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise ValueError(f"bench.{study} step {name} declares keys={list(keys)}, but {unknown} are not keys of "
                         f"the {study} section (known: {', '.join(sorted(known))})")


def inputs_arg(input, keys):
    """Named inputs -> ``--input key=path ...`` for the step's needs (not its ``after`` files)."""
    out = []
    for key in keys:
        paths = input[key]
        for p in [paths] if isinstance(paths, str) else paths:
            out.append(f"--input {shlex.quote(f'{key}={p}')}")
    return " ".join(out)


def job_wildcards(j):
    """The wildcard names in a job's outputs (its benchmark file carries the same)."""
    import re

    return sorted({w for p in j["out"].values() for w in re.findall(r"{(\w+)}", p)})

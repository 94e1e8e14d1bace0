# Shared definitions: paths of the active profile, the `bench` command, JSON params, TARGETS.
import json
import os
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
FIGURE_FORMATS = ",".join(config["figure_formats"])  # png, plus pdf/svg where the profile asks

# Figure and claims jobs (one core each) run after the measurements (which take every core), two at a
# time, instead of one at a time beside an idle core whenever one becomes ready.
LAST = -10

# Each study's rule file appends its final outputs here; `rule all` builds them all.
TARGETS = {}
# Each study's rule file registers its claims record set here; workflows/ledger.smk joins them.
CLAIMS = {}
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


def claims_records(study):
    """The record kinds the study's claims read (bench.<study>.claims.RECORDS)."""
    import importlib

    return importlib.import_module(f"bench.{study}.claims").RECORDS


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

# Shared definitions: paths of the active profile, the `bench` command, JSON params, TARGETS.
import json
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

# Each study's rule file appends its final outputs here; `rule all` builds them all.
TARGETS = {}


def as_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def dataset_manifest(name):
    return f"{DATA}/{PROFILE}/prepared/{name}/manifest.json"


def require_datasets(study, names):
    """Fail at parse time, before any rule runs, when a study names an undeclared dataset."""
    missing = [n for n in names if n not in config["datasets"]]
    if missing:
        raise ValueError(
            f"config: {study} uses dataset(s) {missing} that the profile's `datasets:` section does not "
            f"declare (declared: {sorted(config['datasets'])})")

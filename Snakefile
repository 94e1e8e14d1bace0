# The harness pipeline. `snakemake --cores N` runs the default profile (tiny); another profile with
# `snakemake --cores N --configfile experiments/<profile>.yaml`. The profile is validated by the same
# validator `bench` uses (bench.core.declaring.config: the schemas generated from bench.core.declaring.profile for the top
# level and from each study's typed parameters) before any rule runs; a bad key stops it with a short message.
import sys
from pathlib import Path

from snakemake.utils import min_version

from bench.core.declaring.config import validate_profile
from bench.core.base.errors import BenchError

min_version("9.0")

BASE = Path(workflow.basedir)

# The default profile is loaded only when none is given: snakemake would otherwise deep-merge a
# --configfile onto it, and the small/paper profiles would silently inherit tiny's settings. `--config`
# values are then merged into it the way snakemake merges them into a --configfile (nested mappings key by
# key, so `--config datasets='{"sift-like": {"n_base": 5000}}'` changes one key of one dataset and keeps
# the rest), whether or not a --configfile is given.
if "profile" not in config:
    import yaml
    from snakemake.utils import update_config

    _overrides = dict(config)
    config.clear()
    config.update(yaml.safe_load((BASE / "experiments/tiny.yaml").read_text()))
    update_config(config, _overrides)

try:
    _validated = validate_profile(config)
    from bench.data.prepared import check_user_files

    check_user_files(_validated["datasets"])  # paths relative to the working directory, as `bench data prepare` reads them
except BenchError as _exc:
    print(f"bench: {_exc}", file=sys.stderr)
    sys.exit(1)
config.clear()
config.update(_validated)

report: "workflows/report/workflow.rst"

include: "workflows/common.smk"
include: "workflows/data.smk"
# A study with wiring of its own (workflows/<study>.smk, which says why); every other study's jobs are
# derived from its declaration by workflows/studies.smk.
for _rules in sorted((BASE / "workflows").glob("*.smk")):
    if _rules.name not in ("common.smk", "data.smk", "studies.smk", "steps.smk", "outputs.smk", "ledger.smk"):
        include: str(_rules)
include: "workflows/studies.smk"
include: "workflows/steps.smk"
include: "workflows/outputs.smk"
include: "workflows/ledger.smk"


rule all:
    default_target: True
    input:
        [t for study in sorted(TARGETS) for t in TARGETS[study]],

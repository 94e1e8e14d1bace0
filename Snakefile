# The harness pipeline. `snakemake --cores N` runs the default profile (tiny); another profile with
# `snakemake --cores N --configfile experiments/<profile>.yaml`. The config is validated against
# experiments/schema.yaml and each study's experiments/schema/<study>.yaml before any rule runs.
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.0")

BASE = Path(workflow.basedir)

# The default profile is loaded only when none is given: snakemake would otherwise deep-merge a
# --configfile onto it, and the small/paper profiles would silently inherit tiny's settings.
if "profile" not in config:
    import yaml

    _overrides = dict(config)
    config.clear()
    config.update(yaml.safe_load((BASE / "experiments/tiny.yaml").read_text()))
    config.update(_overrides)

validate(config, str(BASE / "experiments/schema.yaml"))
for _schema in sorted((BASE / "experiments/schema").glob("*.yaml")):
    config.setdefault(_schema.stem, {})
    validate(config[_schema.stem], str(_schema))

include: "workflows/common.smk"
include: "workflows/data.smk"
for _rules in sorted((BASE / "workflows").glob("*.smk")):
    if _rules.name not in ("common.smk", "data.smk"):
        include: str(_rules)


rule all:
    default_target: True
    input:
        [t for study in sorted(TARGETS) for t in TARGETS[study]],

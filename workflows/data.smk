# Data rules: fetch a registered source (verified, resumable), prepare a dataset of the profile.
from bench.data import download as _download, registry as _registry


def _source_marker(name):
    src = config["datasets"][name]["source"]
    if src == "user":
        return []
    s = _registry.get(src)
    return [] if s.synthetic else [str(_download.marker_path(s, DATA))]


def _user_files(name):
    spec = config["datasets"][name]
    if spec["source"] != "user":
        return []
    return [spec[k] for k in ("base", "queries", "groundtruth", "collection", "qrels") if k in spec]


rule fetch_source:
    output:
        f"{DATA}/raw/.verified/{{key}}.json",
    params:
        source=lambda wc: wc.key.replace("__", "/"),
        mirror=f"--mirror {shlex.quote(config['mirror'])}" if config["mirror"] else "",
    benchmark:
        f"{BENCHMARKS}/data/fetch_{{key}}.tsv"
    shell:
        "{BENCH} data fetch {params.source} --data-dir {DATA} {params.mirror} --no-progress"


rule prepare_dataset:
    input:
        marker=lambda wc: _source_marker(wc.name),
        user=lambda wc: _user_files(wc.name),
    output:
        f"{DATA}/{PROFILE}/prepared/{{name}}/manifest.json",
    params:
        spec=lambda wc: as_json(config["datasets"][wc.name]),
    benchmark:
        f"{BENCHMARKS}/data/prepare_{{name}}.tsv"
    shell:
        "{BENCH} data prepare {wildcards.name} --spec {params.spec:q} --profile {PROFILE} "
        "--data-dir {DATA} --seed {SEED}"

# Moving Stuff Around: document loaders x DP/DDP, samples/s and memory (Figure 1, Tables 1-3, extras).
# build (collection bundle + cut-down encoder) -> train (Tables 1-2, Fig 1) | options (Table 3)
#   | loader_only | workers -> one figure rule over the registry, claims; figures read records only.
LOADERS = config["loaders"]

if LOADERS["enabled"]:
    require_datasets("loaders", LOADERS["datasets"])
    LOADERS_DATASET = LOADERS["datasets"][0]
    LOADERS_BUILD = f"{DATA}/{PROFILE}/indexes/loaders/{LOADERS_DATASET}"
    LOADERS_STEPS = ("train", "options", "loader_only", "workers")
    # record kind -> record sets: what the figure and claims rules read
    LOADERS_RECORDS = {step: [f"{RESULTS}/loaders/{step}.parquet"] for step in LOADERS_STEPS}
    _LOADERS_SUB = ("options", "loader_only", "workers")

    def loaders_step_params(step):
        """The section a step reads: the common keys and its own sub-section only, so a changed value
        reruns only the steps that read it."""
        return as_json({k: v for k, v in LOADERS.items() if k not in _LOADERS_SUB or k == step})


    rule loaders_build:
        input:
            manifest=dataset_manifest(LOADERS_DATASET),
        output:
            bundle=f"{LOADERS_BUILD}/bundle.json",
            model=f"{LOADERS_BUILD}/model/model.pt",
        params:
            p=as_json({k: LOADERS[k] for k in ("collection", "encoder", "layers")}),
            run=RUN_ARGS,
            dataset=LOADERS_DATASET,
        benchmark:
            f"{BENCHMARKS}/loaders/build.tsv"
        shell:
            "{BENCH} loaders build --input manifest={input.manifest} --dataset {params.dataset} "
            "--out {output.bundle} {params.run} --params {params.p:q}"

    rule loaders_measure:
        input:
            bundle=rules.loaders_build.output.bundle,
            model=rules.loaders_build.output.model,
        output:
            f"{RESULTS}/loaders/{{step}}.parquet",
        params:
            p=lambda wc: loaders_step_params(wc.step),
            run=RUN_ARGS,  # a params entry, so a changed thread count or seed reruns the measurement
            dataset=LOADERS_DATASET,
        wildcard_constraints:
            step="|".join(LOADERS_STEPS),
        threads: workflow.cores  # measured: nothing else runs beside it
        benchmark:
            f"{BENCHMARKS}/loaders/{{step}}.tsv"
        shell:
            "{BENCH} loaders measure {wildcards.step} --input bundle={input.bundle} --input model={input.model} "
            "--dataset {params.dataset} --out {output} {params.run} --params {params.p:q}"

    # the figure and claims rules: generated for every study by workflows/outputs.smk
    study_outputs("loaders", cli="loaders", records=LOADERS_RECORDS, section=LOADERS,
                  category="Moving Stuff Around (loaders)", claim_kinds=claims_records("loaders"))

# Moving Stuff Around: document loaders x DP/DDP, samples/s and memory (Figure 1, Tables 1-3, extras).
# build (collection bundle + cut-down encoder) -> train (Tables 1-2, Fig 1) | options (Table 3)
#   | loader_only | workers -> one figure rule over the registry, claims; figures read records only.
LOADERS = config["loaders"]

if LOADERS["enabled"]:
    require_datasets("loaders", LOADERS["datasets"])
    LOADERS_DATASET = LOADERS["datasets"][0]
    LOADERS_BUILD = f"{DATA}/{PROFILE}/indexes/loaders/{LOADERS_DATASET}"
    LOADERS_FIGS = figure_registry("loaders")
    LOADERS_STEPS = ("train", "options", "loader_only", "workers")
    # record kind -> record sets: what the figure and claims rules read
    LOADERS_RECORDS = {step: [f"{RESULTS}/loaders/{step}.parquet"] for step in LOADERS_STEPS}
    _LOADERS_SUB = ("options", "loader_only", "workers")

    def loaders_step_params(step):
        """The section a step reads: the common keys and its own sub-section only, so a changed value
        reruns only the steps that read it."""
        return as_json({k: v for k, v in LOADERS.items() if k not in _LOADERS_SUB or k == step})

    LOADERS_FIG_NAMES = figure_names(LOADERS_FIGS, LOADERS_RECORDS)

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

    rule loaders_figures:
        priority: LAST  # draw after the measurements, two figure/claims jobs at a time
        input:
            **figure_inputs(LOADERS_FIGS, LOADERS_RECORDS, LOADERS_FIG_NAMES),
        output:
            **figure_outputs("loaders", LOADERS_FIG_NAMES, "Moving Stuff Around (loaders)"),
        params:
            records=lambda wc, input: records_arg(input),
            names=" ".join(LOADERS_FIG_NAMES),
            formats=FIGURE_FORMATS,
            out=f"{FIGURES}/loaders",
        benchmark:
            f"{BENCHMARKS}/loaders/figures.tsv"
        shell:
            "{BENCH} loaders figure {params.names} {params.records} --out-dir {params.out} --formats {params.formats}"

    rule loaders_claims:
        priority: LAST
        input:
            unpack(lambda wc: pick(LOADERS_RECORDS, claims_records("loaders"))),
        output:
            f"{RESULTS}/loaders/claims.parquet",
            f"{RESULTS}/loaders/claims.md",
        params:
            records=lambda wc, input: records_arg(input),
            p=as_json(LOADERS),
        benchmark:
            f"{BENCHMARKS}/loaders/claims.tsv"
        shell:
            "{BENCH} loaders claims {params.records} --profile {PROFILE} --params {params.p:q} --out {output[0]}"

    CLAIMS["loaders"] = rules.loaders_claims.output[0]
    TARGETS["loaders"] = [
        *expand(f"{FIGURES}/loaders/{{name}}.png", name=LOADERS_FIG_NAMES),
        *[p for paths in LOADERS_RECORDS.values() for p in paths],
        *rules.loaders_claims.output,
    ]

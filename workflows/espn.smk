# ESPN: multi-vector re-ranking embeddings on SSD with an ANN-driven prefetcher (every table/figure).
# build -> quality (Fig 5, 6) | hitrate (Fig 7) | e2e (Tables 4/5, Fig 1) | batch (Fig 8-10, eq. 4) | iops (vs fio)
#       -> one figure rule over the registry, claims; each figure and the claims read records only.
ESPN = config["espn"]

if ESPN["enabled"]:
    require_datasets("espn", ESPN["datasets"])
    if len(ESPN["datasets"]) != 1:
        raise ValueError(f"config: espn.datasets names {ESPN['datasets']}; ESPN measures exactly one text dataset")
    ESPN_DATASET = ESPN["datasets"][0]
    ESPN_BUILD = f"{DATA}/{PROFILE}/indexes/espn/{ESPN_DATASET}"
    ESPN_FIGS = figure_registry("espn")
    ESPN_STEPS = ("quality", "hitrate", "e2e", "batch", "iops")
    # record kind -> record sets: what the figure and claims rules read
    ESPN_RECORDS = {step: [f"{RESULTS}/espn/{step}.parquet"] for step in ESPN_STEPS}

    ESPN_FIG_NAMES = figure_names(ESPN_FIGS, ESPN_RECORDS)

    rule espn_build:
        input:
            manifest=dataset_manifest(ESPN_DATASET),
        output:
            meta=f"{ESPN_BUILD}/meta.json",
            table=f"{ESPN_BUILD}/table.espn",
            offsets=f"{ESPN_BUILD}/table.espn.offsets.npz",
            index=f"{ESPN_BUILD}/ann.faiss",
            queries=f"{ESPN_BUILD}/queries.npz",
        params:
            p=as_json(ESPN),
            run=RUN_ARGS,
            out=ESPN_BUILD,
            dataset=ESPN_DATASET,
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/espn/build.tsv"
        shell:
            "{BENCH} espn build --input manifest={input.manifest} --dataset {params.dataset} --out {params.out} "
            "{params.run} --params {params.p:q}"

    rule espn_measure:
        input:
            meta=rules.espn_build.output.meta,
            manifest=dataset_manifest(ESPN_DATASET),
        output:
            f"{RESULTS}/espn/{{step}}.parquet",
        params:
            p=as_json(ESPN),
            run=RUN_ARGS,  # a params entry, so a changed thread count or seed reruns the measurement
            build=ESPN_BUILD,
            dataset=ESPN_DATASET,
        wildcard_constraints:
            step="|".join(ESPN_STEPS),
        threads: workflow.cores  # measured: nothing else runs beside it
        benchmark:
            f"{BENCHMARKS}/espn/{{step}}.tsv"
        shell:
            "{BENCH} espn measure {wildcards.step} --input build={params.build} --input manifest={input.manifest} "
            "--dataset {params.dataset} --out {output} {params.run} --params {params.p:q}"

    rule espn_figures:
        priority: LAST  # draw after the measurements, two figure/claims jobs at a time
        input:
            **figure_inputs(ESPN_FIGS, ESPN_RECORDS, ESPN_FIG_NAMES),
        output:
            **figure_outputs("espn", ESPN_FIG_NAMES, "ESPN"),
        params:
            records=lambda wc, input: records_arg(input),
            names=" ".join(ESPN_FIG_NAMES),
            formats=FIGURE_FORMATS,
            out=f"{FIGURES}/espn",
        benchmark:
            f"{BENCHMARKS}/espn/figures.tsv"
        shell:
            "{BENCH} espn figure {params.names} {params.records} --out-dir {params.out} --formats {params.formats}"

    rule espn_claims:
        priority: LAST
        input:
            unpack(lambda wc: pick(ESPN_RECORDS, claims_records("espn"))),
        output:
            f"{RESULTS}/espn/claims.parquet",
            f"{RESULTS}/espn/claims.md",
        params:
            records=lambda wc, input: records_arg(input),
            p=as_json(ESPN),
        benchmark:
            f"{BENCHMARKS}/espn/claims.tsv"
        shell:
            "{BENCH} espn claims {params.records} --profile {PROFILE} --params {params.p:q} --out {output[0]}"

    CLAIMS["espn"] = rules.espn_claims.output[0]
    TARGETS["espn"] = [
        *expand(f"{FIGURES}/espn/{{name}}.png", name=ESPN_FIG_NAMES),
        *[p for paths in ESPN_RECORDS.values() for p in paths],
        *rules.espn_claims.output,
    ]

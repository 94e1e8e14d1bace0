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
    ESPN_STEPS = ("quality", "hitrate", "e2e", "batch", "iops")
    # record kind -> record sets: what the figure and claims rules read
    ESPN_RECORDS = {step: [f"{RESULTS}/espn/{step}.parquet"] for step in ESPN_STEPS}


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

    # the figure and claims rules: generated for every study by workflows/outputs.smk
    study_outputs("espn", cli="espn", records=ESPN_RECORDS, section=ESPN,
                  category="ESPN", claim_kinds=claims_records("espn"))

# WindVE: the embedding service with CPU offload of peak queries (the CUDA GPU where there is one, measured;
# else an emulated accelerator, or on request: profile key windve.accelerator).
# profile (Figure 4, Table III, Figures 5/6) -> serving (Tables I/II, overload, utilisation, overhead,
# open loop) -> figures -> claims. Each measurement rule starts `bench windve serve` on 127.0.0.1,
# waits for /health, measures over HTTP and stops it (also when the step fails).
WINDVE = config["windve"]

if WINDVE["enabled"]:
    WINDVE_RECORDS = {"profile": [f"{RESULTS}/windve/profile.parquet"],
                      "serving": [f"{RESULTS}/windve/serving.parquet"]}


    rule windve_profile:
        output:
            WINDVE_RECORDS["profile"][0],
        params:
            p=as_json(WINDVE),
            run=RUN_ARGS,
        threads: workflow.cores  # timed: nothing runs beside it
        benchmark:
            f"{BENCHMARKS}/windve/profile.tsv"
        shell:
            "{BENCH} windve measure profile --out {output} {params.run} --params {params.p:q}"

    rule windve_serving:
        input:
            profile=WINDVE_RECORDS["profile"][0],
        output:
            WINDVE_RECORDS["serving"][0],
        params:
            p=as_json(WINDVE),
            run=RUN_ARGS,
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/windve/serving.tsv"
        shell:
            "{BENCH} windve measure serving --input profile={input.profile} --out {output} {params.run} "
            "--params {params.p:q}"

    # the figure and claims rules: generated for every study by workflows/outputs.smk
    study_outputs("windve", cli="windve", records=WINDVE_RECORDS, section=WINDVE,
                  category="WindVE", claim_kinds=claims_records("windve"))

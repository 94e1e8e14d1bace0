# WindVE: the embedding service with CPU offload of peak queries (accelerator emulated here).
# profile (Figure 4, Table III, Figures 5/6) -> serving (Tables I/II, overload, utilisation, overhead,
# open loop) -> figures -> claims. Each measurement rule starts `bench windve serve` on 127.0.0.1,
# waits for /health, measures over HTTP and stops it (also when the step fails).
WINDVE = config["windve"]

if WINDVE["enabled"]:
    WINDVE_FIGS = figure_registry("windve")
    WINDVE_RECORDS = {"profile": [f"{RESULTS}/windve/profile.parquet"],
                      "serving": [f"{RESULTS}/windve/serving.parquet"]}

    WINDVE_FIG_NAMES = figure_names(WINDVE_FIGS, WINDVE_RECORDS)

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

    rule windve_figures:
        priority: LAST  # draw after the measurements, two figure/claims jobs at a time
        input:
            **figure_inputs(WINDVE_FIGS, WINDVE_RECORDS, WINDVE_FIG_NAMES),
        output:
            **figure_outputs("windve", WINDVE_FIG_NAMES, "WindVE"),
        params:
            records=lambda wc, input: records_arg(input),
            names=" ".join(WINDVE_FIG_NAMES),
            formats=FIGURE_FORMATS,
            out=f"{FIGURES}/windve",
        benchmark:
            f"{BENCHMARKS}/windve/figures.tsv"
        shell:
            "{BENCH} windve figure {params.names} {params.records} --out-dir {params.out} --formats {params.formats}"

    rule windve_claims:
        priority: LAST
        input:
            unpack(lambda wc: pick(WINDVE_RECORDS, claims_records("windve"))),
        output:
            f"{RESULTS}/windve/claims.parquet",
            f"{RESULTS}/windve/claims.md",
        params:
            records=lambda wc, input: records_arg(input),
            p=as_json(WINDVE),
        benchmark:
            f"{BENCHMARKS}/windve/claims.tsv"
        shell:
            "{BENCH} windve claims {params.records} --profile {PROFILE} --params {params.p:q} --out {output[0]}"

    CLAIMS["windve"] = rules.windve_claims.output[0]
    TARGETS["windve"] = [
        *expand(f"{FIGURES}/windve/{{name}}.png", name=WINDVE_FIG_NAMES),
        *WINDVE_RECORDS["profile"],
        *WINDVE_RECORDS["serving"],
        *rules.windve_claims.output,
    ]

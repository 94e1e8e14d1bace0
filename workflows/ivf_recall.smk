# IVF-PQ recall@k and queries/s against nprobe: data -> build (index) -> measure -> figure -> claims.
# The worked example of docs/adding-a-study.md.
IVF = config["ivf_recall"]


def ivf_index_params(dataset):
    return {**IVF["index"], **IVF["index_overrides"].get(dataset, {})}


if IVF["enabled"]:
    require_datasets("ivf_recall", IVF["datasets"])
    IVF_FIGS = figure_registry("ivf_recall")
    # record kind -> record sets: what the figure and claims rules read
    IVF_RECORDS = {"recall": expand(f"{RESULTS}/ivf_recall/recall_{{dataset}}.parquet", dataset=IVF["datasets"])}

    IVF_FIG_NAMES = figure_names(IVF_FIGS, IVF_RECORDS)

    rule ivf_recall_build:
        input:
            manifest=dataset_manifest("{dataset}"),
        output:
            f"{DATA}/{PROFILE}/indexes/ivf_recall/{{dataset}}.faiss",
        params:
            p=lambda wc: as_json({**IVF, "index": ivf_index_params(wc.dataset)}),
            run=RUN_ARGS,
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/ivf_recall/index_{{dataset}}.tsv"
        shell:
            "{BENCH} ivf-recall build --input manifest={input.manifest} --dataset {wildcards.dataset} "
            "--out {output} {params.run} --params {params.p:q}"

    rule ivf_recall_measure:
        input:
            manifest=dataset_manifest("{dataset}"),
            index=rules.ivf_recall_build.output[0],
        output:
            f"{RESULTS}/ivf_recall/recall_{{dataset}}.parquet",
        params:
            p=lambda wc: as_json({**IVF, "index": ivf_index_params(wc.dataset)}),
            run=RUN_ARGS,  # a params entry, so a changed thread count or seed reruns the measurement
        threads: workflow.cores  # measured: nothing else runs beside it
        benchmark:
            f"{BENCHMARKS}/ivf_recall/measure_{{dataset}}.tsv"
        shell:
            "{BENCH} ivf-recall measure recall --input manifest={input.manifest} --input index={input.index} "
            "--dataset {wildcards.dataset} --out {output} {params.run} --params {params.p:q}"

    rule ivf_recall_figures:
        priority: LAST  # draw after the measurements, two figure/claims jobs at a time
        input:
            **figure_inputs(IVF_FIGS, IVF_RECORDS, IVF_FIG_NAMES),
        output:
            **figure_outputs("ivf_recall", IVF_FIG_NAMES, "IVF-PQ recall"),
        params:
            records=lambda wc, input: records_arg(input),
            names=" ".join(IVF_FIG_NAMES),
            formats=FIGURE_FORMATS,
            out=f"{FIGURES}/ivf_recall",
        benchmark:
            f"{BENCHMARKS}/ivf_recall/figures.tsv"
        shell:
            "{BENCH} ivf-recall figure {params.names} {params.records} --out-dir {params.out} --formats {params.formats}"

    rule ivf_recall_claims:
        priority: LAST
        input:
            unpack(lambda wc: pick(IVF_RECORDS, claims_records("ivf_recall"))),
        output:
            f"{RESULTS}/ivf_recall/claims.parquet",
            f"{RESULTS}/ivf_recall/claims.md",
        params:
            records=lambda wc, input: records_arg(input),
            p=as_json(IVF),
        benchmark:
            f"{BENCHMARKS}/ivf_recall/claims.tsv"
        shell:
            "{BENCH} ivf-recall claims {params.records} --profile {PROFILE} --params {params.p:q} --out {output[0]}"

    CLAIMS["ivf_recall"] = rules.ivf_recall_claims.output[0]
    TARGETS["ivf_recall"] = [
        *expand(f"{FIGURES}/ivf_recall/{{name}}.png", name=IVF_FIG_NAMES),
        *IVF_RECORDS["recall"],
        *rules.ivf_recall_claims.output,
    ]

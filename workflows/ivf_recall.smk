# IVF-PQ recall@k and queries/s against nprobe: data -> build (index) -> measure -> figure -> claims.
# The worked example of docs/adding-a-study.md.
IVF = config["ivf_recall"]


def ivf_index_params(dataset):
    return {**IVF["index"], **IVF["index_overrides"].get(dataset, {})}


if IVF["enabled"]:
    require_datasets("ivf_recall", IVF["datasets"])
    # record kind -> record sets: what the figure and claims rules read
    IVF_RECORDS = {"recall": expand(f"{RESULTS}/ivf_recall/recall_{{dataset}}.parquet", dataset=IVF["datasets"])}


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

    # the figure and claims rules: generated for every study by workflows/outputs.smk
    study_outputs("ivf_recall", cli="ivf-recall", records=IVF_RECORDS, section=IVF,
                  category="IVF-PQ recall", claim_kinds=claims_records("ivf_recall"))

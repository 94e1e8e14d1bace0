# IVF-PQ recall@k and queries/s against nprobe: data -> index -> measure -> figure -> report.
IVF = config["ivf_recall"]


def ivf_index_params(dataset):
    return {**IVF["index"], **IVF["index_overrides"].get(dataset, {})}


if IVF["enabled"]:
    require_datasets("ivf_recall", IVF["datasets"])

    rule ivf_recall_index:
        input:
            manifest=dataset_manifest("{dataset}"),
        output:
            f"{DATA}/{PROFILE}/indexes/ivf_recall/{{dataset}}.faiss",
        params:
            index=lambda wc: as_json(ivf_index_params(wc.dataset)),
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/ivf_recall/index_{{dataset}}.tsv"
        shell:
            "{BENCH} ivf-recall build-index --manifest {input.manifest} --index {params.index:q} "
            "--out {output} --seed {SEED} --threads {THREADS}"

    rule ivf_recall_measure:
        input:
            manifest=dataset_manifest("{dataset}"),
            index=rules.ivf_recall_index.output[0],
        output:
            f"{RESULTS}/ivf_recall/recall_{{dataset}}.parquet",
        params:
            p=lambda wc: as_json({**IVF, "dataset": wc.dataset, "index": ivf_index_params(wc.dataset)}),
            run=RUN_ARGS,  # a params entry, so a changed thread count or seed reruns the measurement
        threads: workflow.cores  # measured: nothing else runs beside it
        benchmark:
            f"{BENCHMARKS}/ivf_recall/measure_{{dataset}}.tsv"
        shell:
            "{BENCH} ivf-recall measure --manifest {input.manifest} --index {input.index} "
            "--out {output} {params.run} --params {params.p:q}"

    rule ivf_recall_figure:
        input:
            expand(f"{RESULTS}/ivf_recall/recall_{{dataset}}.parquet", dataset=IVF["datasets"]),
        output:
            report(f"{FIGURES}/ivf_recall/recall_vs_nprobe.png",
                   caption="report/ivf_recall/recall_vs_nprobe.rst", category="IVF-PQ recall"),
            f"{FIGURES}/ivf_recall/recall_vs_nprobe.pdf",
        benchmark:
            f"{BENCHMARKS}/ivf_recall/figure.tsv"
        shell:
            "{BENCH} ivf-recall figure --records {input} --out {output[0]}"

    TARGETS["ivf_recall"] = [
        *rules.ivf_recall_figure.output,
        *expand(f"{RESULTS}/ivf_recall/recall_{{dataset}}.parquet", dataset=IVF["datasets"]),
    ]

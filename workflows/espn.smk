# ESPN: multi-vector re-ranking embeddings on SSD with an ANN-driven prefetcher (every table/figure).
# build -> quality (Fig 5, 6) | hitrate (Fig 7) | e2e (Tables 4/5, Fig 1) | batch (Fig 8-10, eq. 4) | iops (vs fio)
#       -> summary (targets) ; each figure rule reads records only.
ESPN = config["espn"]

if ESPN["enabled"]:
    require_datasets("espn", [ESPN["dataset"]])
    ESPN_BUILD = f"{DATA}/{PROFILE}/indexes/espn/{ESPN['dataset']}"
    ESPN_RES = f"{RESULTS}/espn"
    ESPN_FIG = f"{FIGURES}/espn"
    ESPN_P = as_json(ESPN)

    rule espn_build:
        input:
            manifest=dataset_manifest(ESPN["dataset"]),
        output:
            meta=f"{ESPN_BUILD}/meta.json",
            table=f"{ESPN_BUILD}/table.espn",
            offsets=f"{ESPN_BUILD}/table.espn.offsets.npz",
            index=f"{ESPN_BUILD}/ann.faiss",
            queries=f"{ESPN_BUILD}/queries.npz",
        params:
            p=ESPN_P,
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/espn/build.tsv"
        shell:
            "{BENCH} espn build --manifest {input.manifest} --out-dir {ESPN_BUILD} {RUN_ARGS} --params {params.p:q}"

    def _espn_measure(step, extra=""):
        return (f"{{BENCH}} espn {step} --build {ESPN_BUILD} {extra} --out {{output}} {{RUN_ARGS}} "
                f"--params {{params.p:q}}")

    rule espn_quality:
        input:
            rules.espn_build.output.meta,
            manifest=dataset_manifest(ESPN["dataset"]),
        output:
            f"{ESPN_RES}/quality.parquet",
        params:
            p=ESPN_P,
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/espn/quality.tsv"
        shell:
            _espn_measure("quality", "--manifest {input.manifest}")

    rule espn_hitrate:
        input:
            rules.espn_build.output.meta,
        output:
            f"{ESPN_RES}/hitrate.parquet",
        params:
            p=ESPN_P,
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/espn/hitrate.tsv"
        shell:
            _espn_measure("hitrate")

    rule espn_e2e:
        input:
            rules.espn_build.output.meta,
        output:
            f"{ESPN_RES}/e2e.parquet",
        params:
            p=ESPN_P,
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/espn/e2e.tsv"
        shell:
            _espn_measure("e2e")

    rule espn_batch:
        input:
            rules.espn_build.output.meta,
        output:
            f"{ESPN_RES}/batch.parquet",
        params:
            p=ESPN_P,
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/espn/batch.tsv"
        shell:
            _espn_measure("batch")

    rule espn_iops:
        input:
            rules.espn_build.output.meta,
        output:
            f"{ESPN_RES}/iops.parquet",
        params:
            p=ESPN_P,
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/espn/iops.tsv"
        shell:
            _espn_measure("iops")

    rule espn_summary:
        input:
            e2e=rules.espn_e2e.output[0],
            hit=rules.espn_hitrate.output[0],
            iops=rules.espn_iops.output[0],
            batch=rules.espn_batch.output[0],
        output:
            f"{ESPN_RES}/targets.parquet",
            f"{ESPN_RES}/targets.md",
        params:
            p=ESPN_P,
        benchmark:
            f"{BENCHMARKS}/espn/summary.tsv"
        shell:
            "{BENCH} espn summary --e2e {input.e2e} --hitrate {input.hit} --iops {input.iops} "
            "--batch {input.batch} --profile {PROFILE} --params {params.p:q} --out {output[0]}"

    ESPN_FIGS = {
        "fig1": ("fig1_latency_breakdown", [rules.espn_e2e.output[0]]),
        "fig5": ("fig5_recall_vs_nprobe", [rules.espn_quality.output[0]]),
        "fig6": ("fig6_mrr_vs_rerank", [rules.espn_quality.output[0]]),
        "fig7": ("fig7_hit_rate", [rules.espn_hitrate.output[0]]),
        "tables45": ("tables4_5_e2e_latency", [rules.espn_e2e.output[0]]),
        "fig8_9": ("fig8_9_access_latency", [rules.espn_batch.output[0]]),
        "fig10": ("fig10_batch_latency_throughput", [rules.espn_batch.output[0]]),
        "eq4": ("eq4_batch_threshold", [rules.espn_batch.output[0], rules.espn_iops.output[0]]),
        "iops": ("iops_reader_vs_fio", [rules.espn_iops.output[0]]),
    }

    rule espn_figure:
        input:
            lambda wc: ESPN_FIGS[wc.kind][1],
        output:
            png=report(f"{ESPN_FIG}/{{kind}}.png", caption="report/espn/figure.rst", category="ESPN"),
            pdf=f"{ESPN_FIG}/{{kind}}.pdf",
        wildcard_constraints:
            kind="|".join(ESPN_FIGS),
        benchmark:
            f"{BENCHMARKS}/espn/figure_{{kind}}.tsv"
        shell:
            "{BENCH} espn figure {wildcards.kind} --records {input} --out {output.png}"

    TARGETS["espn"] = [
        *expand(f"{ESPN_FIG}/{{kind}}.png", kind=list(ESPN_FIGS)),
        *rules.espn_summary.output,
    ]

# Trinity: graph (build) -> trace / recall / load per dataset; sched, roofline, placement on the first dataset;
# one generic figure rule over the registry; the claims rule. Follows workflows/ivf_recall.smk.
TRI = config["trinity"]

if TRI["enabled"]:
    require_datasets("trinity", TRI["datasets"])
    TRI_MAIN = TRI["datasets"][0]
    TRI_R = f"{RESULTS}/trinity"
    TRI_GRAPH = f"{DATA}/{PROFILE}/indexes/trinity/{{dataset}}.graph.ibin"
    TRI_RECORDS = {
        "recall": expand(f"{TRI_R}/recall_{{dataset}}.parquet", dataset=TRI["datasets"]),
        "load": expand(f"{TRI_R}/load_{{dataset}}.parquet", dataset=TRI["datasets"]),
        "sched": [f"{TRI_R}/sched_{TRI_MAIN}.parquet"],
        "roofline": [f"{TRI_R}/roofline.parquet"],
        "placement": [f"{TRI_R}/placement.parquet"],
    }


    rule trinity_build:
        input:
            manifest=dataset_manifest("{dataset}"),
        output:
            graph=TRI_GRAPH,
            side=TRI_GRAPH + ".json",
        params:
            p=as_json(TRI),
            run=RUN_ARGS,
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/trinity/build_{{dataset}}.tsv"
        shell:
            "{BENCH} trinity build --input manifest={input.manifest} --dataset {wildcards.dataset} "
            "--out {output.graph} {params.run} --params {params.p:q}"

    rule trinity_measure:
        input:
            manifest=dataset_manifest("{dataset}"),
            graph=TRI_GRAPH,
            side=TRI_GRAPH + ".json",
        output:
            f"{TRI_R}/{{step}}_{{dataset}}.parquet",
        params:
            p=as_json(TRI),
            run=RUN_ARGS,
        wildcard_constraints:
            step="recall|trace",
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/trinity/{{step}}_{{dataset}}.tsv"
        shell:
            "{BENCH} trinity measure {wildcards.step} --input manifest={input.manifest} --input graph={input.graph} "
            "--dataset {wildcards.dataset} --out {output} {params.run} --params {params.p:q}"

    rule trinity_serving:
        input:
            manifest=dataset_manifest("{dataset}"),
            graph=TRI_GRAPH,
            side=TRI_GRAPH + ".json",
            trace=f"{TRI_R}/trace_{{dataset}}.parquet",
        output:
            f"{TRI_R}/{{step}}_{{dataset}}.parquet",
        params:
            p=as_json(TRI),
            run=RUN_ARGS,
        wildcard_constraints:
            step="load|sched",
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/trinity/{{step}}_{{dataset}}.tsv"
        shell:
            "{BENCH} trinity measure {wildcards.step} --input manifest={input.manifest} --input graph={input.graph} "
            "--input trace={input.trace} --dataset {wildcards.dataset} --out {output} {params.run} --params {params.p:q}"

    rule trinity_roofline:
        input:
            manifest=dataset_manifest(TRI_MAIN),
            graph=TRI_GRAPH.format(dataset=TRI_MAIN),
        output:
            f"{TRI_R}/roofline.parquet",
        params:
            p=as_json(TRI),
            run=RUN_ARGS,
        threads: workflow.cores
        benchmark:
            f"{BENCHMARKS}/trinity/roofline.tsv"
        shell:
            "{BENCH} trinity measure roofline --input manifest={input.manifest} --input graph={input.graph} "
            f"--dataset {TRI_MAIN} --out {{output}} {{params.run}} --params {{params.p:q}}"

    rule trinity_placement:
        input:
            roofline=f"{TRI_R}/roofline.parquet",
            trace=f"{TRI_R}/trace_{TRI_MAIN}.parquet",
        output:
            f"{TRI_R}/placement.parquet",
        params:
            p=as_json(TRI),
            run=RUN_ARGS,
        benchmark:
            f"{BENCHMARKS}/trinity/placement.tsv"
        shell:
            "{BENCH} trinity measure placement --input roofline={input.roofline} --input trace={input.trace} "
            "--out {output} {params.run} --params {params.p:q}"

    # the figure and claims rules: generated for every study by workflows/outputs.smk
    study_outputs("trinity", cli="trinity", records=TRI_RECORDS, section=TRI,
                  category="Trinity", claim_kinds=claims_records("trinity"))

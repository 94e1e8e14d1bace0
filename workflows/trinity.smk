# Trinity: graph (build) -> trace / recall / load / sched per dataset; roofline and placement on the first
# dataset. The rule file names the study's datasets and which file feeds which need of each step of
# bench.trinity.STUDY; workflows/steps.smk and workflows/outputs.smk generate the rules.
TRI = config["trinity"]

if TRI["enabled"]:
    require_datasets("trinity", TRI["datasets"])
    TRI_MAIN = TRI["datasets"][0]
    TRI_R = f"{RESULTS}/trinity"
    TRI_GRAPH = f"{DATA}/{PROFILE}/indexes/trinity/{{dataset}}.graph.ibin"
    TRI_TRACE = f"{TRI_R}/trace_{{dataset}}.parquet"
    TRI_MAIN_IN = {"manifest": dataset_manifest(TRI_MAIN), "graph": TRI_GRAPH.format(dataset=TRI_MAIN)}
    TRI_IN = {"manifest": dataset_manifest("{dataset}"), "graph": TRI_GRAPH}
    study_jobs("trinity", {
        "graph": job({"graph": TRI_GRAPH, "side": TRI_GRAPH + ".json"}, {"manifest": dataset_manifest("{dataset}")},
                     params=TRI),
        "trace": job(TRI_TRACE, TRI_IN, params=TRI, after={"side": TRI_GRAPH + ".json"}),
        "recall": job(f"{TRI_R}/recall_{{dataset}}.parquet", TRI_IN, params=TRI, after={"side": TRI_GRAPH + ".json"}),
        "load": job(f"{TRI_R}/load_{{dataset}}.parquet", {**TRI_IN, "trace": TRI_TRACE}, params=TRI,
                    after={"side": TRI_GRAPH + ".json"}),
        "sched": job(f"{TRI_R}/sched_{{dataset}}.parquet", {**TRI_IN, "trace": TRI_TRACE}, params=TRI,
                     after={"side": TRI_GRAPH + ".json"}),
        "roofline": job(f"{TRI_R}/roofline.parquet", TRI_MAIN_IN, params=TRI, dataset=TRI_MAIN),
        "placement": job(f"{TRI_R}/placement.parquet",
                         {"roofline": f"{TRI_R}/roofline.parquet", "trace": TRI_TRACE.format(dataset=TRI_MAIN)},
                         params=TRI, threads=1),
    })
    TRI_RECORDS = {
        "recall": expand(f"{TRI_R}/recall_{{dataset}}.parquet", dataset=TRI["datasets"]),
        "load": expand(f"{TRI_R}/load_{{dataset}}.parquet", dataset=TRI["datasets"]),
        "sched": [f"{TRI_R}/sched_{TRI_MAIN}.parquet"],
        "roofline": [f"{TRI_R}/roofline.parquet"],
        "placement": [f"{TRI_R}/placement.parquet"],
    }
    study_outputs("trinity", cli="trinity", records=TRI_RECORDS, section=TRI,
                  category="Trinity", claim_kinds=claims_records("trinity"))

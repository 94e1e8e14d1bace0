# Chameleon: IVF-PQ search configurations (Figure 9, throughput, Table 5), the torch PQ scan target,
# the FPGA performance model, the approximate priority queue (Figures 7, 8), disaggregated memory
# nodes over TCP, RALM serving (Figures 10, 11, 12) and the claims rows.
# data -> build (index) -> measure STEP -> figure NAME (registry) -> claims; every value goes through params:.
CHAM = config["chameleon"]
CHAM_R = f"{RESULTS}/chameleon"
CHAM_F = f"{FIGURES}/chameleon"
CHAM_B = f"{BENCHMARKS}/chameleon"


def cham_index(name):
    return f"{DATA}/{PROFILE}/indexes/chameleon/{name}.faiss"


def cham_index_params(dataset):
    """What the index of one dataset depends on: a change elsewhere in the section does not rebuild it."""
    return as_json({"datasets": [dataset], "pq_m": {dataset: CHAM["pq_m"][dataset]},
                    **{k: CHAM[k] for k in ("nlist", "train_size", "nprobe", "k")}})


if CHAM["enabled"]:
    CHAM_DS = list(CHAM["datasets"])
    CHAM_RALM = CHAM["ralm"]["enabled"]
    CHAM_RALM_DS = dict(CHAM["ralm"]["datasets"]) if CHAM_RALM else {}
    _cham_needed = sorted(set(CHAM_DS) | {CHAM["queue"]["dataset"], CHAM["nodes"]["dataset"]}
                          | set(CHAM_RALM_DS.values()))
    require_datasets("chameleon", _cham_needed)
    _cham_no_m = [n for n in _cham_needed if n not in CHAM["pq_m"]]
    if _cham_no_m:
        raise ValueError(f"config: chameleon uses dataset(s) {_cham_no_m} without a PQ m in chameleon.pq_m "
                         f"(given: {sorted(CHAM['pq_m'])})")
    # record kind -> record sets: what the figure and claims rules read
    CHAM_RECORDS = {
        "search": expand(f"{CHAM_R}/search_{{d}}.parquet", d=CHAM_DS),
        "scan": expand(f"{CHAM_R}/scan_{{d}}.parquet", d=CHAM_DS),
        "model": [f"{CHAM_R}/model.parquet"],
        "queue": [f"{CHAM_R}/queue.parquet"],
        "nodes": [f"{CHAM_R}/nodes.parquet"],
        "energy": [f"{CHAM_R}/energy.parquet"],
    }
    if CHAM_RALM:
        CHAM_RECORDS["ralm"] = [f"{CHAM_R}/ralm.parquet"]
    # figures whose record kinds this profile produces (RALM figures need ralm.enabled)
    CHAM_CLAIM_KINDS = [*claims_records("chameleon"), *(["ralm"] if CHAM_RALM else [])]

    wildcard_constraints:
        cham_ds="[A-Za-z0-9_.-]+",

    rule chameleon_build:
        input:
            manifest=dataset_manifest("{cham_ds}"),
        output:
            cham_index("{cham_ds}"),
        params:
            p=lambda wc: cham_index_params(wc.cham_ds),
            run=RUN_ARGS,
        threads: workflow.cores
        benchmark:
            f"{CHAM_B}/index_{{cham_ds}}.tsv"
        shell:
            "{BENCH} chameleon build --input manifest={input.manifest} --dataset {wildcards.cham_ds} "
            "--out {output} {params.run} --params {params.p:q}"

    rule chameleon_measure_dataset:
        # search (Figure 9, throughput) and scan (the torch scan target), one dataset each
        input:
            manifest=dataset_manifest("{cham_ds}"),
            index=cham_index("{cham_ds}"),
        output:
            f"{CHAM_R}/{{cham_step}}_{{cham_ds}}.parquet",
        params:
            p=as_json(CHAM),
            run=RUN_ARGS,
        wildcard_constraints:
            cham_step="search|scan",
        threads: workflow.cores  # measured: nothing else runs beside it
        benchmark:
            f"{CHAM_B}/{{cham_step}}_{{cham_ds}}.tsv"
        shell:
            "{BENCH} chameleon measure {wildcards.cham_step} --input manifest={input.manifest} "
            "--input index={input.index} --dataset {wildcards.cham_ds} --out {output} {params.run} "
            "--params {params.p:q}"

    rule chameleon_model:
        input:
            index=[cham_index(d) for d in CHAM_DS],
        output:
            f"{CHAM_R}/model.parquet",
        params:
            p=as_json(CHAM),
            run=RUN_ARGS,
            idx=lambda wc, input: " ".join(f"--input index={i}" for i in input.index),
        benchmark:
            f"{CHAM_B}/model.tsv"
        shell:
            "{BENCH} chameleon measure model {params.idx} --out {output} {params.run} --params {params.p:q}"

    rule chameleon_queue:
        # Figures 7, 8: analytic model and the queue simulated on the real PQ distances of queue.dataset
        input:
            manifest=dataset_manifest(CHAM["queue"]["dataset"]),
            index=cham_index(CHAM["queue"]["dataset"]),
        output:
            f"{CHAM_R}/queue.parquet",
        params:
            p=as_json(CHAM),
            run=RUN_ARGS,
            ds=CHAM["queue"]["dataset"],
        benchmark:
            f"{CHAM_B}/queue.tsv"
        shell:
            "{BENCH} chameleon measure queue --input manifest={input.manifest} --input index={input.index} "
            "--dataset {params.ds} --out {output} {params.run} --params {params.p:q}"

    rule chameleon_nodes:
        # disaggregated memory nodes over TCP of nodes.dataset (timed, plus the fault-handling check rows)
        input:
            manifest=dataset_manifest(CHAM["nodes"]["dataset"]),
            index=cham_index(CHAM["nodes"]["dataset"]),
        output:
            f"{CHAM_R}/nodes.parquet",
        params:
            p=as_json(CHAM),
            run=RUN_ARGS,
            ds=CHAM["nodes"]["dataset"],
        threads: workflow.cores  # measured: nothing else runs beside it
        benchmark:
            f"{CHAM_B}/nodes.tsv"
        shell:
            "{BENCH} chameleon measure nodes --input manifest={input.manifest} --input index={input.index} "
            "--dataset {params.ds} --out {output} {params.run} --params {params.p:q}"

    rule chameleon_energy:
        input:
            search=CHAM_RECORDS["search"],
        output:
            f"{CHAM_R}/energy.parquet",
        params:
            p=as_json(CHAM),
            run=RUN_ARGS,
            search=lambda wc, input: " ".join(f"--input search={s}" for s in input.search),
        benchmark:
            f"{CHAM_B}/energy.tsv"
        shell:
            "{BENCH} chameleon measure energy {params.search} --out {output} {params.run} --params {params.p:q}"

    if CHAM_RALM:
        rule chameleon_ralm:
            input:
                **{f"manifest_{s}": dataset_manifest(d) for s, d in CHAM_RALM_DS.items()},
                **{f"index_{s}": cham_index(d) for s, d in CHAM_RALM_DS.items()},
            output:
                f"{CHAM_R}/ralm.parquet",
            params:
                p=as_json(CHAM),
                run=RUN_ARGS,
                inputs=lambda wc, input: " ".join(f"--input {k}={v}" for k, v in input.items()),
            threads: workflow.cores
            benchmark:
                f"{CHAM_B}/ralm.tsv"
            shell:
                "{BENCH} chameleon measure ralm {params.inputs} --out {output} {params.run} --params {params.p:q}"

    # the figure and claims rules: generated for every study by workflows/outputs.smk
    study_outputs("chameleon", cli="chameleon", records=CHAM_RECORDS, section=CHAM,
                  category="Chameleon", claim_kinds=CHAM_CLAIM_KINDS)

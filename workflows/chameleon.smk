# Chameleon: IVF-PQ search configurations (Figure 9, throughput, Table 5), the torch PQ scan target,
# the FPGA performance model, the approximate priority queue (Figures 7, 8), disaggregated memory
# nodes over TCP, RALM serving (Figures 10, 11, 12) and the targets summary.
CHAM = config["chameleon"]
CHAM_R = f"{RESULTS}/chameleon"
CHAM_F = f"{FIGURES}/chameleon"
CHAM_B = f"{BENCHMARKS}/chameleon"
CHAM_P = as_json(CHAM)


def cham_index(name):
    return f"{DATA}/{PROFILE}/indexes/chameleon/{name}.faiss"


if CHAM["enabled"]:
    CHAM_DS = list(CHAM["datasets"])
    _cham_needed = set(CHAM_DS) | {CHAM["queue"]["dataset"], CHAM["nodes"]["dataset"]}
    if CHAM["ralm"]["enabled"]:
        _cham_needed |= set(CHAM["ralm"]["datasets"].values())
    require_datasets("chameleon", sorted(_cham_needed))
    for _n in sorted(_cham_needed):
        if _n not in CHAM["datasets"]:
            raise ValueError(f"config: chameleon uses dataset {_n!r} that chameleon.datasets does not list (it needs m)")

    wildcard_constraints:
        cham_ds="[A-Za-z0-9_.-]+",

    rule chameleon_index:
        input:
            manifest=dataset_manifest("{cham_ds}"),
        output:
            f"{DATA}/{PROFILE}/indexes/chameleon/{{cham_ds}}.faiss",
        threads: workflow.cores
        benchmark:
            f"{CHAM_B}/index_{{cham_ds}}.tsv"
        shell:
            "{BENCH} chameleon index --manifest {input.manifest} --dataset {wildcards.cham_ds} --out {output} "
            "--seed {SEED} --threads {THREADS} --params {CHAM_P:q}"

    rule chameleon_search:
        input:
            manifest=dataset_manifest("{cham_ds}"),
            index=cham_index("{cham_ds}"),
        output:
            f"{CHAM_R}/search_{{cham_ds}}.parquet",
        threads: workflow.cores  # measured: nothing else runs beside it
        benchmark:
            f"{CHAM_B}/search_{{cham_ds}}.tsv"
        shell:
            "{BENCH} chameleon search --manifest {input.manifest} --index {input.index} --dataset {wildcards.cham_ds} "
            "--out {output} {RUN_ARGS} --params {CHAM_P:q}"

    rule chameleon_scan:
        input:
            manifest=dataset_manifest("{cham_ds}"),
            index=cham_index("{cham_ds}"),
        output:
            f"{CHAM_R}/scan_{{cham_ds}}.parquet",
        threads: workflow.cores
        benchmark:
            f"{CHAM_B}/scan_{{cham_ds}}.tsv"
        shell:
            "{BENCH} chameleon scan --manifest {input.manifest} --index {input.index} --dataset {wildcards.cham_ds} "
            "--out {output} {RUN_ARGS} --params {CHAM_P:q}"

    rule chameleon_model:
        input:
            [cham_index(d) for d in CHAM_DS],
        output:
            f"{CHAM_R}/model.parquet",
        params:
            idx=" ".join(f"{d}={cham_index(d)}" for d in CHAM_DS),
        benchmark:
            f"{CHAM_B}/model.tsv"
        shell:
            "{BENCH} chameleon model --out {output} --index {params.idx} {RUN_ARGS} --params {CHAM_P:q}"

    rule chameleon_queue:
        input:
            manifest=dataset_manifest(CHAM["queue"]["dataset"]),
            index=cham_index(CHAM["queue"]["dataset"]),
        output:
            f"{CHAM_R}/queue.parquet",
        benchmark:
            f"{CHAM_B}/queue.tsv"
        shell:
            "{BENCH} chameleon queue --manifest {input.manifest} --index {input.index} --out {output} "
            "{RUN_ARGS} --params {CHAM_P:q}"

    rule chameleon_nodes:
        input:
            manifest=dataset_manifest(CHAM["nodes"]["dataset"]),
            index=cham_index(CHAM["nodes"]["dataset"]),
        output:
            f"{CHAM_R}/nodes.parquet",
        params:
            ds=CHAM["nodes"]["dataset"],
        threads: workflow.cores
        benchmark:
            f"{CHAM_B}/nodes.tsv"
        shell:
            "{BENCH} chameleon nodes --manifest {input.manifest} --index {input.index} --dataset {params.ds} "
            "--out {output} {RUN_ARGS} --params {CHAM_P:q}"

    rule chameleon_energy:
        input:
            expand(f"{CHAM_R}/search_{{d}}.parquet", d=CHAM_DS),
        output:
            f"{CHAM_R}/energy.parquet",
        benchmark:
            f"{CHAM_B}/energy.tsv"
        shell:
            "{BENCH} chameleon energy --search {input} --out {output} {RUN_ARGS} --params {CHAM_P:q}"

    CHAM_SEARCH = expand(f"{CHAM_R}/search_{{d}}.parquet", d=CHAM_DS)
    CHAM_SCAN = expand(f"{CHAM_R}/scan_{{d}}.parquet", d=CHAM_DS)
    CHAM_FIGS = {
        "fig7": [f"{CHAM_R}/queue.parquet"],
        "fig8": [f"{CHAM_R}/queue.parquet"],
        "fig9": CHAM_SEARCH,
        "throughput": CHAM_SEARCH,
        "table5": [f"{CHAM_R}/energy.parquet"],
        "model": [f"{CHAM_R}/model.parquet"],
        "scan": CHAM_SCAN,
        "nodes": [f"{CHAM_R}/nodes.parquet"],
    }
    if CHAM["ralm"]["enabled"]:
        rule chameleon_ralm:
            input:
                manifests=[dataset_manifest(d) for d in sorted(set(CHAM["ralm"]["datasets"].values()))],
                indexes=[cham_index(d) for d in sorted(set(CHAM["ralm"]["datasets"].values()))],
            output:
                f"{CHAM_R}/ralm.parquet",
            params:
                m=" ".join(f"{d}={dataset_manifest(d)}" for d in sorted(set(CHAM["ralm"]["datasets"].values()))),
                i=" ".join(f"{d}={cham_index(d)}" for d in sorted(set(CHAM["ralm"]["datasets"].values()))),
            threads: workflow.cores
            benchmark:
                f"{CHAM_B}/ralm.tsv"
            shell:
                "{BENCH} chameleon ralm --manifest {params.m} --index {params.i} --out {output} "
                "{RUN_ARGS} --params {CHAM_P:q}"

        CHAM_FIGS["fig10"] = [f"{CHAM_R}/ralm.parquet"]
        CHAM_FIGS["fig11"] = [f"{CHAM_R}/ralm.parquet"]
        CHAM_FIGS["fig12"] = [f"{CHAM_R}/ralm.parquet"]

    rule chameleon_figure:
        input:
            records=lambda wc: CHAM_FIGS[wc.fig],
            extra=lambda wc: CHAM_SEARCH if wc.fig == "fig12" else [],
        output:
            report(f"{CHAM_F}/{{fig}}.png", caption="report/chameleon/figure.rst", category="Chameleon"),
            f"{CHAM_F}/{{fig}}.pdf",
        params:
            extra=lambda wc, input: f"--extra {' '.join(input.extra)}" if input.extra else "",
        wildcard_constraints:
            fig="|".join(CHAM_FIGS),
        benchmark:
            f"{CHAM_B}/figure_{{fig}}.tsv"
        shell:
            "{BENCH} chameleon figure {wildcards.fig} --records {input.records} {params.extra} --out {output[0]}"

    rule chameleon_targets:
        input:
            scan=CHAM_SCAN,
            model=f"{CHAM_R}/model.parquet",
            queue=f"{CHAM_R}/queue.parquet",
            nodes=f"{CHAM_R}/nodes.parquet",
        output:
            report(f"{CHAM_R}/targets.csv", caption="report/chameleon/targets.rst", category="Chameleon"),
            f"{CHAM_R}/targets.md",
        benchmark:
            f"{CHAM_B}/targets.tsv"
        shell:
            "{BENCH} chameleon targets --scan {input.scan} --model {input.model} --queue {input.queue} "
            "--nodes {input.nodes} --out {output[0]}"

    TARGETS["chameleon"] = [
        *expand(f"{CHAM_F}/{{fig}}.png", fig=list(CHAM_FIGS)),
        *expand(f"{CHAM_F}/{{fig}}.pdf", fig=list(CHAM_FIGS)),
        f"{CHAM_R}/targets.csv",
    ]

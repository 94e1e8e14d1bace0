# The figure and claims rules of every study, generated from what each study's rule file declared with
# study_outputs() (its record sets, config section and report category): one figure job per study draws
# every registered figure whose records some rule produces; one claims job writes the study's ledger rows.
# Both run after the measurements (priority LAST), two figure/claims jobs at a time.
for _study, _o in STUDY_OUTPUTS.items():
    _figs = figure_registry(_study)
    _names = figure_names(_figs, _o["records"])

    rule:
        name:
            f"{_study}_figures"
        priority: LAST
        input:
            **figure_inputs(_figs, _o["records"], _names),
        output:
            **figure_outputs(_study, _names, _o["category"]),
        params:
            records=lambda wc, input: records_arg(input),
            names=" ".join(_names),
            formats=FIGURE_FORMATS,
            out=f"{FIGURES}/{_study}",
            cli=_o["cli"],
            code=code_hash(_study, "figures"),   # an edit to the figures' code reruns them
        benchmark:
            f"{BENCHMARKS}/{_study}/figures.tsv"
        shell:
            "{BENCH} {params.cli} figure {params.names} {params.records} --out-dir {params.out} --formats {params.formats}"

    rule:
        name:
            f"{_study}_claims"
        priority: LAST
        input:
            **pick(_o["records"], _o["claim_kinds"]),
        output:
            f"{RESULTS}/{_study}/claims.parquet",
            f"{RESULTS}/{_study}/claims.md",
        params:
            records=lambda wc, input: records_arg(input),
            p=as_json(_o["section"]),
            cli=_o["cli"],
            code=code_hash(_study, "claims"),   # an edit to the claims' code reruns them
        benchmark:
            f"{BENCHMARKS}/{_study}/claims.tsv"
        shell:
            "{BENCH} {params.cli} claims {params.records} --profile {PROFILE} --params {params.p:q} --out {output[0]}"

    CLAIMS[_study] = f"{RESULTS}/{_study}/claims.parquet"
    TARGETS[_study] = [
        *expand(f"{FIGURES}/{_study}/{{name}}.png", name=_names),
        *[p for paths in _o["records"].values() for p in paths],
        f"{RESULTS}/{_study}/claims.parquet",
        f"{RESULTS}/{_study}/claims.md",
    ]

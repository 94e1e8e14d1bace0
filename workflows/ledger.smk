# The claims ledger: every study's claims.parquet joined into results/<profile>/claims.md and a figure,
# shown first in the report.
if CLAIMS:

    rule claims_ledger:
        priority: LAST
        input:
            [CLAIMS[s] for s in sorted(CLAIMS)],
        output:
            md=f"{RESULTS}/claims.md",
            parquet=f"{RESULTS}/claims.parquet",
            html=report(f"{RESULTS}/claims.html", caption="report/claims.rst", category="0 Claims ledger"),
            png=report(f"{FIGURES}/claims.png", caption="report/claims.rst", category="0 Claims ledger"),
        benchmark:
            f"{BENCHMARKS}/claims_ledger.tsv"
        shell:
            "{BENCH} ledger --claims {input} --profile {PROFILE} --out {output.md} --figure {output.png}"

    TARGETS["_ledger"] = [*rules.claims_ledger.output]

    rule report_page:
        # The page a reader opens first (reports/<profile>/index.html): the ledger, counts first, then every
        # study's figures in the paper's order with their captions and tables. Figures and ledger only.
        priority: LAST
        input:
            ledger=rules.claims_ledger.output.parquet,
            figures=[t for study in sorted(TARGETS) if study != "_ledger" for t in TARGETS[study]],
        output:
            f"reports/{PROFILE}/index.html",
        benchmark:
            f"{BENCHMARKS}/report_page.tsv"
        shell:
            "{BENCH} report --claims {input.ledger} --figures {FIGURES} --profile {PROFILE} --out {output}"

    TARGETS["_report"] = [*rules.report_page.output]

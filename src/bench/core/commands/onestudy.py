"""``bench study NAME``: build one study and see its rows in the joined claims ledger and on the report,
without running every study (``make study STUDY=NAME``).

It runs that study's rules only (Snakemake's targets ``<study>_figures`` and ``<study>_claims``: the data its
steps read, its builds, measurements, figures and claims, nothing of another study), then joins the claims
of every study that has them under ``results/<profile>/`` (this one fresh, each other one as its last run left
it) into ``results/<profile>/partial/claims.{md,html,parquet,png}``, and draws the report over every figure
that exists into ``reports/<profile>/partial/index.html``. The pipeline's own ledger
(``results/<profile>/claims.md``) and its history are left alone: a partial ledger is not a run.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from ..base.errors import ConfigError

PARTIAL = "partial"   # the folder of the ledger and report joined over what exists


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("study", help="run one study's rules, then show its rows in the ledger and report joined "
                       "over every study's claims that exist")
    p.add_argument("name", help="the study (its folder name, e.g. ivf_recall, or its command, ivf-recall)")
    p.add_argument("--configfile", default="experiments/tiny.yaml", help="the profile (default the tiny one)")
    p.add_argument("--cores", default="all", help="cores for snakemake (default all)")
    p.add_argument("--no-run", action="store_true", help="run nothing: join and show what exists")
    p.add_argument("--forcerun", nargs="+", metavar="STEP", default=[],
                   help="run these steps of the study again (their code changed; snakemake reruns a changed key)")
    p.set_defaults(func=run)


def _checked(a: argparse.Namespace) -> tuple[str, dict]:
    """The study's name and the validated profile, before any work: the study exists, the profile is
    valid and enables it, and this is the repository's root (where the Snakefile is)."""
    import yaml

    from ..declaring import config
    from ..declaring.discover import study_names

    name = a.name.replace("-", "_")
    if name not in study_names():
        raise ConfigError(f"study {a.name}: no such study; known: {', '.join(study_names())}")
    path = Path(a.configfile)
    if not path.is_file():
        raise ConfigError(f"study: --configfile {path}: no such file")
    if not a.no_run and not Path("Snakefile").is_file():
        raise ConfigError("study: run it from the repository's root (no Snakefile here)")
    prof = config.validate_profile(yaml.safe_load(path.read_text()) or {})
    if not prof[name]["enabled"]:
        raise ConfigError(f"study {name}: not enabled in {path}; add the line `{name}: {{enabled: true}}` there")
    if a.forcerun:
        from ..declaring.study import by_name

        steps = list(by_name()[name].steps)
        if unknown := [s for s in a.forcerun if s not in steps]:
            raise ConfigError(f"study {name} --forcerun: no step(s) {unknown}; its steps: {', '.join(steps)}")
    return name, prof


def _snakemake(name: str, a: argparse.Namespace) -> None:
    force = ["--forcerun", *(f"{name}_{s}" for s in a.forcerun)] if a.forcerun else []
    cmd = [sys.executable, "-m", "snakemake", f"{name}_figures", f"{name}_claims", "--cores", str(a.cores),
           "--configfile", a.configfile, *force]   # the targets first: --configfile takes every word after it
    print("bench study: " + " ".join(cmd[1:]), flush=True)
    rc = subprocess.run(cmd).returncode
    if rc:
        print(f"bench: study {name}: snakemake stopped with exit code {rc} (its output is above)", file=sys.stderr)
        raise SystemExit(rc)


def join(name: str, prof: dict) -> tuple[Path, Path, list]:
    """The ledger over every study's claims that exist, and the report over every figure that exists: their
    paths, and the rows of ``name``."""
    from ..declaring.discover import study_names
    from ..presenting import ledger_page, report

    results = Path(prof["results_dir"]) / prof["profile"]
    claims = [results / s / "claims.parquet" for s in study_names() if (results / s / "claims.parquet").is_file()]
    if results / name / "claims.parquet" not in claims:
        raise ConfigError(f"study {name}: no {results / name / 'claims.parquet'} yet (run it without --no-run)")
    md = results / PARTIAL / "claims.md"
    df = ledger_page.write(claims, md, md.with_suffix(".png"), prof["profile"], history=False,
                           history_dir=results / "history")   # the pipeline's runs, read, never appended to
    page = Path("reports") / prof["profile"] / PARTIAL / "index.html"
    report.build(md.with_suffix(".parquet"), Path(prof["figures_dir"]) / prof["profile"], page, prof["profile"])
    return md, page, [r for r in df.itertuples(index=False) if r.study == name]


def run(a: argparse.Namespace) -> None:
    name, prof = _checked(a)
    if not a.no_run:
        _snakemake(name, a)
    md, page, rows = join(name, prof)
    from ..judging.claims import ours_text

    print(f"{name}: {len(rows)} row(s) in the ledger joined over the claims that exist ({md}; report {page})")
    for r in rows:
        print(f"  {r.claim_id}: {r.verdict}; ours {ours_text(r._asdict())}")

"""The ``bench`` command: ``bench data ...`` and one subcommand group per study.

Each study's package declares ``STUDY`` (:class:`bench.core.declaring.study.Study`); the study's command is built
from it (:func:`bench.core.commands.studycli.register`), so adding a study needs no edit to this file.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from pathlib import Path

from . import __version__
from .core.base.errors import BenchError


def study_names() -> list[str]:
    """The studies (see :func:`bench.core.declaring.discover.study_names`), found without importing them."""
    from .core.declaring.discover import study_names as names

    return names()


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; when ``argv`` names one study, only that study's command is imported (each study's
    CLI imports its runner and figures, which is slow: a rule's job pays for one study only)."""
    p = argparse.ArgumentParser(prog="bench", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"bench {__version__}")
    p.add_argument("--debug", action="store_true", help="show a bug's traceback in full (or BENCH_DEBUG=1)")
    sub = p.add_subparsers(dest="command", required=True)
    from .data import cli as data_cli, doors as data_doors

    data_doors.register()
    data_cli.register(sub)
    led = sub.add_parser("ledger", help="join every study's claims into the claims ledger (Markdown, HTML, figure)")
    led.add_argument("--claims", nargs="+", required=True, help="each study's claims.parquet")
    led.add_argument("--profile", required=True)
    led.add_argument("--out", required=True, help="claims.md (claims.parquet and claims.html beside it)")
    led.add_argument("--figure", required=True, help="PNG of verdicts per study")
    led.set_defaults(func=_ledger)
    rep = sub.add_parser("report", help="the page to open first: the ledger, then every study's figures with captions")
    rep.add_argument("--claims", required=True, help="the ledger's claims.parquet (results/<profile>/)")
    rep.add_argument("--figures", required=True, help="the figures folder of the profile (figures/<profile>/)")
    rep.add_argument("--profile", required=True)
    rep.add_argument("--out", required=True, help="index.html")
    rep.set_defaults(func=_report)
    sch = sub.add_parser("schema", help="the JSON Schema of a profile section, generated from the study's typed "
                         "parameters (for docs and editors)")
    sch.add_argument("section", help="a study (ivf_recall, chameleon, ...), or `profile` for the top level")
    sch.set_defaults(func=_schema)
    from .core.commands import onestudy

    onestudy.register(sub)
    names = study_names()
    first = next((a for a in (argv or []) if not a.startswith("-")), None)
    if first in ("data", "ledger", "report", "schema", "study"):
        wanted = []
    elif first and first.replace("-", "_") in names:  # bench ivf-recall ...: the package is ivf_recall
        wanted = [first.replace("-", "_")]
    else:
        wanted = names
    for name in wanted:
        from .core.commands import studycli

        studycli.register(sub, importlib.import_module(f"bench.{name}").STUDY)
    return p


def _ledger(a: argparse.Namespace) -> None:
    from .core.commands import doors
    from .core.presenting import ledger_page

    doors.claims_files(a.claims)
    doors.out_path("ledger", a.out, ".md")
    doors.out_path("ledger", a.figure, ".png")
    ledger_page.write(a.claims, a.out, a.figure, a.profile)


def _schema(a: argparse.Namespace) -> None:
    import json

    from .core.declaring import config
    from .core.base.errors import ConfigError

    schema = config.top_schema() if a.section == "profile" else config.study_schema(a.section.replace("-", "_"))
    if schema is None:
        raise ConfigError(f"schema: no study section {a.section!r}; known: profile (the top level), "
                          f"{', '.join(config.section_names())}")
    print(json.dumps(schema, indent=1))


def _debug(argv: list[str]) -> tuple[bool, list[str]]:
    """``--debug`` (anywhere on the line) or ``BENCH_DEBUG=1``: show a bug's traceback in full."""
    on = "--debug" in argv or os.environ.get("BENCH_DEBUG", "") not in ("", "0")
    return on, [a for a in argv if a != "--debug"]


def _report(a: argparse.Namespace) -> None:

    from .core.base.errors import ConfigError
    from .core.commands import doors
    from .core.presenting import report

    doors.claims_files([a.claims])
    if not Path(a.figures).is_dir():
        raise ConfigError(f"report: --figures {a.figures}: no such folder")
    doors.out_path("report", a.out, ".html")
    report.build(a.claims, a.figures, a.out, a.profile)


def main(argv: list[str] | None = None) -> int:
    """Run one command. Bad input (a :class:`BenchError`, raised by the checks every command makes
    before work) prints ``bench: error: ...`` and exits 2; argparse's own errors exit 2 too. Anything
    else is a bug: one line naming it and where, exit 1, and the traceback with ``--debug``."""
    debug, argv = _debug(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv).parse_args(argv)
    try:
        args.func(args)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`bench data list | head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - a bug: say so briefly unless asked for the traceback
        if debug:
            raise
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        print(f"bench: internal error: {type(exc).__name__}: {exc}\n  at {tb.filename}:{tb.lineno}; "
              "this is a bug (rerun with --debug or BENCH_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The ``bench`` command: ``bench data ...`` and one subcommand group per study.

Each study's ``bench/<study>/cli.py`` exposes ``register(subparsers)``; it is discovered here, so
adding a study needs no edit to this file.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

from . import __version__
from .core.errors import BenchError


def study_names() -> list[str]:
    """Subpackages of ``bench`` with a ``cli.py`` (found without importing them)."""
    import bench

    return sorted(m.name for m in pkgutil.iter_modules(bench.__path__)
                  if m.ispkg and m.name not in ("core", "data", "ann")
                  and (Path(bench.__path__[0]) / m.name / "cli.py").exists())


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; when ``argv`` names one study, only that study's command is imported (each study's
    CLI imports its runner and figures, which is slow: a rule's job pays for one study only)."""
    p = argparse.ArgumentParser(prog="bench", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"bench {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    from .data import cli as data_cli

    data_cli.register(sub)
    led = sub.add_parser("ledger", help="join every study's claims into the claims ledger (Markdown, HTML, figure)")
    led.add_argument("--claims", nargs="+", required=True, help="each study's claims.parquet")
    led.add_argument("--profile", required=True)
    led.add_argument("--out", required=True, help="claims.md (claims.parquet and claims.html beside it)")
    led.add_argument("--figure", required=True, help="PNG of verdicts per study")
    led.set_defaults(func=_ledger)
    names = study_names()
    first = next((a for a in (argv or []) if not a.startswith("-")), None)
    if first in ("data", "ledger"):
        wanted = []
    elif first and first.replace("-", "_") in names:
        wanted = [first.replace("-", "_")]
    else:
        wanted = names
    for name in wanted:
        importlib.import_module(f"bench.{name}.cli").register(sub)
    return p


def _ledger(a: argparse.Namespace) -> None:
    from .core import claims

    claims.write_ledger(a.claims, a.out, a.figure, a.profile)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    try:
        args.func(args)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

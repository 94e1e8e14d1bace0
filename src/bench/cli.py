"""The ``bench`` command: ``bench data ...`` and one subcommand group per study.

Each study's ``bench/<study>/cli.py`` exposes ``register(subparsers)``; it is discovered here, so
adding a study needs no edit to this file.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import __version__
from .core.errors import BenchError


def _study_clis():
    import bench

    for mod in sorted(pkgutil.iter_modules(bench.__path__), key=lambda m: m.name):
        if mod.ispkg and mod.name not in ("core", "data"):
            try:
                yield importlib.import_module(f"bench.{mod.name}.cli")
            except ModuleNotFoundError as exc:
                if exc.name != f"bench.{mod.name}.cli":
                    raise


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"bench {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    from .data import cli as data_cli

    data_cli.register(sub)
    for study in _study_clis():
        study.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""``bench data ...``: list, fetch, verify and prepare datasets."""
from __future__ import annotations

import argparse
import json

from ..core.commands.cliutil import json_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="datasets: list, fetch, verify, prepare")
    s = p.add_subparsers(dest="step", required=True)

    ls = s.add_parser("list", help="registered dataset ids")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_list)

    for name, fn, hlp in (("fetch", _fetch, "download and verify a dataset's files (resumable)"),
                          ("verify", _verify, "check a dataset's files on disk")):
        q = s.add_parser(name, help=hlp)
        q.add_argument("id", help="a dataset id (see `bench data list`)")
        q.add_argument("--data-dir", default="data")
        if name == "fetch":
            q.add_argument("--mirror", default=None,
                           help="directory or base URL replacing every URL (<mirror>/<host>/<path>)")
            q.add_argument("--no-progress", action="store_true")
        q.set_defaults(func=fn)

    pr = s.add_parser("prepare", help="prepare a dataset declared in a profile")
    pr.add_argument("name")
    pr.add_argument("--spec", type=json_arg, required=True, help="the dataset's profile entry, as JSON")
    pr.add_argument("--profile", required=True)
    pr.add_argument("--data-dir", default="data")
    pr.add_argument("--seed", type=int, default=0)
    pr.set_defaults(func=_prepare)


def _list(a) -> None:
    from .registry import SOURCES

    if a.json:
        print(json.dumps({k: {"kind": s.kind, "description": s.description,
                              "files": [f.url for f in s.files]} for k, s in SOURCES.items()}, indent=2))
        return
    width = max(map(len, SOURCES))
    for k, s in sorted(SOURCES.items()):
        size = sum(f.size or 0 for f in s.files)
        where = "generated" if s.synthetic else (f"{size / 1e9:.2f} GB" if size else "size unknown")
        print(f"{k:<{width}}  {s.kind:<7}  {where:>12}  {s.description}")


def _fetch(a) -> None:
    from . import download

    folder = download.fetch(a.id, a.data_dir, mirror=a.mirror, progress=not a.no_progress)
    print(f"{a.id}: fetched and verified in {folder}")


def _verify(a) -> None:
    from . import download

    for info in download.verify(a.id, a.data_dir):
        print(f"ok  {info['path']}  {info['size']} B  ({info['verified_by']})")


def _prepare(a) -> None:
    from . import prepared

    path = prepared.prepare(a.name, a.spec, profile=a.profile, data_dir=a.data_dir, seed=a.seed)
    print(path)

"""Argument helpers shared by the studies' ``bench <study> ...`` subcommands."""
from __future__ import annotations

import argparse
import json



def json_arg(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None


def add_run_args(p: argparse.ArgumentParser, *, params: bool = True) -> None:
    """The arguments every measurement step takes: profile, seed, threads, and the study params."""
    p.add_argument("--profile", required=True, help="profile name (recorded in provenance)")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--threads", type=int, required=True, help="threads for measured code")
    if params:
        p.add_argument("--params", type=json_arg, required=True,
                       help="the study's validated config section, as JSON")

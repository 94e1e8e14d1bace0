"""Argument helpers of the studies' commands (kept for internal verbs; see :mod:`bench.core.commands.studycli`)."""
from .studycli import add_run_args, json_arg, pairs  # noqa: F401

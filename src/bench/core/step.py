"""The step skeleton every study's measurement steps run on.

A step is a function ``step(ctx: Context) -> Result``: it measures and returns tidy rows. The skeleton
(:func:`execute`) does the rest the same way for every study: explicit thread counts, a quiet-machine
check before and after (:mod:`bench.core.quiet`), provenance collected at the start (load, software,
hardware, config and its hash, seed), the ``machine_busy`` and ``source`` columns, and the atomic write
of the record set (:mod:`bench.core.records`).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from . import measure, provenance, quiet, records
from .errors import ConfigError


@dataclasses.dataclass
class Context:
    """What a step is given: the study's typed parameters (``params``, a frozen dataclass built from the
    validated profile section, which is kept as ``section`` for provenance) and the run settings."""

    study: str
    step: str
    params: Any
    profile: str
    seed: int
    threads: int
    out: Path
    inputs: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    dataset: str | None = None
    section: dict = dataclasses.field(default_factory=dict)

    def input(self, key: str) -> str:
        """The one path given for ``key`` (``--input key=path``)."""
        paths = self.inputs.get(key)
        if not paths:
            raise ConfigError(f"{self.study} {self.step}: needs --input {key}=PATH")
        if len(paths) > 1:
            raise ConfigError(f"{self.study} {self.step}: expected one --input {key}=PATH, got {len(paths)}")
        return paths[0]

    def optional(self, key: str) -> str | None:
        return self.input(key) if self.inputs.get(key) else None


@dataclasses.dataclass
class Result:
    """What a step returns: its rows and, in words, what was measured and how."""

    records: pd.DataFrame
    method: str
    summary: pd.DataFrame | None = None
    provenance: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    dataset_id: str | None = None
    dataset_checksum: str | None = None
    source: str = "measured"   # default for rows that carry no ``source`` column


def execute(ctx: Context, step: Callable[[Context], Result]) -> Path:
    """Run ``step`` under the common protocol and write its record set to ``ctx.out``."""
    thread_info = measure.set_threads(ctx.threads)
    before = quiet.sample()
    prov = provenance.collect(profile=ctx.profile, config=ctx.section or ctx.params, seed=ctx.seed)
    res = step(ctx)
    after = quiet.sample()
    busy = quiet.is_busy(before, after)
    df = res.records.copy()
    if "source" not in df:
        df["source"] = res.source
    if "phase" not in df:
        df["phase"] = "measured"
    df["machine_busy"] = busy
    prov.update({"study": ctx.study, "step": ctx.step, "method": res.method,
                 "dataset_id": res.dataset_id or ctx.dataset, "dataset_checksum": res.dataset_checksum,
                 "inputs": ctx.inputs, "thread_settings": thread_info,
                 "quiet_check": {"before": before, "after": after, "busy": busy,
                                 "threshold_busy_share": quiet.BUSY_SHARE}})
    prov.update(res.provenance)
    return records.write(ctx.out, df, prov, res.summary)

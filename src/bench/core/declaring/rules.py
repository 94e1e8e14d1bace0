"""A study's build and measurement jobs and record sets, derived from its declaration.

Each step declares (:func:`bench.core.declaring.study.step`) where its job runs (``per`` dataset, on the first dataset,
or once), what it writes and what it needs; this module turns that into the jobs ``workflows/studies.smk``
hands to the generic rules (``workflows/steps.smk``, ``workflows/outputs.smk``), for every study without a
rule file of its own. The paths follow one layout:

- a measurement writes ``<results>/<study>/<writes>_{dataset}.parquet`` (per dataset) or
  ``<results>/<study>/<writes>.parquet`` (once);
- a build writes its declared files under ``<indexes>/<study>/``, and its own record set (its time and
  memory, kind ``<writes>_build``) beside the file or folder its ``--out`` names;
- a need is fed by its producer: ``manifest`` by the job's dataset's prepared manifest, a step's ``writes``
  by that step's (first) file: the same dataset's where both run per dataset, the first dataset's for a job
  on the first dataset, every dataset's for a job that runs once; a build's other files are waited for.

Nothing here names a study. A study whose wiring does not fit (several roles of dataset, a part switched on
by its own key) keeps ``workflows/<study>.smk`` and says why in its header.
"""
from __future__ import annotations

from typing import Callable

from .study import DATASET_INPUT, Step, Study, build_records

WILD = "{dataset}"


class RuleError(ValueError):
    """A declaration the generic rules cannot wire (a glob need, a need nothing produces)."""


def _files(study: Study, s: Step, results: str, indexes: str) -> dict[str, str]:
    """The step's files as patterns (``{dataset}`` left in where it runs per dataset)."""
    if s.kind == "build":
        return {k: f"{indexes}/{study.name}/{v}" for k, v in s.out.items()}
    suffix = f"_{WILD}" if s.per == "dataset" else ""
    return {"out": f"{results}/{study.name}/{s.writes}{suffix}.parquet"}


def _fill(pattern: str, s: Step, datasets: list[str]) -> str:
    """A pattern for one job: the wildcard stays for a per-dataset job, the first dataset otherwise."""
    return pattern if s.per == "dataset" else pattern.replace(WILD, datasets[0] if datasets else "")


def _for(consumer: Step, producer: Step, pattern: str, datasets: list[str]) -> str | list[str]:
    """A producer's file as the consumer's job reads it."""
    if WILD not in pattern or producer.per != "dataset":
        return _fill(pattern, producer, datasets)
    if consumer.per == "dataset":
        return pattern
    if consumer.per == "first":
        return pattern.replace(WILD, datasets[0])
    return [pattern.replace(WILD, d) for d in datasets]


def _wiring(study: Study, s: Step, files: dict[str, dict[str, str]], datasets: list[str],
            manifest: Callable[[str], str]) -> tuple[dict, dict]:
    """``needs`` and ``after`` of one step's job."""
    by_writes = {p.writes: p for _, p in study.steps.items()}
    needs, after = {}, {}
    for need in (*s.needs, *(o for o in s.optional if o in by_writes)):
        if need == DATASET_INPUT:
            needs[need] = manifest(WILD) if s.per == "dataset" else manifest(datasets[0])
            continue
        if need.endswith("*") or need not in by_writes:
            raise RuleError(f"bench.{study.name} step {s.name}: need {need!r} has no producing step the generic "
                            "rules can wire (give the study a workflows/<study>.smk)")
        p = by_writes[need]
        first, *rest = files[p.name].items()
        needs[need] = _for(s, p, first[1], datasets)
        after.update({f"{need}_{k}": _for(s, p, v, datasets) for k, v in rest})
    return needs, after


def _params(s: Step, section: dict, datasets: list[str]):
    """The job's section: as it is, or one dataset's (``section_for``): per job, or the first dataset's."""
    if s.section_for is None:
        return section
    if s.per == "dataset":
        return lambda wc: s.section_for(section, wc.dataset)
    return s.section_for(section, datasets[0] if datasets else "")


def derive(study: Study, section: dict, *, results: str, indexes: str,
           manifest: Callable[[str], str]) -> tuple[dict[str, dict], dict[str, list[str]]]:
    """``({step: job}, {record kind: [paths]})`` of an enabled study: each job as ``workflows/common.smk``'s
    ``job()`` takes it (out, needs, after, params, dataset, out_arg, threads), each measurement's record
    paths for every dataset it runs on, and each build's own record set (kind ``<writes>_build``)."""
    datasets = list(section.get("datasets") or [])
    steps = dict(study.steps.items())
    for s in steps.values():
        if s.per != "study" and not datasets:
            raise RuleError(f"bench.{study.name} step {s.name} runs per dataset, but the section names none")
    files = {n: _files(study, s, results, indexes) for n, s in steps.items()}
    jobs, records = {}, {}
    for n, s in steps.items():
        needs, after = _wiring(study, s, files, datasets, manifest)
        out = {k: _fill(v, s, datasets) for k, v in files[n].items()}
        out_arg = _fill(f"{indexes}/{study.name}/{s.out_arg}", s, datasets) if s.out_arg else None
        if s.kind == "build":   # its own record set, after the files its consumers are given
            out["build_records"] = build_records(out_arg or next(iter(out.values())))
        jobs[n] = {"out": out, "needs": needs, "after": after, "params": _params(s, section, datasets),
                   "dataset": datasets[0] if s.per == "first" else None, "out_arg": out_arg, "threads": s.threads}
        path = out["out"] if s.kind == "measure" else out["build_records"]
        records[s.writes if s.kind == "measure" else s.build_kind] = \
            [path.replace(WILD, d) for d in datasets] if WILD in path else [path]
    return jobs, records

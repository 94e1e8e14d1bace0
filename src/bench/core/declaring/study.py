"""A study's declaration: ``STUDY = Study(...)`` in ``bench/<study>/__init__.py``.

Everything the CLI, the rule files and the contract test need is read from it:

- ``params``: the frozen dataclass of the study's profile section (:mod:`bench.core.declaring.params`);
- ``steps``: the steps found in the study's ``steps/`` package. Each step module declares its step
  once with :func:`step`: its name, what it ``needs`` (``--input`` keys: the ``manifest`` of a
  dataset, what a build or another step ``writes``, or one of the study's ``externals``) and the record
  kind it ``writes``. A build (``kind="build"``) writes files the measurement steps read, not records;
- ``figures`` and ``claims``: the modules holding the figure registry and the claims (imported only
  when a figure or claims command runs, so a measurement job never imports matplotlib).

Adding a step is a module in ``steps/``, its keys on the typed parameters, and a figure, claim and test where
it has them: its rule is derived from the declaration (:mod:`bench.core.declaring.rules`; docs/adding-a-study.md).
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from typing import Callable, Iterator

from .discover import study_names

DATASET_INPUT = "manifest"   # the prepared dataset a step measures (workflows/data.smk makes it)
LEVEL = "level"   # the column naming each row's level in a step declared levels=(...): "run", "query", ...
BUILD_RECORDS = ".build.parquet"   # a build's own record set, beside what it writes (bench.core.measuring.step.build)


def build_records(out) -> str:
    """The record set a build writes beside its output ``out`` (a file or a folder; a ``{dataset}`` pattern
    stays one): ``<out>.build.parquet``."""
    return f"{str(out).rstrip('/')}{BUILD_RECORDS}"


@dataclasses.dataclass(frozen=True)
class Step:
    """One step: ``fn(ctx)`` measures and returns a :class:`bench.core.measuring.step.Result` (``kind="measure"``)
    or writes what ``ctx.out`` names (``kind="build"``)."""

    name: str
    fn: Callable
    needs: tuple[str, ...]
    optional: tuple[str, ...]
    writes: str
    kind: str = "measure"
    processes: bool = False   # splits its measured repeats over fresh processes (bench.core.measuring.step)
    decide: Callable | None = None   # (rows, params) -> the stage-1 interval clears (bench.core.measuring.sequential)
    keys: tuple[str, ...] | None = None   # the section's keys the step reads (None: all of them)
    per: str = "dataset"       # one job per dataset of the section, one on its first ("first"), or one ("study")
    out: dict | None = None    # a build's files, ``{name: pattern}`` under data/<profile>/indexes/<study>/
    out_arg: str | None = None   # a build's ``--out`` when it is not the first file (a folder), same place
    threads: int | None = None   # the job's threads (None: every core; a measurement runs alone)
    section_for: Callable | None = None   # (section, dataset) -> the section one dataset's job is given
    timed: bool = True   # False: it times nothing (a model, a simulation): no wait for quiet, no reruns
    levels: tuple[str, ...] | None = None   # the levels its rows come at ("run", "query"), named in ``level``

    def __call__(self, ctx):
        return self.fn(ctx)

    @property
    def build_kind(self) -> str:
        """The record kind of a build's own record set (its time and memory): ``<writes>_build``."""
        return f"{self.writes}_build"


def step(name: str, *, needs: tuple[str, ...] = (), optional: tuple[str, ...] = (), writes: str | None = None,
         kind: str = "measure", processes: bool = False, decide: Callable | None = None,
         keys: tuple[str, ...] | None = None, per: str | None = None, out: str | dict | None = None,
         out_arg: str | None = None, threads: int | None = None,
         section_for: Callable | None = None, timed: bool = True,
         levels: tuple[str, ...] | None = None) -> Callable[[Callable], Callable]:
    """Declare a step in its module: ``@step("recall", needs=("manifest", "index"), writes="recall")``.
    A need may be a glob (``index_*``) where a step reads one file per dataset. ``writes`` defaults to the
    step's name. ``processes=True``: the step can repeat cheaply, so it splits its measured repeats
    (``ctx.share(n)``) over the profile's ``processes`` fresh processes. ``decide``: a two-stage design
    (:mod:`bench.core.measuring.sequential`): ``decide(rows, params)`` says whether stage 1's interval clears the
    claim's threshold; when not, a second stage of as many fresh processes runs. ``keys``: the top-level keys
    of the study's profile section the step reads; its job is given only those (so adding or changing
    another key reruns only the steps that read it), and any other key is withheld from it at run time
    (:func:`bench.core.declaring.params.only`: using one is a bug, named). ``None``: the whole section.

    Where its job runs and what it writes (:mod:`bench.core.declaring.rules` derives the study's rules from this):
    ``per="dataset"`` (the default for a step that needs a ``manifest``): one job per dataset of the section's
    ``datasets``; ``"first"``: one job, on the first; ``"study"`` (the default otherwise): one job, no dataset.
    A measurement writes ``results/<profile>/<study>/<writes>[_<dataset>].parquet``; a build declares its
    files, ``out="{dataset}.faiss"`` or ``{name: pattern}`` (the first is the one its consumers are given,
    the rest they wait for), under ``data/<profile>/indexes/<study>/``, and ``out_arg`` when its ``--out`` is
    a folder. ``threads``: the job's threads (default every core). ``section_for(section, dataset)``: the
    section one dataset's job is given (a per-dataset override), so an override reruns that dataset only.
    ``timed=False``: the step times nothing (its rows are modelled or simulated), so it does not wait for a
    quiet machine nor rerun (:func:`bench.core.measuring.step.execute`): it runs beside the pipeline's other jobs, and
    waiting on them only held a core (up to ``quiet.WAIT_BOUND_S`` twice, on the critical path).
    ``levels=("run", "query")``: the step's rows come at several levels (a timed run, one query's result), in
    one record set, each naming its own in the ``level`` column (checked by the skeleton). A build
    (``kind="build"``) also writes its own record set beside its output, kind ``<writes>_build``
    (:func:`bench.core.measuring.step.build`)."""
    if kind not in ("measure", "build"):
        raise ValueError(f"step {name}: kind must be measure or build, not {kind!r}")
    per = per or ("dataset" if DATASET_INPUT in needs else "study")
    if per not in ("dataset", "first", "study"):
        raise ValueError(f"step {name}: per must be dataset, first or study, not {per!r}")
    if kind == "build" and out is None:
        raise ValueError(f"step {name}: a build declares the files it writes (out=...)")
    files = None if out is None else ({"out": out} if isinstance(out, str) else dict(out))

    def mark(fn: Callable) -> Callable:
        if processes and kind != "measure":
            raise ValueError(f"step {name}: only a measurement step repeats across processes")
        if processes and not timed:
            raise ValueError(f"step {name}: a step that times nothing has no repeats to split over processes")
        if levels is not None and (kind != "measure" or not levels or len(set(levels)) != len(levels)):
            raise ValueError(f"step {name}: levels= names the distinct levels of a measurement's rows, not {levels!r}")
        fn.step = Step(name, fn, tuple(needs), tuple(optional), writes or name, kind, processes, decide,
                       None if keys is None else tuple(keys), per, files, out_arg, threads, section_for, timed,
                       None if levels is None else tuple(levels))
        fn.reads, fn.optional_reads = tuple(needs), tuple(optional)   # what bench.core.commands.doors checks
        return fn
    return mark


class Steps:
    """The steps of one package, found by importing each module in it (``inputs`` and modules whose
    name starts with ``_`` hold shared helpers, not steps). Ordered by module name."""

    def __init__(self, package: str) -> None:
        self.package = package
        self._steps: dict[str, Step] | None = None

    def _load(self) -> dict[str, Step]:
        if self._steps is None:
            pkg = importlib.import_module(self.package)
            found: dict[str, Step] = {}
            for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
                if m.name.startswith("_") or m.name == "inputs":
                    continue
                mod = importlib.import_module(f"{self.package}.{m.name}")
                for obj in vars(mod).values():
                    s = getattr(obj, "step", None)
                    if isinstance(s, Step) and getattr(obj, "__module__", None) == mod.__name__:
                        if s.name in found:
                            raise ValueError(f"{self.package}: step {s.name!r} declared twice")
                        found[s.name] = s
            self._steps = found
        return self._steps

    def __getitem__(self, name: str) -> Step:
        return self._load()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._load()

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def items(self):
        return self._load().items()

    def measures(self) -> dict[str, Step]:
        return {n: s for n, s in self._load().items() if s.kind == "measure"}

    def builds(self) -> dict[str, Step]:
        return {n: s for n, s in self._load().items() if s.kind == "build"}


@dataclasses.dataclass(frozen=True)
class Study:
    """What a study is, declared once."""

    name: str                  # the package (``ivf_recall``) and the profile section
    cli: str                   # the command: ``bench <cli> ...``
    help: str
    params: type               # the frozen Params dataclass
    steps: Steps
    figures: str               # module holding FIGURES (a bench.core.presenting.figures.Registry)
    claims: str | None         # module holding RECORDS and build(data, params, profile)
    externals: tuple[str, ...] = ()    # --input keys that come from outside the pipeline
    verbs: Callable | None = None      # adds internal verbs (a worker, a server) to ``bench <cli>``
    title: str = ""            # the report section's heading, in words ("ESPN: re-ranking embeddings ...")
    short: str = ""            # its short name in the ledger and the report's links ("ESPN")
    order: int = 100           # place among the studies in the ledger and the report (the papers' order)
    reproduces_paper: bool = True   # False for a check of the harness itself: its rows count as targets
    synthetic: str | None = None    # module holding records(params) -> {kind: rows}: synthetic records built by
    #                                 the study's own emulations and models (the sensitivity test of what the
    #                                 paper fixed runs its claims on them: bench.core.judging.fidelity)

    @property
    def heading(self) -> str:
        return self.title or self.short or self.name.replace("_", " ")

    @property
    def label(self) -> str:
        return self.short or self.name.replace("_", " ")

    def parameters(self, section: dict):
        """The typed ``Params`` of a profile section: validated against the study's schema (defaults filled)
        then built (what a step, a figure test or a notebook is given)."""
        from . import config, params

        return params.build(self.params, config.validate_section(self.name, dict(section)), self.name)

    def producers(self) -> dict[str, str]:
        """need -> what provides it: a step's ``writes``, the dataset manifest or a declared external."""
        out = {DATASET_INPUT: "dataset", **{e: "external" for e in self.externals}}
        out.update({s.writes: n for n, s in self.steps.items()})
        return out

    def unproduced(self) -> list[str]:
        """``step: need`` pairs with nothing to provide them (globs match a producer by prefix)."""
        prod = self.producers()
        bad = []
        for n, s in self.steps.items():
            for need in (*s.needs, *s.optional):
                stem = need[:-1]
                ok = need in prod or (need.endswith("*") and any(p.startswith(stem) or p == stem.rstrip("_")
                                                                 for p in prod))
                if not ok:
                    bad.append(f"{n}: {need}")
        return bad


@functools.lru_cache(maxsize=1)
def declared() -> tuple[Study, ...]:
    """Every study's declaration (``bench.<study>.STUDY``), in the order they declare (then by name); read
    once per process (the ledger asks for every row)."""
    studies = [importlib.import_module(f"bench.{n}").STUDY for n in study_names()]
    return tuple(sorted(studies, key=lambda s: (s.order, s.name)))


def by_name() -> dict[str, Study]:
    return {s.name: s for s in declared()}

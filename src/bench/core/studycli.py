"""The verbs every study's ``bench <study> ...`` command has, built in one place.

- ``build``    (optional) indexes, tables, models: files a measurement step reads;
- ``measure STEP --out RECORDS [--input KEY=PATH ...] [--dataset NAME] --profile --seed --threads --params``
  runs one measurement step through :func:`bench.core.step.execute`;
- ``figure NAME [NAME ...] --records KIND=PATH ... (--out PNG | --out-dir DIR)`` draws registered figures
  from records (``all`` draws every one; the rule files draw a study's figures in one job);
- ``claims --records KIND=PATH ... --params --profile --out claims.parquet`` writes the study's ledger rows.

Rule files call exactly these verbs, so a study's command line looks like every other study's.
"""
from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Callable, Mapping

from . import doors, provenance, step
from .errors import ConfigError
from .figures import Registry


def json_arg(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None


def add_run_args(p: argparse.ArgumentParser, *, params: bool = True) -> None:
    """The arguments every measurement step takes: profile, seed, threads, and the study params."""
    p.add_argument("--profile", required=True, help="profile name (recorded in provenance)")
    p.add_argument("--seed", type=doors.nonneg_int, required=True)
    p.add_argument("--threads", type=doors.positive_int, required=True, help="threads for measured code (>= 1)")
    if params:
        p.add_argument("--params", type=json_arg, required=True,
                       help="the study's validated config section, as JSON")


def pairs(values: list[str] | None, flag: str) -> dict[str, list[str]]:
    """``KEY=PATH`` arguments -> ``{KEY: [PATH, ...]}`` (a key may repeat)."""
    out: dict[str, list[str]] = {}
    for v in values or []:
        key, sep, path = v.partition("=")
        if not sep or not key or not path:
            raise ConfigError(f"{flag}: expected KEY=PATH, got {v!r}")
        out.setdefault(key, []).append(path)
    return out


class LazyRegistry:
    """A study's figure registry, imported when first asked: a measure, build or claims job (which
    never draws) then does not import matplotlib. Iterable and supports ``in``, so it serves as
    argparse ``choices``."""

    def __init__(self, module: str | Registry) -> None:
        self.module = module
        self._reg: Registry | None = module if isinstance(module, Registry) else None

    def get(self) -> Registry:
        if self._reg is None:
            self._reg = importlib.import_module(str(self.module)).FIGURES
        return self._reg

    def __contains__(self, name: object) -> bool:
        return name == "all" or name in self.get()

    def __iter__(self):
        return iter(["all", *self.get()])


def register_study(sub: argparse._SubParsersAction, name: str, help: str, *,
                   steps: Mapping[str, Callable[[step.Context], step.Result]],
                   figures: Registry | str, claims: ModuleType | None,
                   build: Callable[[argparse.Namespace], None] | None = None,
                   build_args: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse._SubParsersAction:
    """Add ``bench <name>`` with the standard verbs; returns its sub-parsers for internal extra verbs."""
    p = sub.add_parser(name, help=help)
    s = p.add_subparsers(dest="verb", required=True)
    study = name.replace("-", "_")

    if build is not None:
        b = s.add_parser("build", help="build what the measurement steps read (indexes, tables)")
        b.add_argument("--input", action="append", metavar="KEY=PATH")
        b.add_argument("--dataset")
        b.add_argument("--out", required=True)
        add_run_args(b)
        if build_args:
            build_args(b)
        b.set_defaults(func=lambda a: build(_checked(study, "build", a, step.declared_inputs(build))))

    m = s.add_parser("measure", help="run one measurement step and write its record set")
    m.add_argument("step", choices=list(steps))
    m.add_argument("--out", required=True, help="record set path (.parquet)")
    m.add_argument("--input", action="append", metavar="KEY=PATH", help="a file the step reads")
    m.add_argument("--dataset", help="the dataset this run measures (a name declared in the profile)")
    add_run_args(m)
    m.set_defaults(func=lambda a: step.execute(
        _context(study, _checked(study, f"measure {a.step}", a, step.declared_inputs(steps[a.step]), ".parquet")),
        steps[a.step]))

    reg = LazyRegistry(figures)
    f = s.add_parser("figure", help="draw registered figures from records")
    f.add_argument("names", nargs="+", metavar="NAME", choices=reg, help="figure name(s), or all")
    f.add_argument("--records", action="append", metavar="KIND=PATH", required=True)
    out = f.add_mutually_exclusive_group(required=True)
    out.add_argument("--out", help="PNG path of the one figure named (PDF and caption are written beside it)")
    out.add_argument("--out-dir", help="folder: each figure goes to DIR/NAME.png (PDF and caption beside it)")
    f.add_argument("--formats", default="png,pdf", help="comma-separated: png plus any of pdf, svg (default png,pdf)")
    f.set_defaults(func=lambda a: _figures(reg, a))

    if claims is not None:
        c = s.add_parser("claims", help="the study's rows of the claims ledger, from records")
        c.add_argument("--records", action="append", metavar="KIND=PATH", required=True)
        c.add_argument("--out", required=True, help="claims.parquet (claims.md is written beside it)")
        c.add_argument("--profile", required=True)
        c.add_argument("--params", type=json_arg, required=True)
        c.set_defaults(func=lambda a: _claims(claims, study, a))
    return s


def register(sub: argparse._SubParsersAction, study) -> argparse._SubParsersAction:
    """Add ``bench <study.cli>`` from a :class:`bench.core.study.Study` declaration: ``build [NAME]`` for
    its build steps, ``measure STEP`` for its measurement steps, ``figure`` and ``claims``, then the
    study's internal verbs (``study.verbs``)."""
    p = sub.add_parser(study.cli, help=study.help)
    s = p.add_subparsers(dest="verb", required=True)
    builds, measures = study.steps.builds(), study.steps.measures()
    if builds:
        b = s.add_parser("build", help="build what the measurement steps read (indexes, tables, models)")
        b.add_argument("step", nargs="?" if len(builds) == 1 else None, default=next(iter(builds)),
                       choices=list(builds), help="which build (default: the only one)")
        _io_args(b, "the file or folder it writes")
        b.set_defaults(func=lambda a: _build(study, builds[a.step], a))
    m = s.add_parser("measure", help="run one measurement step and write its record set")
    m.add_argument("step", choices=list(measures))
    _io_args(m, "record set path (.parquet)")
    m.set_defaults(func=lambda a: step.execute(_typed_context(study, a, ".parquet"), measures[a.step].fn))
    _figure_verb(s, LazyRegistry(study.figures))
    if study.claims is not None:
        c = s.add_parser("claims", help="the study's rows of the claims ledger, from records")
        c.add_argument("--records", action="append", metavar="KIND=PATH", required=True)
        c.add_argument("--out", required=True, help="claims.parquet (claims.md is written beside it)")
        c.add_argument("--profile", required=True)
        c.add_argument("--params", type=json_arg, required=True)
        c.set_defaults(func=lambda a: _typed_claims(study, a))
    if study.verbs is not None:
        study.verbs(s)
    return s


def _io_args(p: argparse.ArgumentParser, out_help: str) -> None:
    p.add_argument("--out", required=True, help=out_help)
    p.add_argument("--input", action="append", metavar="KEY=PATH", help="a file the step reads")
    p.add_argument("--dataset", help="the dataset this run measures (a name declared in the profile)")
    add_run_args(p)


def _figure_verb(s: argparse._SubParsersAction, reg: "LazyRegistry") -> None:
    f = s.add_parser("figure", help="draw registered figures from records")
    f.add_argument("names", nargs="+", metavar="NAME", choices=reg, help="figure name(s), or all")
    f.add_argument("--records", action="append", metavar="KIND=PATH", required=True)
    out = f.add_mutually_exclusive_group(required=True)
    out.add_argument("--out", help="PNG path of the one figure named (PDF and caption are written beside it)")
    out.add_argument("--out-dir", help="folder: each figure goes to DIR/NAME.png (PDF and caption beside it)")
    f.add_argument("--formats", default="png,pdf", help="comma-separated: png plus any of pdf, svg (default png,pdf)")
    f.set_defaults(func=lambda a: _figures(reg, a))


def _typed_context(study, a: argparse.Namespace, suffix: str | None) -> step.Context:
    """The checked context of one step: doors first (before any work), then the typed parameters."""
    from . import params as typed

    s = study.steps[a.step]
    verb = f"{'build' if s.kind == 'build' else 'measure'} {a.step}"
    a = _checked(study.name, verb, a, (s.needs, s.optional), suffix)
    return step.Context(study=study.name, step=a.step, params=typed.build(study.params, a.params, study.name),
                        profile=a.profile, seed=a.seed, threads=a.threads, out=Path(a.out),
                        inputs=pairs(a.input, "--input"), dataset=a.dataset, section=a.params)


def _build(study, s, a: argparse.Namespace):
    from . import measure

    ctx = _typed_context(study, a, None)
    measure.set_threads(ctx.threads)
    return s.fn(ctx)


def _typed_claims(study, a: argparse.Namespace) -> Path:
    """The study's ledger rows: records read once (by kind), typed parameters, provenance."""
    from . import claims as core_claims, params as typed, records

    module = importlib.import_module(study.claims)
    inputs = pairs(a.records, "--records")
    doors.records(f"{study.name} claims", inputs, [*module.RECORDS, *getattr(module, "OPTIONAL_RECORDS", ())])
    missing = [k for k in module.RECORDS if k not in inputs]
    if missing:
        raise ConfigError(f"{study.name} claims: needs --records for {missing}")
    section = doors.study_params(study.name, a.params)
    doors.out_path(f"{study.name} claims", a.out, ".parquet")
    data = records.read_kinds({k: [Path(p) for p in v] for k, v in inputs.items()})
    rows = module.build(data, typed.build(study.params, section, study.name), a.profile)
    prov = {**provenance.git_state(), "profile": a.profile, "study": study.name, "config": section,
            "inputs": inputs, "method": "verdicts computed from the records named in inputs "
            "(bench.core.claims: interval against threshold; modelled/not run -> needs hardware we lack)"}
    return core_claims.write(rows, a.out, prov)


def _checked(study: str, verb: str, a: argparse.Namespace, declared, suffix: str | None = None) -> argparse.Namespace:
    """``a`` after the checks of :mod:`bench.core.doors` (before any work): ``--params`` validated with
    the schema's defaults filled, ``--input``, ``--dataset`` and ``--out``."""
    what = f"{study.replace('_', '-')} {verb}"
    given = pairs(a.input, "--input")
    doors.dataset(what, a.dataset, a.params if isinstance(a.params, dict) else {}, given)
    a.params = doors.study_params(study, a.params)
    doors.inputs(what, given, declared)
    doors.out_path(what, a.out, suffix)
    return a


def _figures(reg: LazyRegistry, a: argparse.Namespace) -> list[Path]:
    registry = reg.get()
    names = list(registry) if "all" in a.names else list(dict.fromkeys(a.names))
    if a.out is not None and len(names) != 1:
        raise ConfigError(f"figure: --out takes one figure, {len(names)} named; use --out-dir")
    kinds = {k for n in names for k in registry.records_of(n)}
    doors.records("figure", pairs(a.records, "--records"), sorted(kinds))
    doors.out_path("figure", a.out or Path(a.out_dir) / "x.png", ".png")
    from . import plotting

    try:
        plotting.set_formats(a.formats.split(","))
    except ValueError as exc:
        raise ConfigError(f"figure --formats: {exc}") from None
    inputs = pairs(a.records, "--records")
    written: list[Path] = []
    for n in names:
        written += registry.draw(n, inputs, Path(a.out) if a.out else Path(a.out_dir) / f"{n}.png")
    return written


def _context(study: str, a: argparse.Namespace) -> step.Context:
    return step.Context(study=study, step=a.step, params=a.params, profile=a.profile, seed=a.seed,
                          threads=a.threads, out=Path(a.out), inputs=pairs(a.input, "--input"),
                          dataset=a.dataset)


def _claims(module: ModuleType, study: str, a: argparse.Namespace) -> Path:
    from . import claims as core_claims

    inputs = pairs(a.records, "--records")
    doors.records(f"{study} claims", inputs, [*module.RECORDS, *getattr(module, "OPTIONAL_RECORDS", ())])
    missing = [k for k in module.RECORDS if k not in inputs]
    if missing:
        raise ConfigError(f"{study} claims: needs --records for {missing}")
    a.params = doors.study_params(study, a.params)
    doors.out_path(f"{study} claims", a.out, ".parquet")
    rows = module.build({k: [Path(p) for p in v] for k, v in inputs.items()}, a.params, a.profile)
    prov = {**provenance.git_state(), "profile": a.profile, "study": study, "config": a.params,
            "inputs": inputs, "method": "verdicts computed from the records named in inputs "
            "(bench.core.claims: interval against threshold; modelled/not run -> needs hardware we lack)"}
    return core_claims.write(rows, a.out, prov)

"""The figure registry: one place per study that lists its figures and the records each reads.

A study's ``figures/__init__.py`` holds ``FIGURES = Registry(__name__, descriptions)``; each module of
``figures/`` declares its drawing functions with :func:`figure`, and the registry finds them by importing
every module of the package when first asked (no module imports the registry back: no circle)::

    @figure("fig1", records=("e2e",), title="latency breakdown")
    def fig1(data: dict[str, pd.DataFrame], out_png: Path) -> list[Path]: ...

The registry owns what every figure does first: it reads each record kind the figure declares once
(:func:`bench.core.measuring.records.read_kinds`: one table per kind, provenance in ``attrs``) and applies the
suite's style; the function starts its panels with :func:`bench.core.presenting.plotting.start`.

The study's CLI (``bench <study> figure NAME ...``) and its rule file (one figure rule that draws every
registered figure in one job, its inputs from :meth:`Registry.records_of`) both read this registry, so a
figure is declared once. Beside each figure, :meth:`Registry.draw` writes ``NAME.report.rst``, the
report's caption: what the figure shows (``descriptions`` or the title) and the run's own caption.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, Iterator, Mapping

from ..base.atomic import write_text

Draw = Callable[[dict[str, "pd.DataFrame"], Path], list[Path]]


@dataclasses.dataclass(frozen=True)
class Figure:
    name: str
    draw: Draw
    records: tuple[str, ...]
    title: str = ""
    optional: tuple[str, ...] = ()   # kinds drawn when given (the figure says "not run" otherwise)
    claims: tuple[str, ...] = ()     # the ledger's claim ids this figure shows (the report links them first)


def figure(name: str, records: tuple[str, ...], title: str = "",
           optional: tuple[str, ...] = (), claims: tuple[str, ...] = ()) -> Callable[[Draw], Draw]:
    """Declare a figure in its module (found by :class:`Registry` of the enclosing ``figures`` package);
    ``claims``: the ids of the ledger rows whose numbers it shows (:mod:`bench.core.presenting.report_links`)."""
    def mark(fn: Draw) -> Draw:
        fn.figure = Figure(name, fn, tuple(records), title, tuple(optional), tuple(claims))
        return fn
    return mark


class Registry:
    """Ordered ``{name: Figure}``: the figures declared in the modules of ``package`` (by module name,
    then order in the module), or registered with :meth:`figure`."""

    def __init__(self, package: str | None = None, descriptions: Mapping[str, str] | None = None) -> None:
        self.package = package
        self._found = package is None
        self._own: dict[str, Figure] = {}
        self.descriptions = dict(descriptions or {})

    @property
    def _figs(self) -> dict[str, Figure]:
        if not self._found:
            import importlib
            import pkgutil

            pkg = importlib.import_module(self.package)
            for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
                mod = importlib.import_module(f"{self.package}.{m.name}")
                for obj in vars(mod).values():
                    f = getattr(obj, "figure", None)
                    if isinstance(f, Figure) and getattr(obj, "__module__", None) == mod.__name__:
                        if f.name in self._own:
                            raise ValueError(f"figure {f.name!r} declared twice")
                        self._own[f.name] = f
            self._found = True
        return self._own

    def figure(self, name: str, records: tuple[str, ...], title: str = "",
               optional: tuple[str, ...] = (), claims: tuple[str, ...] = ()) -> Callable[[Draw], Draw]:
        def register(fn: Draw) -> Draw:
            if name in self._own:
                raise ValueError(f"figure {name!r} registered twice")
            self._own[name] = Figure(name, fn, tuple(records), title, tuple(optional), tuple(claims))
            return fn
        return register

    def __getitem__(self, name: str) -> Figure:
        return self._figs[name]

    def __contains__(self, name: object) -> bool:
        return name in self._figs

    def __iter__(self) -> Iterator[str]:
        return iter(self._figs)

    def __len__(self) -> int:
        return len(self._figs)

    def claims_of(self, name: str) -> tuple[str, ...]:
        """The ledger's claim ids the figure declares it shows."""
        return self._figs[name].claims

    def records_of(self, name: str) -> tuple[str, ...]:
        return self._figs[name].records

    def description(self, name: str) -> str:
        return self.descriptions.get(name) or self._figs[name].title

    def draw(self, name: str, inputs: dict[str, list[Path]], out_png: Path) -> list[Path]:
        fig = self._figs[name]
        missing = [k for k in fig.records if not inputs.get(k)]
        if missing:
            raise ValueError(f"figure {name} reads record kind(s) {missing}; none given")
        from . import plotting
        from ..measuring import records

        data = records.read_kinds({k: [Path(p) for p in v] for k, v in inputs.items()
                                    if k in fig.records or k in fig.optional})
        plotting.apply_style()
        written = fig.draw(data, Path(out_png))
        return [*written, self._report_caption(name, Path(out_png))]

    def _report_caption(self, name: str, out_png: Path) -> Path:
        """``NAME.report.rst``: the description, then the caption the figure wrote for this run (kept
        verbatim: the report renders captions as Jinja templates)."""
        run = out_png.with_suffix(".caption.rst")
        parts = [self.description(name), run.read_text().strip() if run.exists() else ""]
        text = "\n\n".join(p for p in parts if p)
        return write_text(out_png.with_suffix(".report.rst"), "{% raw %}\n" + text + "\n{% endraw %}\n")

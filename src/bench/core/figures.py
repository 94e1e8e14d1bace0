"""The figure registry: one place per study that lists its figures and the records each reads.

A study's ``figures.py`` holds ``FIGURES = Registry()`` and registers each drawing function::

    @FIGURES.figure("fig1", records=("e2e",), title="latency breakdown")
    def fig1(inputs: dict[str, list[Path]], out_png: Path) -> list[Path]: ...

The study's CLI (``bench <study> figure NAME ...``) and its rule file (one figure rule that draws every
registered figure in one job, its inputs from :meth:`Registry.records_of`) both read this registry, so a
figure is declared once. Beside each figure, :meth:`Registry.draw` writes ``NAME.report.rst``, the
report's caption: what the figure shows (``descriptions`` or the title) and the run's own caption.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, Iterator, Mapping

from .atomic import write_text

Draw = Callable[[dict[str, list[Path]], Path], list[Path]]


@dataclasses.dataclass(frozen=True)
class Figure:
    name: str
    draw: Draw
    records: tuple[str, ...]
    title: str = ""


class Registry:
    """Ordered ``{name: Figure}``."""

    def __init__(self, descriptions: Mapping[str, str] | None = None) -> None:
        self._figs: dict[str, Figure] = {}
        self.descriptions = dict(descriptions or {})

    def figure(self, name: str, records: tuple[str, ...], title: str = "") -> Callable[[Draw], Draw]:
        def register(fn: Draw) -> Draw:
            if name in self._figs:
                raise ValueError(f"figure {name!r} registered twice")
            self._figs[name] = Figure(name, fn, tuple(records), title)
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

    def records_of(self, name: str) -> tuple[str, ...]:
        return self._figs[name].records

    def description(self, name: str) -> str:
        return self.descriptions.get(name) or self._figs[name].title

    def draw(self, name: str, inputs: dict[str, list[Path]], out_png: Path) -> list[Path]:
        fig = self._figs[name]
        missing = [k for k in fig.records if not inputs.get(k)]
        if missing:
            raise ValueError(f"figure {name} reads record kind(s) {missing}; none given")
        written = fig.draw({k: [Path(p) for p in v] for k, v in inputs.items()}, Path(out_png))
        return [*written, self._report_caption(name, Path(out_png))]

    def _report_caption(self, name: str, out_png: Path) -> Path:
        """``NAME.report.rst``: the description, then the caption the figure wrote for this run (kept
        verbatim: the report renders captions as Jinja templates)."""
        run = out_png.with_suffix(".caption.rst")
        parts = [self.description(name), run.read_text().strip() if run.exists() else ""]
        text = "\n\n".join(p for p in parts if p)
        return write_text(out_png.with_suffix(".report.rst"), "{% raw %}\n" + text + "\n{% endraw %}\n")

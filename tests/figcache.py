"""Each figure of a study drawn once per test session: a session-scoped, lazily memoised drawer.

Many tests check the same figure drawn from the same records (it renders; its caption says X; its PNG
tags the source of the ledger rows it backs; no legend entry without anything drawn). One draw costs
seconds (PNG, PDF, caption and the strict legend and legibility checks of ``BENCH_STRICT_FIGURES=1``), so
the ``figcache`` fixture draws figure ``name`` of a study's ``FIGURES`` registry the first time a test asks,
into its own folder of a session temporary directory, and hands every later test the same result::

    d = figcache.draw(FIGURES, "fig7", recs, "recs")
    d.png, d.written, d.fig, d.caption   # the PNG, what FIGURES.draw returned, the figure saved, its caption

``key`` names the records set (``"recs"``, ``"gpu_recs"``): two sets never share an entry, and a later call
under the same key with other record files is an error (two fixtures under one name). A cached draw is
the draw the tests made themselves: the figure gets the kinds it declares (``records_of``) from
``records``, under ``BENCH_STRICT_FIGURES=1``, with ``plotting.save`` observed (it still saves, unchanged)
so that ``fig`` and ``caption`` are the matplotlib figure and caption it saved, and tests that inspect the
figure share the draw too. It runs inside the test that first asks, so under that study's autouse
fixtures. A study's conftest may override ``figure_guard`` to run every draw of its figures under patches
that check something (Chameleon: a figure never measures).

Only for a study's standard records, unchanged and unpatched: a test that patches something before it
draws, sets another environment or draws from changed records draws itself. What was drawn is shared:
read the files and inspect the figure, never change them and never write beside them (copy the folder
first); each later call checks that the figure's folder still holds the same files, unchanged.

Each study's ``tests/<study>/conftest.py`` imports the fixtures by name (``from ..figcache import figcache,
figure_guard``), so each study folder has its own cache; under pytest-xdist, each worker has its own."""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Guard = Callable[[Any, pytest.MonkeyPatch], None]   # (registry, monkeypatch) before each draw


@dataclasses.dataclass(frozen=True)
class Drawn:
    """One cached draw: the PNG, every path ``FIGURES.draw`` returned, and what ``plotting.save`` got last
    (None where the figure never called it)."""

    png: Path
    written: tuple[Path, ...]
    fig: Any = None
    caption: str | None = None

    @property
    def folder(self) -> Path:
        return self.png.parent


def _state(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text)


class FigureCache:
    """``draw(registry, name, records, key)``: figure ``name`` drawn once per (registry, name, key)."""

    def __init__(self, root: Path, guard: Guard | None = None) -> None:
        self.root = Path(root)
        self.guard = guard
        self._drawn: dict[tuple[str, str, str], tuple[dict[str, list[str]], Drawn, dict]] = {}
        self.draws = 0   # figures drawn so far (cache misses)

    def draw(self, registry, name: str, records: dict, key: str) -> Drawn:
        inputs = {k: records[k] for k in registry.records_of(name) if k in records}
        seen = {k: [str(p) for p in v] for k, v in inputs.items()}
        ident = (getattr(registry, "package", None) or f"registry-{id(registry)}", name, key)
        if ident in self._drawn:
            before, drawn, state = self._drawn[ident]
            if before != seen:
                raise ValueError(f"figure cache: {name!r} under key {key!r} was drawn from {before}, now asked "
                                 f"for {seen}: give the other records set its own key")
            now = _state(drawn.folder)
            if now != state:
                raise AssertionError(f"figure cache: a test changed or wrote beside the shared drawing of {name!r} "
                                     f"({key!r}) in {drawn.folder}: copy the folder before writing there")
            return drawn
        folder = self.root / _safe(ident[0]) / _safe(key) / name
        folder.mkdir(parents=True, exist_ok=True)
        drawn = self._draw(registry, name, inputs, folder / f"{name}.png")
        self.draws += 1
        self._drawn[ident] = (seen, drawn, _state(folder))
        return drawn

    def _draw(self, registry, name: str, inputs: dict, png: Path) -> Drawn:
        from bench.core.presenting import plotting

        kept: dict[str, Any] = {}
        real = plotting.save

        def observe(fig, out_png, caption=None):
            kept["fig"], kept["caption"] = fig, caption
            return real(fig, out_png, caption)

        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("BENCH_STRICT_FIGURES", "1")
            mp.setattr(plotting, "save", observe)
            if self.guard is not None:
                self.guard(registry, mp)
            written = registry.draw(name, inputs, png)
        return Drawn(png, tuple(Path(p) for p in written), kept.get("fig"), kept.get("caption"))


@pytest.fixture(scope="session")
def figure_guard() -> Guard | None:
    """Patches every cached draw runs under (``(registry, monkeypatch) -> None``); none by default. A study's
    conftest defines its own ``figure_guard`` (and imports only ``figcache``) to add some."""
    return None


@pytest.fixture(scope="session")
def figcache(tmp_path_factory, figure_guard) -> FigureCache:
    """The session's :class:`FigureCache` (this module's docstring says how to use it)."""
    return FigureCache(tmp_path_factory.mktemp("figcache"), figure_guard)

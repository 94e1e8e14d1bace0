"""The import structure of ``src/bench``, drawn from the code itself (every ``import`` statement, at module
level or inside a function): no import circle anywhere, and no module importing a layer above its own.

The layers, bottom to top: core's rooms in their order (``base``, ``machine``, ``declaring``,
``measuring``, ``judging``, ``presenting``, ``commands``), then ``bench.data``, then ``bench.ann`` and
``bench.serving``, then the studies (each its own; no study imports another), then the command line
(``bench.cli``, ``bench.__main__``, the package itself)."""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
CORE_ROOMS = ("base", "machine", "declaring", "measuring", "judging", "presenting", "commands")
SHARED = ("data", "ann", "serving")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path: Path, known: set[str]) -> set[str]:
    """The ``bench`` modules ``path`` imports (a name imported from a package counts as its module when
    it is one)."""
    mod, is_pkg = module_name(path), path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "bench"}
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(mod, is_pkg, node)
            if target.split(".")[0] != "bench":
                continue
            subs = {f"{target}.{a.name}" for a in node.names} & known
            out |= subs or {target}
    return {m for m in out if m in known and m != mod}


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    files = sorted(SRC.glob("bench/**/*.py"))
    known = {module_name(f) for f in files}
    g = nx.DiGraph()
    for f in files:
        g.add_node(module_name(f))
        for t in imports(f, known):
            g.add_edge(module_name(f), t)
    return g


def layer(mod: str) -> tuple[int, str]:
    """(rank, name) of the layer holding ``mod``; a study's layer is its own name at one rank."""
    parts = mod.split(".")
    if len(parts) == 1 or parts[1] in ("cli", "__main__"):
        return 100, "command line"
    if parts[1] == "core":
        if len(parts) == 2:
            return -1, "core package"
        return CORE_ROOMS.index(parts[2]), f"core.{parts[2]}"
    if parts[1] == "data":
        return 10, "data"
    if parts[1] in ("ann", "serving"):
        return 11, parts[1]
    return 20, parts[1]


def test_no_import_circle_anywhere(graph):
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, "import circles: " + "; ".join(" -> ".join(c + [c[0]]) for c in cycles[:10])


def test_no_module_imports_a_layer_above_its_own(graph):
    bad = []
    for a, b in graph.edges:
        (ra, na), (rb, nb) = layer(a), layer(b)
        if nb == "core package":
            continue
        if rb > ra or (ra == rb == 20 and na != nb):
            bad.append(f"{a} ({na}) imports {b} ({nb})")
    assert not bad, "imports of a higher layer (or of another study): " + "; ".join(bad)


def test_every_core_room_says_what_it_holds():
    core = SRC / "bench" / "core"
    rooms = sorted(p.name for p in core.iterdir() if (p / "__init__.py").exists())
    assert rooms == sorted(CORE_ROOMS), f"core's rooms changed: {rooms}; update CORE_ROOMS and their order"
    assert not [p.name for p in core.glob("*.py") if p.name != "__init__.py"], "core holds modules in rooms only"
    for r in rooms:
        doc = ast.get_docstring(ast.parse((core / r / "__init__.py").read_text()))
        assert doc and len(doc) > 40, f"bench.core.{r} has no docstring saying what it holds"


def test_the_checker_sees_a_circle_and_an_upward_import():
    g = nx.DiGraph([("bench.core.base.errors", "bench.core.judging.claims"), ("bench.a.x", "bench.a.y"),
                    ("bench.a.y", "bench.a.x")])
    assert list(nx.simple_cycles(g))
    assert layer("bench.core.judging.claims")[0] > layer("bench.core.base.errors")[0]


def test_no_comment_or_docstring_names_an_issue():
    """Comments and docstrings say what and why; a reader of the code has no tracker."""
    import re

    hits = [f"{p.relative_to(SRC)}:{i}" for p in SRC.glob("bench/**/*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"\b[Ii]ssues? #?\d+", line)]
    assert not hits, "issue numbers in src: " + ", ".join(hits)

"""The import graph of ``src/ooo_agent``, read from the source: no import circle, and
``ooo_agent.decoding`` reaches neither the tool layer nor the sidecars.

Every ``import`` / ``from ... import`` of an ``ooo_agent`` module counts, at the top of a file,
inside a function or under ``TYPE_CHECKING``; relative imports are resolved. Importing a
submodule is not counted as importing its parent package (every module would then import
``ooo_agent/__init__.py``). ``KNOWN_CYCLES`` and ``KNOWN_DECODING_EXITS`` name what is still
being untangled: each has a strict xfail, so the suite fails the moment one is gone and its
entry must be removed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "ooo_agent"

Graph = dict[str, set[str]]


def _modules(root: Path = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """Dotted module name → (file, whether it is a package's ``__init__``)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _owner(name: str, modules: Iterable[str]) -> str | None:
    """The module ``name`` lives in: itself, or the nearest enclosing module."""
    known = set(modules)
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path = PACKAGE) -> Graph:
    """Module → the ``ooo_agent`` modules it imports (itself left out)."""
    modules = _modules(root)
    graph: Graph = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                # ``from pkg import sub`` imports the submodule ``pkg.sub`` when there is one.
                targets = [
                    f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source
                    for a in node.names
                ]
            for target in targets:
                if target == "ooo_agent" or target.startswith("ooo_agent."):
                    owner = _owner(target, modules)
                    if owner and owner != name:
                        graph[name].add(owner)
    return graph


def cycles(graph: Graph) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def path(
    graph: Graph, start: str, goal: Iterable[str], within: Iterable[str] | None = None
) -> list[str]:
    """A shortest import chain from ``start`` to a module of ``goal`` (through ``within``
    only, when given); empty when there is none."""
    goals, allowed = set(goal), None if within is None else set(within)
    previous: dict[str, str | None] = {start: None}
    queue = [start]
    for node in queue:
        for child in sorted(graph[node]):
            if child in previous or (allowed is not None and child not in allowed):
                continue
            previous[child] = node
            if child in goals:
                chain = [child]
                while (step := previous[chain[-1]]) is not None:
                    chain.append(step)
                return chain[::-1]
            queue.append(child)
    return []


def describe(graph: Graph, component: frozenset[str]) -> str:
    """One circle through ``component``, written ``a → b → a``, and its other members."""
    first = min(component)
    back = [n for n in component if first in graph[n]]
    circle = [*path(graph, first, back, component), first]
    rest = sorted(component - set(circle))
    return " → ".join(circle) + (f" (with {', '.join(rest)})" if rest else "")


GRAPH = import_graph()

KNOWN_CYCLES: dict[frozenset[str], str] = {}

FORBIDDEN_FOR_DECODING = ("ooo_agent.tools", "ooo_agent.sidecar")

KNOWN_DECODING_EXITS: dict[tuple[str, str], str] = {}


def _forbidden(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in FORBIDDEN_FOR_DECODING)


def decoding_exits(graph: Graph) -> dict[tuple[str, str], list[str]]:
    """Each import from ``ooo_agent.decoding`` to a module outside it that is, or leads to, a
    tool-layer or sidecar module → the chain of imports it starts."""
    inside = [n for n in graph if n == "ooo_agent.decoding" or n.startswith("ooo_agent.decoding.")]
    bad = [n for n in graph if _forbidden(n)]
    exits = {}
    for source in inside:
        for target in sorted(graph[source]):
            if target in inside:
                continue
            chain = [target] if _forbidden(target) else path(graph, target, bad)
            if chain:
                exits[(source, target)] = [source, *chain]
    return exits


def test_the_graph_resolves_relative_and_local_imports(tmp_path: Path) -> None:
    root = tmp_path / "ooo_agent"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("from ooo_agent.top import thing\nimport ooo_agent.top.x\n")
    (root / "top.py").write_text("def f():\n    from .sub import inner\n")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "inner.py").write_text("from ..top import f\nfrom . import other\n")
    (root / "sub" / "other.py").write_text("import ooo_agent.sub\n")
    graph = import_graph(root)
    assert graph == {
        "ooo_agent": {"ooo_agent.top"},
        "ooo_agent.top": {"ooo_agent.sub.inner"},
        "ooo_agent.sub": set(),
        "ooo_agent.sub.inner": {"ooo_agent.top", "ooo_agent.sub.other"},
        "ooo_agent.sub.other": {"ooo_agent.sub"},
    }
    assert cycles(graph) == [frozenset({"ooo_agent.top", "ooo_agent.sub.inner"})]
    assert describe(graph, cycles(graph)[0]) == (
        "ooo_agent.sub.inner → ooo_agent.top → ooo_agent.sub.inner"
    )


def test_decoding_exits_follow_chains_out_of_decoding() -> None:
    graph: Graph = {
        "ooo_agent.decoding.a": {"ooo_agent.decoding.b", "ooo_agent.formats.x"},
        "ooo_agent.decoding.b": {"ooo_agent.calls"},
        "ooo_agent.formats.x": {"ooo_agent.formats.y"},
        "ooo_agent.formats.y": {"ooo_agent.tools.schema"},
        "ooo_agent.tools.schema": set(),
        "ooo_agent.calls": set(),
    }
    assert decoding_exits(graph) == {
        ("ooo_agent.decoding.a", "ooo_agent.formats.x"): [
            "ooo_agent.decoding.a",
            "ooo_agent.formats.x",
            "ooo_agent.formats.y",
            "ooo_agent.tools.schema",
        ]
    }


def test_no_import_cycle() -> None:
    new = [c for c in cycles(GRAPH) if c not in KNOWN_CYCLES]
    assert not new, "import circles:\n" + "\n".join(describe(GRAPH, c) for c in new)


@pytest.mark.parametrize(
    "component",
    [
        pytest.param(c, id=" ↔ ".join(sorted(c)), marks=pytest.mark.xfail(strict=True, reason=r))
        for c, r in KNOWN_CYCLES.items()
    ],
)
def test_known_cycle_is_gone(component: frozenset[str]) -> None:
    assert component not in cycles(GRAPH), describe(GRAPH, component)


def test_decoding_reaches_neither_tools_nor_sidecar() -> None:
    new = {e: chain for e, chain in decoding_exits(GRAPH).items() if e not in KNOWN_DECODING_EXITS}
    assert not new, "decoding imports the tool layer or a sidecar:\n" + "\n".join(
        " → ".join(chain) for chain in new.values()
    )


@pytest.mark.parametrize(
    "edge",
    [
        pytest.param(e, id=" → ".join(e), marks=pytest.mark.xfail(strict=True, reason=r))
        for e, r in KNOWN_DECODING_EXITS.items()
    ],
)
def test_known_decoding_exit_is_gone(edge: tuple[str, str]) -> None:
    chain = decoding_exits(GRAPH).get(edge)
    assert chain is None, " → ".join(chain or [])

"""The import structure docs/architecture.md describes: dependencies flow one way.

Read from the source with `ast` (imports inside functions count: they run too;
those under `if TYPE_CHECKING:` do not)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gnod", "gnoctl", "testmodels")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(name: str, path: Path, typing_too: bool = False) -> set[str]:
    """The project modules `name` imports at run time (`typing_too`: and for mypy)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child) and not typing_too:
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - child.level + 1] + [base]).strip(".")
                found.add(base)
                found.update(f"{base}.{a.name}" for a in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {m for m in found if m in MODULES and m != name and m not in PACKAGES}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}
# With the imports only type checkers follow: a cycle there still ties two modules together.
TYPED_GRAPH = {name: _imports(name, path, typing_too=True) for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]] = GRAPH) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_the_graph_is_read():
    assert "gnod.server.rpc" in GRAPH["gnod.server.handlers"]
    assert "gnod.models.pull" in GRAPH["gnod.server.model_handlers"]  # imported inside a function
    assert "gnod.server.rpc" not in GRAPH["gnod.server.events"]  # only under TYPE_CHECKING


def test_no_import_cycles():
    assert _cycles() == []


def test_no_import_cycles_even_through_type_only_imports():
    assert _cycles(TYPED_GRAPH) == []


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith("gnod.search.")))
def test_search_builds_no_protocol_structs(name):
    """search/ returns plain rows; only server/ builds what goes on the wire."""
    assert "gnod.protocol" not in GRAPH[name]


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith("gnod.server.")))
def test_no_handler_imports_the_app(name):
    """Handlers see the daemon through gnod.server.rpc; only main.py starts the app."""
    if name != "gnod.server.main":
        assert "gnod.server.app" not in GRAPH[name]


# Numbers a search module may keep, as they tune nothing: a limit on what a client may
# send, a guard against dividing by zero, a count the matching rule fixes (a word is its
# own form and its stem; a phrase's run is its words near, and not joined to a longer name).
_NOT_TUNING = {
    "gnod.search.grammar": {"MAX_QUERY_CHARS"},
    "gnod.search.fusion": {"_EPS"},
    "gnod.search.snippet": {"TERMS_PER_WORD", "RUN_BITS"},
}


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith("gnod.search.")))
def test_search_tuning_numbers_live_in_constants(name):
    """Every tuning number of the search is in gnod.search.constants (one place to read
    and change them, printed by `--explain`), not at the top of the module that uses it."""
    if name == "gnod.search.constants":
        return
    numbers = set()
    for node in ast.parse(MODULES[name].read_text()).body:
        target, value = (node.targets[0], node.value) if isinstance(node, ast.Assign) else (None, None)
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and target.id.isupper() and isinstance(value, ast.expr):
            literal = value.operand if isinstance(value, ast.UnaryOp) else value
            if isinstance(literal, ast.Constant) and type(literal.value) in (int, float):
                numbers.add(target.id)
    assert numbers <= _NOT_TUNING.get(name, set())

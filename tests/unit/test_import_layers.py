"""SLAQ's modules import in one direction: no import circle, and the layers of a job's life
(``slaq.names`` <- ``slaq.live`` <- ``slaq.jobs`` <- ``slaq.integrations`` <- ``slaq.runtime`` <- ``slaq.api``)
never import a layer above them, not even from inside a function."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "slaq"
# from the bottom up: each layer may import the ones before it, never one after it
LAYERS = ("slaq.names", "slaq.live", "slaq.jobs", "slaq.integrations", "slaq.runtime", "slaq.api")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    """The slaq modules an import statement in ``module`` loads (a name taken from a package may be a submodule)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    return [base] + [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]


def _with_parents(name: str) -> list[str]:
    """Importing ``a.b.c`` runs ``a``, ``a.b`` and ``a.b.c``: the ones that are slaq modules."""
    parts = name.split(".")
    return [m for m in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if m in MODULES]


def _imports(module: str, at_import: bool) -> set[str]:
    """The slaq modules ``module`` imports when it is imported (``at_import``: module level, TYPE_CHECKING blocks
    left out), or anywhere in it, functions included; a module imported from outside its package runs the package first."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.orelse:
                    visit(stmt)
                continue
            if at_import and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.update(m for name in _imported(child, module) for m in _with_parents(name))
            visit(child)

    visit(ast.parse(MODULES[module].read_text()))
    return found - set(_with_parents(module))  # its own packages ran before it


def _graph(at_import: bool = True) -> dict[str, set[str]]:
    return {m: _imports(m, at_import) for m in MODULES}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (found := walk(n)) is not None:
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := walk(m)) is not None:
            return found
    return None


def _layer(module: str) -> int | None:
    return next((i for i, name in enumerate(LAYERS) if module == name or module.startswith(name + ".")), None)


def test_no_slaq_module_imports_itself_back_through_others():
    assert _cycle(_graph()) is None, " -> ".join(_cycle(_graph()) or [])


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for n in graph[todo.pop()] - seen:
            seen.add(n)
            todo.append(n)
    return seen


def _above(module: str, imported: set[str]) -> list[str]:
    layer = _layer(module)
    return sorted(n for n in imported if layer is not None and (above := _layer(n)) is not None and above > layer)


def test_no_layer_imports_a_layer_above_it_directly_inside_a_function_or_through_another_module():
    anywhere, at_import = _graph(at_import=False), _graph()
    assert {m: _above(m, imports) for m, imports in anywhere.items() if _above(m, imports)} == {}
    assert {m: _above(m, _reachable(at_import, m)) for m in MODULES if _above(m, _reachable(at_import, m))} == {}


def test_the_package_of_the_integrations_imports_none_of_them():
    """``python -m slaq.integrations.catalogue`` runs the catalogue once (a package that imported it would run it twice)."""
    assert _imports("slaq.integrations", at_import=False) == set()


@pytest.mark.parametrize("module", ["slaq.names", "slaq.jobs", "slaq.integrations.hooks", "slaq.runtime", "slaq.api"])
def test_each_layer_imports_first_in_a_fresh_interpreter(module):
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", f"import {module}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_catalogue_prints_its_table_and_nothing_else():
    from slaq.integrations.catalogue import markdown_table

    done = subprocess.run([sys.executable, "-W", "error", "-m", "slaq.integrations.catalogue"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == markdown_table() and done.stderr == "", done.stderr[-2000:]

"""The package's import graph read from the source: no circles, no imports hidden in
functions to dodge one, no private names used across modules, and only the CLI imports
the CLI."""
from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import dspsim

PACKAGE = Path(dspsim.__file__).resolve().parent
#: imports that may wait until a function runs: heavy or optional third-party modules
LAZY_ALLOWED = ("matplotlib", "scipy", "perfetto", "google.protobuf", "distributed",
                "fcntl", "numpy.lib")


def _modules() -> dict[str, Path]:
    """Every module of the package (through its linked top-level folders) by dotted name."""
    found = {}
    for folder, dirs, files in os.walk(PACKAGE, followlinks=True):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = Path(folder) / name
                parts = path.relative_to(PACKAGE).with_suffix("").parts
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                found[".".join(("dspsim",) + parts)] = path
    return found


MODULES = _modules()


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = _package_of(module, path).split(".")
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path):
    """(imported module, name or None, line, at module level) for each import of ``module``;
    an import under ``if TYPE_CHECKING`` counts as module level (it is still an edge)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = set()
    for node in tree.body:
        top.add(node)
        if isinstance(node, ast.If):  # if TYPE_CHECKING: / try-except fallbacks
            top.update(node.body)
        if isinstance(node, ast.Try):
            top.update(node.body)
            for handler in node.handlers:
                top.update(handler.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno, node in top
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path, node)
            for alias in node.names:
                yield target, alias.name, node.lineno, node in top


def _graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (a name that is a submodule counts as
    that submodule)."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for target, name, _line, _top in _imports(module, path):
            if name and f"{target}.{name}" in MODULES:
                edges[module].add(f"{target}.{name}")
            elif target in MODULES:
                edges[module].add(target)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in edges[node]:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _is_package_init(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def test_the_package_is_found_through_its_linked_folders():
    assert {"dspsim.chip", "dspsim.seam", "dspsim.sim.engine.machine",
            "dspsim.kernels.registry"} <= set(MODULES)


def test_no_module_imports_itself_through_others():
    """A package's __init__ re-exporting its modules is not a circle of the modules it
    re-exports, so edges into an __init__ from its own package are left out."""
    edges = {m: {t for t in targets
                 if not (_is_package_init(t) and m.startswith(t + "."))}
             for m, targets in _graph().items()}
    assert _cycles(edges) == []


def test_no_import_is_hidden_inside_a_function():
    hidden = [f"{module}:{line} imports {target}"
              for module, path in MODULES.items()
              for target, _name, line, top in _imports(module, path)
              if not top and not target.startswith(LAZY_ALLOWED)]
    assert hidden == []


def test_only_the_command_line_imports_the_command_line():
    offenders = [f"{module} imports {target}" for module, targets in _graph().items()
                 if not module.startswith(("dspsim.cli", "dspsim.__main__"))
                 for target in targets if target.startswith("dspsim.cli")]
    assert offenders == []


def _defined_names(tree: ast.Module) -> set[str]:
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


#: public methods whose names start with an underscore: the named tuple API
PUBLIC_UNDERSCORED = frozenset({"_replace", "_asdict", "_make"})


def _private(name: str) -> bool:
    return (name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
            and name not in PUBLIC_UNDERSCORED)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_is_used_across_modules(module):
    """``obj._name(...)`` only for a ``_name`` this module defines, and ``from m import
    _name`` only from a module of the same package folder."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = _defined_names(tree)
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if _private(name) and name not in own and not (
                    isinstance(node.func.value, ast.Name) and node.func.value.id in (
                        "self", "cls", "os", "sys")):
                problems.append(f"line {node.lineno}: calls .{name}() defined elsewhere")
    for target, name, line, _top in _imports(module, path):
        if name and _private(name) and target.startswith("dspsim") and \
                target.rpartition(".")[0] != _package_of(module, path):
            problems.append(f"line {line}: imports {name} from {target}")
    assert problems == []

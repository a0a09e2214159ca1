"""The package's layout: layers that import only downwards, no import cycles, no private names
imported across modules, and a one-line summary at the top of every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "motiondetect"

#: Each subpackage's layer: a module may import from its own layer's other packages only when
#: listed in SIDEWAYS, and from any lower layer. (docs/architecture.md draws the same picture.)
LAYERS = {
    "core": 0,
    "gpu": 1,
    "filters": 2,
    "sources": 2,
    "outputs": 2,
    "pipeline": 3,
    "evaluation": 4,
    "scaleout": 4,
    "apps": 5,
}
SIDEWAYS: set[tuple[str, str]] = set()


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    found = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _runtime_imports(tree: ast.Module):
    """ImportFrom / Import nodes, lazy ones included, except those under ``if TYPE_CHECKING:``."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            skipped.update(id(n) for child in node.body for n in ast.walk(child))
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skipped]


def _edges(modules: dict[str, Path] = MODULES) -> dict[str, set[tuple[str, str]]]:
    """module -> {(imported module, imported name or '')}."""
    edges: dict[str, set[tuple[str, str]]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "motiondetect":
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    edges[name].add((target, "") if target in modules else (node.module, alias.name))
            elif isinstance(node, ast.Import):
                edges[name].update((a.name, "") for a in node.names if a.name in modules)
    return edges


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else None


def test_every_module_is_in_a_layer():
    loose = [m for m in MODULES if m.count(".") >= 1 and _layer(m) is None and m not in ("motiondetect.__main__",)]
    assert not loose, f"modules outside the layers {sorted(LAYERS)}: {loose}"


def upward_imports(edges) -> list[str]:
    wrong = []
    for module, targets in edges.items():
        here = _layer(module)
        for target, _ in targets:
            there = _layer(target)
            if here is None or there is None or here == there:
                continue
            if LAYERS[there] > LAYERS[here] or (LAYERS[there] == LAYERS[here] and (here, there) not in SIDEWAYS):
                wrong.append(f"{module} -> {target}")
    return sorted(wrong)


def test_imports_point_down_the_layers():
    wrong = upward_imports(_edges())
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def import_cycle(edges) -> list[str] | None:
    graph = {m: {t for t, _ in targets if t in edges and t != "motiondetect"} for m, targets in edges.items()}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_no_import_cycles():
    cycle = import_cycle(_edges())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_private_names_imported_across_modules():
    private = [f"{m} imports {t}.{n}" for m, targets in _edges().items() for t, n in targets if n.startswith("_") and n != "__version__"]
    assert not private, "\n".join(private)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_starts_with_what_it_holds(module):
    doc = ast.get_docstring(ast.parse(MODULES[module].read_text(encoding="utf-8")))
    assert doc and doc.splitlines()[0].strip(), f"{module}: the first line of its docstring should say what it holds"


def test_the_checks_catch_a_cycle_an_upward_import_and_a_private_name(tmp_path):
    """The same checks on a small package written with each fault (and one type-only import)."""
    files = {
        "motiondetect/__init__.py": "",
        "motiondetect/core/__init__.py": "",
        "motiondetect/core/a.py": "def f():\n    from motiondetect.apps.b import g\n",
        "motiondetect/apps/__init__.py": "",
        "motiondetect/apps/b.py": "from motiondetect.core.a import f\nfrom motiondetect.core.a import _hidden\n",
        "motiondetect/gpu/__init__.py": "",
        "motiondetect/gpu/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from motiondetect.apps.b import g\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    edges = _edges(_modules(tmp_path / "motiondetect"))
    assert upward_imports(edges) == ["motiondetect.core.a -> motiondetect.apps.b"]  # the TYPE_CHECKING one is not counted
    assert import_cycle(edges) == ["motiondetect.apps.b", "motiondetect.core.a", "motiondetect.apps.b"]
    assert ("motiondetect.core.a", "_hidden") in edges["motiondetect.apps.b"]


def test_every_module_has_a_page_in_the_api_reference():
    """The docs' API reference (mkdocstrings ``::: module`` directives) covers every module, so a
    newcomer finds every public class there; a new module needs its line in docs/api/."""
    api = PACKAGE.parent / "docs" / "api"
    documented = {
        line.split(":::", 1)[1].strip() for page in api.glob("*.md") for line in page.read_text().splitlines() if line.startswith(":::")
    }
    wanted = {m for m in MODULES if m.count(".") >= 2 or m == "motiondetect.filters"}  # subpackage __init__s hold no code
    assert not wanted - documented, f"modules missing from docs/api/*.md: {sorted(wanted - documented)}"


def test_the_module_tables_list_every_module():
    """docs/architecture.md's layer table and docs/api/index.md's page table name each module of
    every subpackage (the filters as "one module per filter"), so the map a newcomer reads first
    is whole."""
    docs = PACKAGE.parent / "docs"
    for page in (docs / "architecture.md", docs / "api" / "index.md"):
        rows = [line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
        for package in sorted({m.split(".")[1] for m in MODULES if m.count(".") == 2} - {"filters"}):
            row = next((r for r in rows if f"`{package}`" in r or f"({package}.md)" in r), None)
            assert row is not None, f"{page.name}: no table row for {package}"
            names = {m.split(".")[2] for m in MODULES if m.startswith(f"motiondetect.{package}.") and m.count(".") == 2}
            missing = sorted(n for n in names if f"`{n}`" not in row)
            assert not missing, f"{page.name}: the {package} row lacks {missing}"

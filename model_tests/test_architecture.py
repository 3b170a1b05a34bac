"""The dependency rules of docs/architecture.md, checked on the source itself.

- **No import circles** between project modules (the packages of `PACKAGES`): every
  ``import`` and ``from ... import`` counts, at module level and inside functions alike (a
  function-local import does not break a circle, it only hides it until call time).
- **No private names across modules**: ``from X import _name`` and ``X._name`` are refused
  when X is another project module (a module's own privates and dunder names are fine).
- **No citations outside the repository**: nothing under docs/, spec/, impl/ or
  jepsen_py/ may send a reader to files that are not in it (``shared/...``, the design
  notes kept beside the repository).

Each rule is a function over a source tree, so the tests at the bottom show it able to fail
on a synthetic tree with a two-module circle and a private import.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent

PACKAGES = ("spec", "impl", "jepsen_py", "model_tests", "benchmarks")
"""The top-level packages whose modules form the project's import graph."""

CITATION_ROOTS = ("docs", "spec", "impl", "jepsen_py")
"""Where a citation of a file outside the repository is refused."""

OUTSIDE = re.compile(r"(?<![\w-])shared/|\bDESIGN\.md\b|\bSTYLE\.md\b|reference-models/")
"""A path into the notes kept beside the repository (``../shared/``): the design notes,
the style guide and the reference models; public sources (KIPs, Kafka's docs) are cited
by URL instead."""


@attrs.frozen
class Imported:
    """One import edge: ``source`` imports ``target`` (a project module) at ``line``;
    ``names`` are the names it takes from it."""

    source: str
    target: str
    line: int
    names: tuple[str, ...] = ()


def module_files(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Module name -> file, for every ``.py`` under the packages (``pkg/__init__.py`` is
    the module ``pkg``)."""
    out: dict[str, Path] = {}
    for package in packages:
        base = root / package
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of the dotted ``name`` that is a project module."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _base_of_from(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, *([node.module] if node.module else [])])


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[Imported]:
    """Every import of a project module in ``path``, wherever it stands in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    out: list[Imported] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, modules)
                if target is not None:
                    out.append(Imported(module, target, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            base = _base_of_from(node, module, is_package)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in modules:
                    out.append(Imported(module, submodule, node.lineno))
                    continue
                target = _resolve(base, modules)
                if target is not None:
                    out.append(Imported(module, target, node.lineno, (alias.name,)))
    return out


def _module_aliases(tree: ast.AST, modules: dict[str, Path], module: str, is_package: bool):
    """Local name -> project module, for every name an import binds to a module."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is not None and alias.name in modules:
                    aliases[alias.asname] = alias.name
                elif alias.asname is None:
                    top = alias.name.split(".")[0]
                    if top in modules:
                        aliases[top] = top
        elif isinstance(node, ast.ImportFrom):
            base = _base_of_from(node, module, is_package)
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
    return aliases


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def private_uses(modules: dict[str, Path]) -> list[str]:
    """``from X import _name`` and ``X._name`` where X is another project module, as
    ``source:line: X._name``."""
    found: list[str] = []
    for module, path in sorted(modules.items()):
        for edge in imports_of(module, path, modules):
            for name in edge.names:
                if _is_private(name) and edge.target != module:
                    found.append(f"{module}:{edge.line}: {edge.target}.{name}")
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        aliases = _module_aliases(tree, modules, module, path.name == "__init__.py")
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not _is_private(node.attr):
                continue
            chain = _dotted(node.value)
            if chain is None:
                continue
            head, _, rest = chain.partition(".")
            if head not in aliases:
                continue
            target = aliases[head] + (f".{rest}" if rest else "")
            if target in modules and target != module:
                found.append(f"{module}:{node.lineno}: {target}.{node.attr}")
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for edge in imports_of(module, path, modules):
            if edge.target != module:
                graph[module].add(edge.target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: for each strongly connected component of more than one module,
    one cycle through it (``[a, b, ..., a]``), found by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return [_cycle_through(sorted(c), graph) for c in sorted(components)]


def _cycle_through(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest path from the component's first module back to itself, within it."""
    members = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if w not in previous:
                    previous[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"{component} is not strongly connected")


def citations(root: Path, roots: tuple[str, ...]) -> list[str]:
    """``file:line: text`` of every line under ``roots`` that cites a file outside the
    repository (`OUTSIDE`)."""
    found: list[str] = []
    for top in roots:
        base = root / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if not path.is_file() or path.suffix not in (".py", ".md", ".txt", ".toml"):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for n, line in enumerate(text.splitlines(), start=1):
                if OUTSIDE.search(line):
                    where = path.relative_to(root).as_posix()
                    found.append(f"{where}:{n}: {line.strip()}")
    return found


def _cycle_text(cycle: list[str]) -> str:
    return " -> ".join(cycle)


# --- the project --------------------------------------------------------------------------


def _project() -> dict[str, Path]:
    return module_files(ROOT, PACKAGES)


def test_no_import_circle_between_project_modules() -> None:
    found = [_cycle_text(c) for c in cycles(import_graph(_project()))]
    assert not found, (
        "import circles (each is one path around a circle; move the record both sides "
        "share into a module of its own, or let the lower module stop importing the "
        "upper one):\n  " + "\n  ".join(found)
    )


def test_no_module_imports_another_modules_private_name() -> None:
    found = private_uses(_project())
    assert not found, (
        "private names used across modules (make the name public in its module, with a "
        "docstring, or move what is shared into a module both import):\n  " + "\n  ".join(found)
    )


def test_docs_and_sources_cite_nothing_outside_the_repository() -> None:
    found = citations(ROOT, CITATION_ROOTS)
    assert not found, (
        "citations of files outside the repository (cite the public source instead: a "
        "KIP, Kafka's documentation, or a page under docs/):\n  " + "\n  ".join(found)
    )


# --- the rules can fail -------------------------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return module_files(tmp_path, ("pkg",))


def test_a_two_module_circle_through_a_function_local_import_is_found(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import helper\n",
            "pkg/b.py": "def helper():\n    from pkg import a\n    return a\n",
            "pkg/c.py": "import pkg.a\n",
        },
    )
    assert cycles(import_graph(modules)) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_a_longer_circle_is_reported_as_a_path(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "import pkg.b\n",
            "pkg/b.py": "from . import c\n",
            "pkg/c.py": "if True:\n    from .a import thing\n",
        },
    )
    assert cycles(import_graph(modules)) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]


def test_a_dag_has_no_circle(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import x\n",
            "pkg/a.py": "from pkg.b import y\nx = y\n",
            "pkg/b.py": "y = 1\n",
        },
    )
    assert cycles(import_graph(modules)) == []


def test_private_imports_and_attributes_across_modules_are_found(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "_secret = 1\n__version__ = 2\nuse = _secret\n",
            "pkg/b.py": (
                "from pkg.a import _secret, __version__\n"
                "from pkg import a\n"
                "import pkg.a as alias\n"
                "def f():\n"
                "    return a._secret + alias._secret + a.__version__\n"
            ),
            "pkg/c.py": "import pkg.a\nvalue = pkg.a._secret\n",
        },
    )
    assert private_uses(modules) == [
        "pkg.b:1: pkg.a._secret",
        "pkg.b:5: pkg.a._secret",
        "pkg.b:5: pkg.a._secret",
        "pkg.c:2: pkg.a._secret",
    ]


def test_citations_outside_the_repository_are_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "See ../shared/reference-models/kip101.md.\nSee KIP-101.\n", encoding="utf-8"
    )
    (tmp_path / "docs" / "b.md").write_text("A shared-nothing design.\n", encoding="utf-8")
    assert citations(tmp_path, ("docs",)) == [
        "docs/a.md:1: See ../shared/reference-models/kip101.md."
    ]

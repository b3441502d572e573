"""The import graph of privad: no cycle, and the layer order of docs/architecture.md.

Every module under ``src/privad`` is parsed with :mod:`ast` (nothing is imported), and every
``import``/``from ... import`` in it is an edge, wherever it stands: at module level, inside
a function or method, under ``if TYPE_CHECKING``. ``from privad.a import b`` is an edge to
the module ``privad.a.b`` when that is a module, else to ``privad.a``. Importing a
submodule also runs its package's ``__init__``; that implicit edge is not counted (every
package's ``__init__`` imports its own submodules), but an explicit import of a package
is, so ``privad.search.loop`` importing ``from privad.search import X`` would close a cycle.

The layers are read from the table under "## Layers" in docs/architecture.md (its second
column names each layer's packages), so the document and this test cannot disagree: a
package missing from the table fails here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

# The documented exceptions to the layer order: (importer, imported package, the function
# or method the import stands in) -> the reason. Each must stay inside that function.
EXCEPTIONS: dict[tuple[str, str, str], str] = {
    ("privad.noise.laplace", "privad.accounting", "LaplaceMechanism.guarantee"): (
        "a mechanism states its guarantee as an accounting.Guarantee (a plain frozen "
        "dataclass); imported inside the property, so 'import privad.noise' never needs the "
        "accounting layer and there is no cycle (docs/architecture.md, Layers)"
    ),
}

# The bottom layer is a small ordered foundation (errors <- validation <- io <- base ...):
# its modules import each other. In every other layer the packages are independent: no
# scheme imports another scheme.
FOUNDATION = 0


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    scope: str  # "" at module level, else the enclosing function's qualified name
    line: int
    names: tuple[str, ...]


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / "privad").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _known(name: str) -> str:
    """The longest prefix of ``name`` that is a module of privad."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _walk(node: ast.AST, scope: list[str]) -> Iterator[tuple[ast.AST, str]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield from _walk(child, [*scope, child.name])
        else:
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, ".".join(scope)
            yield from _walk(child, scope)


def _edges(module: str) -> Iterator[Edge]:
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node, scope in _walk(tree, []):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "privad":
                    yield Edge(module, _known(alias.name), scope, node.lineno, ())
            continue
        assert isinstance(node, ast.ImportFrom)
        base = node.module or ""
        if node.level:
            anchor = package
            for _ in range(node.level - 1):
                anchor = anchor.rpartition(".")[0]
            base = f"{anchor}.{base}" if base else anchor
        if base.split(".")[0] != "privad":
            continue
        for alias in node.names:
            target = f"{base}.{alias.name}"
            imported = target if target in MODULES else _known(base)
            yield Edge(module, imported, scope, node.lineno, (alias.name,))


EDGES = [edge for module in MODULES for edge in _edges(module) if edge.imported != module]


def _layers() -> list[list[str]]:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]  # no header
    layers = []
    for row in rows:
        column = row.split("|")[2]
        layers.append(re.findall(r"`(privad(?:\.\w+)?)`", column))
    return layers


LAYERS = _layers()


def _package(module: str) -> str:
    """``privad.x`` of ``privad.x.y.z`` (the root package ``privad`` is itself)."""
    return ".".join(module.split(".")[:2])


def test_the_graph_is_read_from_every_module():
    # a sanity check of the walker itself: imports inside functions and relative ones count
    assert len(MODULES) > 100
    inside = [e for e in EDGES if e.importer == "privad.noise.laplace" and e.scope]
    assert any(e.imported == "privad.accounting.guarantee" for e in inside)
    assert any(e.importer == "privad.cli" and e.imported == "privad.cli.serve" for e in EDGES)
    assert any(e.importer == "privad.cli.sp" and e.imported == "privad.cli._data" for e in EDGES)


def test_no_import_cycle_between_modules():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for edge in EDGES:
        graph[edge.importer].add(edge.imported)
    # Tarjan's strongly connected components, iteratively (the graph has ~120 nodes).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in graph:
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
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    assert cycles == [], f"import cycles: {cycles}"


def test_every_package_has_a_layer_in_the_architecture_document():
    documented = [p for layer in LAYERS for p in layer]
    assert len(documented) == len(set(documented)), f"a package is in two layers: {documented}"
    missing = sorted({_package(m) for m in MODULES} - set(documented))
    assert missing == [], f"add these to the layer table of docs/architecture.md: {missing}"


def test_each_layer_imports_only_the_layers_above_it():
    layer_of = {package: k for k, layer in enumerate(LAYERS) for package in layer}
    violations = []
    used = set()
    for edge in EDGES:
        src, dst = _package(edge.importer), _package(edge.imported)
        if src == dst:
            continue
        up = layer_of[dst] > layer_of[src]
        sideways = layer_of[dst] == layer_of[src] and layer_of[src] != FOUNDATION
        if not (up or sideways):
            continue
        key = (edge.importer, dst, edge.scope)
        if key in EXCEPTIONS:
            used.add(key)
            continue
        where = f"{edge.importer}:{edge.line}" + (f" (in {edge.scope})" if edge.scope else "")
        violations.append(
            f"{where} imports {edge.imported} "
            f"({'a layer below it' if up else 'a package of its own layer'})"
        )
    assert violations == [], "\n".join(violations)
    assert used == set(EXCEPTIONS), f"exceptions no longer needed: {set(EXCEPTIONS) - used}"


def test_no_command_module_is_another_ones_library_of_private_names():
    # privad.cli's command modules (privad.cli.serve, .sp, ...) share what they share
    # through privad.cli._options and the other underscore modules, never through another
    # command module's private names.
    command = re.compile(r"privad\.cli\.[a-z]\w*$")
    bad = [
        f"{e.importer}:{e.line} imports {name} from {e.imported}"
        for e in EDGES
        if command.match(e.imported) and e.importer != e.imported
        for name in e.names
        if name.startswith("_")
    ]
    assert bad == []


def test_no_command_module_imports_another_command_module():
    # A command module (privad.cli.sp, .serve, ...) imports only the library and the shared
    # underscore modules of privad.cli (privad.cli._options, ._data, ...), never a sibling
    # command module, at module level or inside a function.
    command = re.compile(r"privad\.cli\.[a-z]\w*$")
    bad = [
        f"{e.importer}:{e.line} imports {e.imported}"
        for e in EDGES
        if command.match(e.importer) and command.match(e.imported)
    ]
    assert bad == []
    # nor does a shared module import a command module
    shared = re.compile(r"privad\.cli\._\w+$")
    assert [e for e in EDGES if shared.match(e.importer) and command.match(e.imported)] == []

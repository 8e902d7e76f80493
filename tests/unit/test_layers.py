"""The modules of paimon_commit import each other in layers, with no circle.

format -> io -> managers -> reachability -> operations -> table/table_commit -> front ends
(spark, cli): data flows down. An import circle (even one closed by an import inside a
function, which only hides it until that function runs) makes the import order decide what
exists; compaction used to import the table's reader from table.py while table.py imported
compaction. The graph is read from the source (AST): module-level imports, imports inside
functions and `if TYPE_CHECKING:` imports alike."""
from __future__ import annotations

import ast
import os
import textwrap
from typing import Dict, List, Set

import paimon_commit

PACKAGE_DIR = os.path.dirname(paimon_commit.__file__)
ROOT = os.path.dirname(PACKAGE_DIR)

#: The lower layers, and the modules above them they must never import.
LOWER = ("paimon_commit.format", "paimon_commit.io", "paimon_commit.read",
         "paimon_commit.operations")
UPPER = ("paimon_commit.table", "paimon_commit.table_commit",
         "paimon_commit.table_maintenance", "paimon_commit.warehouse",
         "paimon_commit.report", "paimon_commit.report_html", "paimon_commit.spark",
         "paimon_commit.cli", "paimon_commit.__main__")


def modules(root: str, package: str) -> Dict[str, str]:
    """Dotted module name -> file, for every .py file of `package` under `root`."""
    out = {}
    for d, _, files in os.walk(os.path.join(root, package)):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                name = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                out[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


def import_graph(root: str, package: str) -> Dict[str, Set[str]]:
    """module -> the modules of `package` it imports anywhere in its source. `from .x import
    y` counts as importing x.y when y is a module, else x; the implicit import of a parent
    package's __init__ is not counted (every module would then import the root)."""
    mods = modules(root, package)

    def owner(name: str) -> str:
        while name not in mods and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    graph: Dict[str, Set[str]] = {}
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        here = mod.split(".") if path.endswith("__init__.py") else mod.split(".")[:-1]
        deps: Set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                deps.update(owner(a.name) for a in node.names
                            if a.name.split(".")[0] == package)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[:len(here) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != package:
                    continue
                for a in node.names:
                    full = f"{target}.{a.name}"
                    deps.add(full if full in mods else owner(target))
        deps.discard(mod)
        graph[mod] = deps
    return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """One circle (a path back to its start) per strongly connected component of more than
    one module (Tarjan's algorithm, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    components: List[List[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        components.append(comp)
    return [_circle(graph, set(c)) for c in components]


def _circle(graph: Dict[str, Set[str]], comp: Set[str]) -> List[str]:
    """A shortest path from the component's first module back to itself, inside it."""
    start = min(comp)
    paths = {start: [start]}
    todo = [start]
    while todo:
        nxt = []
        for v in todo:
            for w in sorted(graph[v] & comp):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        todo = nxt
    return sorted(comp)   # pragma: no cover - a component always closes


def test_no_import_cycle_in_paimon_commit():
    found = cycles(import_graph(ROOT, "paimon_commit"))
    assert not found, "import circles: " + "; ".join(" -> ".join(c) for c in found)


def test_lower_layers_never_import_the_table_or_the_front_ends():
    graph = import_graph(ROOT, "paimon_commit")
    assert "paimon_commit.operations.compact.rewrite" in graph   # the graph is the package's
    bad = sorted(f"{m} -> {d}" for m, deps in graph.items() if m.startswith(LOWER)
                 for d in deps if d == "paimon_commit" or d.startswith(UPPER))
    assert not bad, "imports going up the layers: " + ", ".join(bad)


def test_a_circle_closed_inside_a_function_is_found(tmp_path):
    """The detector itself: a circle that only a function-level (or TYPE_CHECKING) import
    closes is a circle."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text(textwrap.dedent("""\
        def f():
            from ..c import g
            return g
        """))
    (pkg / "c.py").write_text(textwrap.dedent("""\
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            import pkg.a
        """))
    (pkg / "d.py").write_text("from . import a\nfrom .sub.b import f\n")
    graph = import_graph(str(tmp_path), "pkg")
    assert graph["pkg.a"] == {"pkg.sub.b"} and graph["pkg.d"] == {"pkg.a", "pkg.sub.b"}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]]
    (pkg / "c.py").write_text("")
    assert cycles(import_graph(str(tmp_path), "pkg")) == []

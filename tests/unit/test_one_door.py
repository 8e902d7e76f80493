"""One door for deletions: no raw delete primitive anywhere in paimon_commit/ outside the
storage layer (paimon_commit/io/), and inside it only in the primitives behind the gate.

Every delete under a table root must go through `FileIO.delete_quietly`, `delete_files` or
`delete_empty_dir` (paimon_commit/io/base.py), which check each path first. This test reads
the source (AST, not text: comments and strings do not count) and fails on any call that
removes something without that check.
"""
import ast
import os
import textwrap

import pytest

import paimon_commit

PACKAGE = os.path.dirname(paimon_commit.__file__)
STORAGE = os.path.join(PACKAGE, "io")

# Methods that remove whatever they are called on, whatever the receiver (pathlib, pyarrow.fs,
# os.DirEntry-based helpers, ...). None of these names is used by the library for anything else.
ALWAYS = {"unlink", "rmdir", "rmtree", "removedirs", "delete_file", "delete_dir",
          "delete_dir_contents", "delete_root_dir_contents"}
# Names that delete only when called on (or imported from) these modules: `list.remove` and
# `dict.pop`-like methods are fine, `os.remove` and `obstore.delete` are not.
BY_MODULE = {"os": {"remove", "unlink", "rmdir", "removedirs"},
             "posix": {"remove", "unlink", "rmdir"},
             "shutil": {"rmtree"},
             "obstore": {"delete", "delete_async"}}
# Inside the storage layer: the primitives the gate calls after its check, and the removal
# of a storage's own temp file (checked by the same rules).
STORAGE_PRIMITIVES = {"_unlink", "_unlink_many", "_unlink_in", "_rmdir", "_remove_own_temp"}


def raw_deletes(source: str):
    """(line, call, enclosing function) of every raw delete primitive in `source`."""
    tree = ast.parse(source)
    modules = {}   # local name -> module it is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                modules[a.asname or a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            mod = node.module.split(".")[0]
            for a in node.names:
                if a.name in BY_MODULE.get(mod, ()) or a.name in ALWAYS and mod in BY_MODULE:
                    found.append((node.lineno, f"from {node.module} import {a.name}", None))

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef,
                                                     ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                name = child.func.attr
                recv = child.func.value
                mod = modules.get(recv.id) if isinstance(recv, ast.Name) else None
                if name in ALWAYS or (mod and name in BY_MODULE.get(mod, ())):
                    found.append((child.lineno, f"{ast.unparse(child.func)}(...)", func))
            visit(child, inner)
    visit(tree, None)
    return sorted(found)


def _sources():
    for directory, _, names in os.walk(PACKAGE):
        for n in sorted(names):
            if n.endswith(".py"):
                path = os.path.join(directory, n)
                with open(path, encoding="utf-8") as f:
                    yield path, f.read()


def test_the_scanner_finds_every_kind_of_raw_delete():
    # The scan below can only fail if this finds what it should.
    src = textwrap.dedent("""
        import os, shutil, obstore as ob
        from os import remove
        from shutil import rmtree
        from pathlib import Path
        def f(fs, store, p, items):
            os.remove(p); os.unlink(p); os.rmdir(p); shutil.rmtree(p)
            Path(p).unlink(); fs.delete_file(p); fs.delete_dir(p); ob.delete(store, p)
            items.remove(p)          # a list: fine
            d = {}; d.pop(p, None)   # fine
    """)
    calls = [c for _, c, _ in raw_deletes(src)]
    assert sorted(calls) == sorted(["from os import remove", "from shutil import rmtree", "os.remove(...)",
                     "os.unlink(...)", "os.rmdir(...)", "shutil.rmtree(...)",
                     "Path(p).unlink(...)", "fs.delete_file(...)", "fs.delete_dir(...)",
                     "ob.delete(...)"])


def test_no_raw_delete_outside_the_storage_layer():
    # Regression: demo.py ran shutil.rmtree on a path built from a command-line argument.
    offenders = [f"{os.path.relpath(path, PACKAGE)}:{line}: {call}"
                 for path, src in _sources() if not path.startswith(STORAGE + os.sep)
                 for line, call, _ in raw_deletes(src)]
    assert offenders == []


def test_inside_the_storage_layer_only_the_gated_primitives_delete():
    offenders = [f"{os.path.relpath(path, PACKAGE)}:{line}: {call} in {func}()"
                 for path, src in _sources() if path.startswith(STORAGE + os.sep)
                 for line, call, func in raw_deletes(src) if func not in STORAGE_PRIMITIVES]
    assert offenders == []


@pytest.mark.parametrize("module", ["local", "arrow", "object_store"])
def test_every_primitive_is_behind_the_check(module):
    # The gate's entry points are inherited, never overridden, and each storage's path check
    # is the shared one (no storage has its own, looser, version).
    import importlib
    from paimon_commit.io.base import FileIO
    mod = importlib.import_module(f"paimon_commit.io.{module}")
    classes = [c for c in vars(mod).values()
               if isinstance(c, type) and issubclass(c, FileIO) and c is not FileIO]
    assert classes
    for cls in classes:
        for entry in ("delete_quietly", "delete_files", "delete_empty_dir", "_check_inside",
                      "deletion_refused"):
            assert getattr(cls, entry) is getattr(FileIO, entry), (cls, entry)


def test_the_demo_deletes_only_its_own_table_through_the_gate(tmp_path):
    # Regression: demo.py ran shutil.rmtree on any directory with a schema/ subdirectory,
    # following nothing but deleting everything under it, outside the gate.
    import pyarrow as pa
    from paimon_commit import Table
    from paimon_commit.demo import _remove_previous_run
    schema = pa.schema([("event_id", pa.int64()), ("user", pa.string()),
                        ("amount", pa.float64()), ("dt", pa.string())])
    path = tmp_path / "demo.db" / "events"
    t = Table.create(str(path), schema, ["dt"])
    w = t.new_writer()
    w.write_arrow(pa.table({"event_id": [1], "user": ["u"], "amount": [1.0],
                            "dt": ["2024-01-01"]}, schema=schema))
    with t.new_commit() as c:
        c.commit(w.prepare_commit())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.parquet").write_text("keep")
    os.symlink(elsewhere, path / "dt=2024-01-02")
    _remove_previous_run(str(path))
    assert os.listdir(path) == []
    assert (elsewhere / "precious.parquet").read_text() == "keep"

    other = tmp_path / "other.db" / "t"
    Table.create(str(other), pa.schema([("x", pa.int64())]), [])
    before = sorted(os.listdir(other / "schema"))
    with pytest.raises(SystemExit, match="not the demo's"):
        _remove_previous_run(str(other))
    assert sorted(os.listdir(other / "schema")) == before
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit, match="not a Paimon table"):
        _remove_previous_run(str(tmp_path / "plain"))
    assert (tmp_path / "plain" / "notes.txt").read_text() == "mine"

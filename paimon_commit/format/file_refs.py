"""A manifest decoder that takes only what maintenance needs (FileRef) and skips the rest.

fastavro builds a dict for every record and nested record (stats, keys, ...), ~20 us per
manifest entry here; expiration and orphan cleanup of a 2M-file table read millions of
entries and use ten fields of each. This module compiles, once per writer schema (cached by
its JSON text), a Python function that walks a decompressed block and skips every field it
does not keep: a few microseconds per entry.

Anything it does not recognise (a schema without the required fields, a type it does not
know) makes `compile_reader` return None, and the caller decodes with fastavro as before;
a block that does not decode to exactly its length raises, and the caller reads the file
again with fastavro for the error message.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from .varint import read_long, skip_long

__all__ = ["compile_reader", "compile_list_reader"]


class _Layout(NamedTuple):
    """What one compiled reader keeps: top-level field -> local name, the fields kept of one
    nested record (its field name, field -> local), the locals that must be found, the ones
    read as None when the writer schema lacks them, and make()'s arguments."""
    top: Dict[str, str]
    nested: Optional[Tuple[str, Dict[str, str]]]
    required: Tuple[str, ...]
    optional: Tuple[str, ...]
    args: Tuple[str, ...]


# A manifest entry: FileRef's ten fields.
_ENTRY_LAYOUT = _Layout(
    {"_VERSION": "version", "_KIND": "kind", "_PARTITION": "partition", "_BUCKET": "bucket"},
    ("_FILE", {"_LEVEL": "level", "_FILE_NAME": "file_name", "_FILE_SIZE": "file_size",
               "_EXTRA_FILES": "extra_files", "_EMBEDDED_FILE_INDEX": "embedded",
               "_EXTERNAL_PATH": "external", "_FILE_SOURCE": "source"}),
    ("version", "kind", "partition", "bucket", "level", "file_name", "file_size",
     "extra_files"),
    ("embedded", "external", "source"),
    ("kind", "partition", "bucket", "level", "file_name", "file_size", "extra_files",
     "embedded", "external", "source"))

# A manifest list record: what planners read of it (no partition stats).
_LIST_LAYOUT = _Layout(
    {"_VERSION": "version", "_FILE_NAME": "file_name", "_FILE_SIZE": "file_size",
     "_NUM_ADDED_FILES": "num_added", "_NUM_DELETED_FILES": "num_deleted"},
    None,
    ("version", "file_name", "file_size", "num_added", "num_deleted"),
    (),
    ("file_name", "file_size", "num_added", "num_deleted"))

_cache: Dict[Tuple[bytes, str], Optional[Callable[..., List[Any]]]] = {}


class _Unsupported(Exception):
    pass


def _length_slow(b: bytes, pos: int) -> Tuple[int, int]:
    n, pos = read_long(b, pos)
    if n < 0:
        raise ValueError("negative length")
    return n, pos


def _skip_slow(b: bytes, pos: int) -> int:
    n, pos = _length_slow(b, pos)
    return pos + n


class _Gen:
    def __init__(self) -> None:
        self.lines: List[str] = []
        self.n = 0
        self.named: Dict[str, Any] = {}

    def tmp(self) -> str:
        self.n += 1
        return f"t{self.n}"

    def emit(self, ind: int, line: str) -> None:
        self.lines.append("    " * ind + line)

    def read_long(self, ind: int, target: str) -> None:
        self.emit(ind, "c = b[pos]; pos += 1")
        self.emit(ind, f"if c < 128: {target} = (c >> 1) ^ -(c & 1)")
        # more bytes: the reader entry_codec uses (varint.py), which refuses an overlong
        # long as entry_codec does, so that both read what fastavro reads or neither does
        self.emit(ind, f"else: {target}, pos = _read_long(b, pos - 1)")

    def read(self, ind: int, schema: Any, target: Optional[str]) -> None:
        """Code that reads `schema` at pos into `target` (None: skip it)."""
        if isinstance(schema, str) and schema in self.named:
            schema = self.named[schema]
        if isinstance(schema, list):
            if len(schema) > 63:
                raise _Unsupported("union of more than 63 branches")
            # Branch i is written as the one byte 2i (zigzag varint); any other byte is not
            # a branch (a non-canonical encoding goes to fastavro through the caller).
            self.emit(ind, "c = b[pos]; pos += 1")
            for i, branch in enumerate(schema):
                self.emit(ind, f"{'if' if i == 0 else 'elif'} c == {2 * i}:")
                self.read(ind + 1, branch, target)
                self.emit(ind + 1, "pass")
            self.emit(ind, "else: raise ValueError('bad union index')")
            return
        t = schema["type"] if isinstance(schema, dict) else schema
        if isinstance(t, (dict, list)):
            return self.read(ind, t, target)
        if t == "null":
            if target:
                self.emit(ind, f"{target} = None")
        elif t == "boolean":
            self.emit(ind, f"{target} = b[pos] != 0; pos += 1" if target else "pos += 1")
        elif t in ("int", "long"):
            if target:
                self.read_long(ind, target)
            else:
                # A skipped long is checked too (damage anywhere sends the file to
                # fastavro), inline up to 9 bytes (no long that short is overlong; a call
                # per skipped long made the reader 2x slower); 10 bytes or more: varint.py.
                s = self.tmp()
                self.emit(ind, "if b[pos] < 128: pos += 1")
                self.emit(ind, "else:")
                self.emit(ind + 1, f"{s} = pos")
                self.emit(ind + 1, "while b[pos] > 127: pos += 1")
                self.emit(ind + 1, "pos += 1")
                self.emit(ind + 1, f"if pos - {s} > 9: pos = _skip_long(b, {s})")
        elif t in ("float", "double"):
            if target:
                raise _Unsupported(t)
            self.emit(ind, f"pos += {4 if t == 'float' else 8}")
        elif t in ("bytes", "string"):
            # A length below 64 is one even byte; anything else takes the slow path (which
            # refuses a negative length).
            self.emit(ind, "c = b[pos]")
            if not target:
                self.emit(ind, "if c < 128 and not c & 1: pos += 1 + (c >> 1)")
                self.emit(ind, "else: pos = _skip_slow(b, pos)")
                return
            n = self.tmp()
            self.emit(ind, f"if c < 128 and not c & 1: {n} = c >> 1; pos += 1")
            self.emit(ind, f"else: {n}, pos = _length_slow(b, pos)")
            value = f"b[pos:pos + {n}]"
            if t == "string":
                value = f"str({value}, 'utf-8')"
            self.emit(ind, f"{target} = {value}")
            self.emit(ind, f"pos += {n}")
        elif t == "fixed":
            self.named[schema["name"]] = schema
            if target:
                raise _Unsupported(t)
            self.emit(ind, f"pos += {int(schema['size'])}")
        elif t == "enum":
            self.named[schema["name"]] = schema
            if target:
                raise _Unsupported(t)
            self.read(ind, "long", None)
        elif t == "array":
            self.items(ind, schema["items"], target, None)
        elif t == "map":
            self.items(ind, schema["values"], target, "string")
        elif t == "record":
            self.named[schema["name"]] = schema
            if target:
                raise _Unsupported("record kept whole")
            for f in schema["fields"]:
                self.read(ind, f["type"], None)
        else:
            raise _Unsupported(str(t))

    def items(self, ind: int, items: Any, target: Optional[str], key: Optional[str]) -> None:
        if target and (key or not (items == "string" or (isinstance(items, dict)
                                                          and items.get("type") == "string"))):
            raise _Unsupported("only arrays of strings are kept")
        n, item = self.tmp(), self.tmp()
        if target:
            self.emit(ind, f"{target} = []")
        self.emit(ind, "while True:")
        self.read_long(ind + 1, n)
        self.emit(ind + 1, f"if {n} == 0: break")
        self.emit(ind + 1, f"if {n} < 0:")
        self.emit(ind + 2, f"{n} = -{n}")
        self.read(ind + 2, "long", None)
        self.emit(ind + 1, f"for _ in range({n}):")
        if key:
            self.read(ind + 2, key, None)
        self.read(ind + 2, items, item if target else None)
        if target:
            self.emit(ind + 2, f"{target}.append({item})")
        else:
            self.emit(ind + 2, "pass")
        if target:
            self.emit(ind, f"{target} = tuple({target})")


def _compile(schema: Dict[str, Any], layout: _Layout) -> Callable[..., List[Any]]:
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise _Unsupported("not a record")
    g = _Gen()
    g.named[schema["name"]] = schema
    found = set()
    body = 2
    for f in schema["fields"]:
        name = f["name"]
        if name in layout.top:
            g.read(body, f["type"], layout.top[name])
            found.add(layout.top[name])
        elif layout.nested is not None and name == layout.nested[0]:
            ft = f["type"]
            if isinstance(ft, dict) and ft.get("type") == "record":
                g.named[ft["name"]] = ft
                for ff in ft["fields"]:
                    local = layout.nested[1].get(ff["name"])
                    g.read(body, ff["type"], local)
                    if local:
                        found.add(local)
            else:
                raise _Unsupported(f"{name} is not a record")
        else:
            g.read(body, f["type"], None)
    missing = [r for r in layout.required if r not in found]
    if missing:
        raise _Unsupported(f"missing {missing}")
    defaults = [f"{o} = None" for o in layout.optional if o not in found]
    src = ["def read(b, count, make, check, expected):", "    pos = 0", "    out = []",
           "    append = out.append",
           "    for _ in range(count):"]
    src += ["        " + d for d in defaults]
    src += g.lines
    # check() raises for a version this library does not read; called only for those.
    src += ["        if version != expected: check(version)",
            f"        append(make({', '.join(layout.args)}))",
            "    if pos != len(b): raise ValueError('block not consumed exactly')",
            "    return out"]
    scope: Dict[str, Any] = {"_read_long": read_long, "_skip_long": skip_long,
                             "_length_slow": _length_slow, "_skip_slow": _skip_slow}
    exec(compile("\n".join(src), "<manifest FileRef reader>", "exec"), scope)  # noqa: S102
    return scope["read"]


def _compiled(schema_text: bytes, layout_name: str, layout: _Layout
              ) -> Optional[Callable[..., List[Any]]]:
    key = (schema_text, layout_name)
    if key in _cache:
        return _cache[key]
    try:
        fn: Optional[Callable[..., List[Any]]] = _compile(json.loads(schema_text), layout)
    except (_Unsupported, ValueError, KeyError, TypeError, RecursionError):
        fn = None
    if len(_cache) > 64:
        _cache.clear()
    _cache[key] = fn
    return fn


def compile_reader(schema_text: bytes) -> Optional[Callable[..., List[Any]]]:
    """read(block, count, make, check, expected) for manifests written with this schema
    (make builds a FileRef from the ten fields, check raises for a _VERSION other than
    `expected`), or None when this schema is one to leave to fastavro."""
    return _compiled(schema_text, "entry", _ENTRY_LAYOUT)


def compile_list_reader(schema_text: bytes) -> Optional[Callable[..., List[Any]]]:
    """read(block, count, make, check, expected) for manifest lists written with this
    schema: make(file_name, file_size, num_added_files, num_deleted_files) per record (the
    partition stats are skipped), or None when this schema is one to leave to fastavro."""
    return _compiled(schema_text, "list", _LIST_LAYOUT)

"""docs/safety.md tells only the truth: every test it names exists.

A claim is only as good as the test that fails when it breaks; a renamed or deleted test
would leave the claim standing on nothing. References are `tests/<path>.py::<name>` and
`::<name>` (same file as the reference before it); `name_...` stands for every test with that
prefix (so does `name_*`), a bare `tests/<path>.py` names a whole file, and `test_x.py` alone
is the one test file of that name."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REF = re.compile(r"(tests/[\w/]+\.py)?(?:::\s*([\w\[\]-]+(?:\.\.\.)?))?")


def _test_names(path: Path) -> set:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and
            n.name.startswith("test")}


def _resolve(file: str) -> str:
    """A file named without its directory (`test_soak.py`) is the one test file of that name."""
    if file.startswith("tests/"):
        return file
    found = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob(file))
    return found[0] if len(found) == 1 else f"tests/<{len(found)} files named {file}>"


def references(text: str):
    """(file, test name or None) for every reference in `text`, in order."""
    current = None
    # Backticked spans may be broken across lines ("tests/x.py::\n  test_y"): join them.
    for span in re.findall(r"`([^`]+)`", text, flags=re.S):
        span = re.sub(r"\s+", "", span)
        for m in re.finditer(r"((?:tests/(?:\w+/)*)?test_\w+\.py)|::([\w-]+(?:\.\.\.|\*)?)",
                             span):
            if m.group(1):
                current = _resolve(m.group(1))
                yield current, None
            elif current is not None:
                yield current, m.group(2)


def test_every_test_safety_md_names_exists():
    text = (ROOT / "docs" / "safety.md").read_text()
    missing, checked = [], 0
    names = {}
    for file, name in references(text):
        path = ROOT / file
        if not path.exists():
            missing.append(file)
            continue
        if name is None:
            continue
        names.setdefault(file, _test_names(path))
        checked += 1
        prefix = name[:-3] if name.endswith("...") else name[:-1] if name.endswith("*") else None
        if prefix is not None:
            ok = any(n.startswith(prefix) for n in names[file])
        else:
            ok = name in names[file]
        if not ok:
            missing.append(f"{file}::{name}")
    assert checked > 50, f"only {checked} test references found: is the parser broken?"
    assert not missing, "docs/safety.md names tests that do not exist:\n" + "\n".join(missing)


def test_the_reference_parser_follows_files_and_prefixes():
    text = "`tests/test_a.py::test_x`, `::test_y` and `tests/b/test_b.py::\n  test_z...`"
    assert list(references(text)) == [
        ("tests/test_a.py", None), ("tests/test_a.py", "test_x"), ("tests/test_a.py", "test_y"),
        ("tests/b/test_b.py", None), ("tests/b/test_b.py", "test_z...")]

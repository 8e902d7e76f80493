"""The encoder writes any Python int into Avro "int" fields. For the union ["null", "int"]
_FILE_SOURCE, fastavro (the writer before this change) refuses a value outside int32
("do not match ['null', 'int']"), so such a commit failed before publishing anything; now the
manifest is written and the snapshot published. Avro Java's readInt reads at most 5 bytes:
a value needing 6 (>= 2^34 zigzagged) fails with "Invalid int encoding", and 2^31..2^34 are
silently truncated to another int - a manifest Paimon Java cannot read (or reads wrong).
(For the plain "int" fields _KIND/_BUCKET/_TOTAL_BUCKETS/_LEVEL fastavro never checked the
range either: same bytes as before, not a regression.)

Shown through the public commit API: a caller-built CommitMessage (the writer's own, with
file_source replaced) is committed into a real table in a temp directory."""
import dataclasses
import io
import os
import tempfile

import fastavro
import pyarrow as pa

from paimon_commit import Table
from paimon_commit.format.manifest import _PARSED_ENTRY, encode_manifest

VALUE = 2 ** 35


def main():
    path = os.path.join(tempfile.mkdtemp(), "t")
    t = Table.create(path, pa.schema([("id", pa.int64())]))
    w = t.new_writer()
    w.write_arrow(pa.table({"id": [1, 2, 3]}))
    msgs = w.prepare_commit()
    msgs = [dataclasses.replace(m, new_files=tuple(
        dataclasses.replace(f, file_source=VALUE) for f in m.new_files)) for m in msgs]
    # what fastavro (the previous writer of every manifest) does with these entries
    try:
        from paimon_commit.format.manifest import ManifestEntry, FileKind
        es = [ManifestEntry(FileKind.ADD, m.partition_bytes, m.bucket, m.total_buckets, f)
              for m in msgs for f in m.new_files]
        fastavro.writer(io.BytesIO(), _PARSED_ENTRY, [e.to_record() for e in es],
                        codec="zstandard")
        fastavro_says = "writes it"
    except Exception as x:   # noqa
        fastavro_says = f"refuses: {type(x).__name__}: {str(x)[:90]}"
    try:
        with t.new_commit() as c:
            sid = c.commit(msgs)
        ours = f"published snapshot {sid}"
    except Exception as x:   # noqa
        ours = f"refused: {type(x).__name__}: {str(x)[:120]}"
    print("fastavro:", fastavro_says)
    print("commit:", ours)
    published = []
    mdir = os.path.join(path, "manifest")
    for n in sorted(os.listdir(mdir)) if os.path.isdir(mdir) else []:
        if n.startswith("manifest-") and not n.startswith("manifest-list-"):
            with open(os.path.join(mdir, n), "rb") as f:
                for r in fastavro.reader(f):
                    published.append(r["_FILE"]["_FILE_SOURCE"])
    print("_FILE_SOURCE in the published manifests:", published)
    if os.environ.get("PAIMON_AUDIT_JAVA") == "1":   # Paimon Java 1.0 reads the table
        import sys
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "java"))
        from javaoracle import JavaOracle
        java = JavaOracle()
        try:
            print("Paimon Java reads:", java.read(path).to_pylist())
        except Exception as x:   # noqa
            causes = [ln.strip() for ln in str(x).splitlines() if "Caused by" in ln
                      or "Invalid" in ln]
            print("Paimon Java fails:", type(x).__name__, causes[-1][:300] if causes else
                  str(x)[:300])
        finally:
            java.close()
    if VALUE in published and fastavro_says.startswith("refuses"):
        print(f"FINDING: a manifest with Avro int _FILE_SOURCE = {VALUE} (outside int32; "
              f"fastavro refused it, Avro Java's readInt fails on it) was published")
    else:
        print("NO FINDING")


if __name__ == "__main__":
    main()

"""The encoder accepts fewer value types than fastavro, the writer it replaced: a
DataFileMeta with creation_time as a datetime (fastavro's timestamp-millis conversion wrote
it) or an int-valued float outside -64..63 (fastavro wrote it; the encoder's small-int table
makes 5.0 pass but 1000.0 fail) now fails the commit with a bare TypeError from inside
entry_codec ("unsupported operand type(s) for <<"), naming neither the file nor the field.
Nothing is lost (the commit fails before publishing); the regression is the error.

Shown through the public commit API on a real table in a temp directory."""
import dataclasses
import datetime
import io
import os
import tempfile

import fastavro
import pyarrow as pa

from paimon_commit import Table
from paimon_commit.format.manifest import _PARSED_ENTRY, FileKind, ManifestEntry


def attempt(change):
    path = os.path.join(tempfile.mkdtemp(), "t")
    t = Table.create(path, pa.schema([("id", pa.int64())]))
    w = t.new_writer()
    w.write_arrow(pa.table({"id": [1, 2, 3]}))
    msgs = w.prepare_commit()
    msgs = [dataclasses.replace(m, new_files=tuple(
        dataclasses.replace(f, **change) for f in m.new_files)) for m in msgs]
    es = [ManifestEntry(FileKind.ADD, m.partition_bytes, m.bucket, m.total_buckets, f)
          for m in msgs for f in m.new_files]
    try:
        fastavro.writer(io.BytesIO(), _PARSED_ENTRY, [e.to_record() for e in es],
                        codec="zstandard")
        fa = "writes it"
    except Exception as x:   # noqa
        fa = f"refuses ({type(x).__name__})"
    try:
        with t.new_commit() as c:
            ours = f"commits snapshot {c.commit(msgs)}"
    except Exception as x:   # noqa
        ours = f"fails: {type(x).__name__}: {x}"
    return fa, ours


def main():
    found = []
    for change in ({"creation_time": datetime.datetime(2026, 1, 1, 12, 0)},
                   {"file_size": 5.0}, {"row_count": 3.0},
                   {"file_size": float(os.path.getsize(__file__))}):
        fa, ours = attempt(change)
        print(change, "| fastavro", fa, "| commit", ours)
        # (a clear error naming the field and the file is not a finding; a bare one is)
        if fa == "writes it" and ours.startswith("fails") and \
                not ("data file" in ours and "_" + next(iter(change)).upper() in ours):
            found.append((change, ours))
    if found:
        print(f"FINDING: {len(found)} value(s) fastavro wrote now fail the commit with a "
              f"bare error: {found[0][1]}")
    else:
        print("NO FINDING")


if __name__ == "__main__":
    main()

"""`repair` on tables Paimon Java 1.0 wrote: after a data file is lost, Java reads the repaired
latest snapshot (every row but the lost file's) and commits on top of it; a primary-key
table is refused with one line, untouched."""
import os

import pyarrow.parquet as pq

from test_we_maintain_java import APPEND_COLUMNS, PK_COLUMNS, rows

from paimon_commit import Table
from paimon_commit.cli import main as cli_main


def _ids(table):
    return sorted(table.column("id").to_pylist())


def test_java_reads_and_writes_a_repaired_fixed_bucket_append_table(java, wh, capsys):
    path = str(wh / "fixed")
    java.create_table(path, APPEND_COLUMNS, partition_keys=["dt"],
                      options={"bucket": "2", "bucket-key": "id", "write-only": "true"})
    java.write(path, rows(range(0, 12), "a"))
    java.write(path, rows(range(12, 20), "b"))
    java.create_tag(path, "java-tag")
    t = Table.open(path)
    lost = [f for f in t.live_files() if f.file_name not in
            {g.file_name for g in t.live_files(1)}][0]   # added by snapshot 2
    lost_ids = pq.ParquetFile(lost.path).read(columns=["id"]).column("id").to_pylist()
    os.unlink(lost.path)
    assert cli_main(["repair", path]) == 0
    assert cli_main(["repair", path, "--apply"]) == 0
    out = capsys.readouterr().out
    assert f"committed snapshot 3 (OVERWRITE) without 1 missing data file(s) of snapshot 2: " \
           f"{len(lost_ids)} record(s)" in out
    assert "still broken: snapshot 2, tag java-tag (repair changes no existing" in out
    want = sorted(set(range(20)) - set(lost_ids))
    assert _ids(java.read(path)) == want
    assert _ids(Table.open(path).read_arrow()) == want
    # Java commits on top of the repair snapshot, and reads both.
    java.write(path, rows(range(30, 33), "c"))
    assert _ids(java.read(path)) == sorted(want + [30, 31, 32])
    assert _ids(java.read(path, snapshot_id=3)) == want
    assert Table.open(path).check().broken[-1] == "tag java-tag"


def test_a_java_primary_key_table_is_refused_untouched(java, wh, capsys):
    path = str(wh / "pk")
    java.create_table(path, PK_COLUMNS, partition_keys=["dt"], primary_keys=("id", "dt"),
                      options={"bucket": "1", "write-only": "true"})
    java.write(path, rows(range(0, 6), "a"))
    java.write(path, rows(range(3, 6), "b"))
    t = Table.open(path)
    os.unlink(t.live_files()[0].path)
    before = sorted(os.listdir(os.path.join(path, "snapshot")))
    assert cli_main(["repair", path, "--apply"]) == 2
    _, err = capsys.readouterr()
    assert err.startswith(f"error: cannot repair {path}: it is a primary-key table (fixed "
                          f"bucket, bucket = 1); a data file is one level of its LSM tree")
    assert err.count("\n") == 1
    assert sorted(os.listdir(os.path.join(path, "snapshot"))) == before

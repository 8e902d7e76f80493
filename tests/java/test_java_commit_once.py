"""Paimon Java reads the table a retried notebook cell leaves (commit(msgs, 7) twice, then
with 8, on one commit object): every row once. Before the fix the cell published the same
data file three times and Java refused to read the table."""
import datetime

import pyarrow as pa
import pytest

from javaoracle import sorted_rows
from oracle import pp_read, rows

from paimon_commit import CommitConflictError, Table


SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.date32()), ("hr", pa.int32())])


def make_rows(ids):
    return pa.Table.from_pylist(
        [{"id": i, "dt": datetime.date(2024, 1, 1), "hr": 1} for i in ids], schema=SCHEMA)


def test_java_reads_the_retried_cell_table_once(java, wh):
    path = wh / "t"
    t = Table.create(str(path), SCHEMA, ["dt", "hr"])
    w = t.new_writer()
    w.write_arrow(make_rows([1, 2]))
    msgs = w.prepare_commit()
    with t.new_commit(commit_user="notebook") as c:
        c.commit(msgs, commit_identifier=7)
        c.commit(msgs, commit_identifier=7)
        with pytest.raises(CommitConflictError, match="already committed"):
            c.commit(msgs, commit_identifier=8)
    assert [r["id"] for r in sorted_rows(java.read(str(path)), SCHEMA)] == [1, 2]
    assert [r["id"] for r in rows(pp_read(path))] == [1, 2]


def test_java_reads_an_interrupted_commit_repeated_after_a_compaction_once(java, wh):
    # Issue 25, finding 6: a commit interrupted right after its snapshot 2 was published, whose
    # files a compaction then replaced, was published again by its repeat (snapshot 4): Java
    # and pypaimon read rows 2 and 3 twice. The repeat is now recognised by the files it adds.
    from paimon_commit.io.local import LocalFileIO
    from paimon_commit.store import FileStore

    class InterruptAtHint(LocalFileIO):
        armed = True

        def overwrite_atomic(self, path, data):
            if self.armed and path.endswith("/snapshot/LATEST") and data == b"2":
                self.armed = False
                raise KeyboardInterrupt("injected: Ctrl-C while the LATEST hint is written")
            return super().overwrite_atomic(path, data)

    path = wh / "t"
    t = Table.create(str(path), SCHEMA, ["dt", "hr"])
    w = t.new_writer()
    w.write_arrow(make_rows([1]))
    with t.new_commit() as c:
        c.commit(w.prepare_commit())
    faulty = Table(FileStore.open(str(path), io=InterruptAtHint(str(path))))
    w = faulty.new_writer()
    w.write_arrow(make_rows([2, 3]))
    msgs = w.prepare_commit()
    with pytest.raises(KeyboardInterrupt):
        faulty.new_commit(commit_user="nb").commit(msgs)
    assert t.compact(options={"compaction.min.file-num": "2"}).snapshot_id == 3
    with t.new_commit(commit_user="nb") as c:
        assert c.commit(msgs) == 2
        assert c.last_result.already_committed
    assert Table.open(str(path)).latest_snapshot().id == 3
    assert [r["id"] for r in sorted_rows(java.read(str(path)), SCHEMA)] == [1, 2, 3]
    assert [r["id"] for r in rows(pp_read(path))] == [1, 2, 3]

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

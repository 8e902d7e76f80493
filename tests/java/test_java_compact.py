"""Paimon Java reads tables we compact, every retained snapshot included, and keeps writing
them; we compact tables Java wrote (issue 18, item 4)."""
import pyarrow as pa

from javaoracle import sorted_rows
from oracle import pp_read

from paimon_commit import ExpireConfig, ExpireSnapshots, Table
from paimon_commit.operations.compact import compact_table

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("p", pa.string())])
OPTS = {"target-file-size": "64 kb", "source.split.open-file-cost": "1 b"}


def _rows(ids, p):
    return pa.Table.from_pylist([{"id": i, "name": f"n{i}", "p": p} for i in ids],
                                schema=SCHEMA)


def _write(table, data):
    w = table.new_writer()
    w.write_arrow(data)
    with table.new_commit() as c:
        return c.commit(w.prepare_commit())


def _java_compact(java, path, max_file_num=2):
    """Paimon Java's own compaction of a bucket-unaware append table (a batch run of its
    coordinator, the tasks, one commit). Java 1.0 packs by `compaction.max.file-num`."""
    t = java.table(path, {"compaction.max.file-num": str(max_file_num)})
    coordinator = java.jvm.org.apache.paimon.append.UnawareAppendTableCompactionCoordinator(
        t, False)
    tasks = coordinator.run()
    write = t.store().newWrite("java-compact")
    messages = java._list([tasks.get(i).doCompact(t, write) for i in range(tasks.size())])
    commit = t.newCommit("java-compact")
    try:
        commit.commit(messages)
    finally:
        write.close()
        commit.close()
    return tasks.size()


def _assert_same_everywhere(java, path, pypaimon_upto=None):
    """Java, we (and pypaimon, up to a snapshot: it cannot read manifests Java 1.0 wrote,
    which lack _VALUE_STATS_COLS) read every snapshot alike."""
    t = Table.open(str(path))
    for s in t.snapshots():
        ours = sorted_rows(t.read_arrow(snapshot_id=s.id), SCHEMA)
        assert sorted_rows(java.read(path, snapshot_id=s.id), SCHEMA) == ours, s.id
        if pypaimon_upto is None or s.id <= pypaimon_upto:
            assert sorted_rows(pp_read(path, snapshot_id=s.id), SCHEMA) == ours, s.id
        assert len(ours) == s.total_record_count


def test_java_reads_and_keeps_writing_a_table_we_compacted(java, wh):
    path = wh / "ours"
    t = Table.create(str(path), SCHEMA, ["p"], OPTS)
    ids = []
    for i in range(6):
        for p in ("a", "", None):
            _write(t, _rows(range(i * 100 + len(ids), i * 100 + len(ids) + 5), p))
            ids.extend(range(i * 100 + len(ids), i * 100 + len(ids) + 5))
    r = compact_table(t)
    assert r.snapshot_id == 19 and r.rewritten_files == 18 and r.written_files == 3
    _assert_same_everywhere(java, path)

    # Java appends and compacts on top of our COMPACT snapshot; we then compact again.
    java.write(path, _rows(range(5000, 5005), "a"))
    java.write(path, _rows(range(5005, 5010), "a"))
    assert _java_compact(java, path) >= 1
    assert Table.open(str(path)).latest_snapshot().commit_kind == "COMPACT"
    for i in range(5):
        _write(Table.open(str(path)), _rows(range(6000 + i * 10, 6000 + i * 10 + 3), "a"))
    r2 = compact_table(Table.open(str(path)))
    assert r2.snapshot_id is not None and r2.partitions[0].partition == {"p": "a"}
    _assert_same_everywhere(java, path, pypaimon_upto=19)
    expected = sorted(ids + list(range(5000, 5010))
                      + [6000 + i * 10 + k for i in range(5) for k in range(3)])
    assert sorted(r["id"] for r in java.read(path).to_pylist()) == expected

    # Our expiration then removes what only the old snapshots used; Java still reads it.
    t = Table.open(str(path))
    ExpireSnapshots(t.store, ExpireConfig(retain_min=1, retain_max=1, time_retained_ms=0,
                                          max_deletes=1000)).expire()
    assert sorted(r["id"] for r in java.read(path).to_pylist()) == expected
    _assert_same_everywhere(java, path, pypaimon_upto=0)


def test_we_compact_a_table_java_wrote(java, wh):
    path = wh / "java"
    java.create_table(path, SCHEMA, partition_keys=["p"], options=OPTS)
    for i in range(6):
        java.write(path, _rows(range(i * 10, i * 10 + 10), "x"))
    before = sorted_rows(java.read(path), SCHEMA)
    r = compact_table(str(path))
    assert r.snapshot_id == 7 and r.rewritten_files == 6 and r.written_files == 1
    t = Table.open(str(path))
    (f,) = t.live_files()
    # Java's files carry sequence numbers: ours go on from the first one rewritten.
    assert f.file.file_source == 1 and f.file.row_count == 60
    assert f.file.max_sequence_number - f.file.min_sequence_number == 59
    assert sorted_rows(java.read(path), SCHEMA) == before
    _assert_same_everywhere(java, path, pypaimon_upto=0)
    java.write(path, _rows([100], "x"))
    assert len(java.read(path)) == 61

"""Idea (bad input, duplicate): one commit call handed the same CommitMessage twice (a job
that gathers the messages of its tasks and lists one task twice, e.g. a retried task whose
first report was kept). A plain append checks nothing against the table or within the call
(check_conflicts is False for appends): is the file ADDed twice in one delta? Paimon Java's
FileEntry.mergeEntries refuses a second ADD of one identity ("Trying to add file ... which is
already added"), and readers that do not merge read its rows twice."""
import collections

from common import new_table, SCHEMA
import pyarrow as pa

t = new_table()
w = t.new_writer()
w.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
msgs = w.prepare_commit()
outcome = None
with t.new_commit(commit_user="job") as c:
    try:
        sid = c.commit(list(msgs) + list(msgs), commit_identifier=1)
        outcome = f"published snapshot {sid}"
    except Exception as e:  # noqa
        outcome = f"refused: {type(e).__name__}: {e}"
print("commit:", outcome)
store = t.store
snap = store.snapshots.latest_snapshot()
adds = []
if snap is not None:
    adds = [e.file.file_name for e in store.delta_entries(snap) if e.kind.name == "ADD"] \
        if hasattr(store.delta_entries(snap)[0].kind, "name") else \
        [e.file.file_name for e in store.delta_entries(snap)]
dup = [n for n, k in collections.Counter(adds).items() if k > 1]
print("delta ADD entries:", len(adds), "duplicated:", dup)
print("rows read by read_arrow:", t.read_arrow().num_rows if snap is not None else 0)
if snap is not None:
    print("snapshot totalRecordCount:", snap.total_record_count, "(3 rows written)")
    try:
        from oracle import pp_read, pp_live_file_names   # tests/oracle.py: pypaimon 2.1
        print("pypaimon live files:", pp_live_file_names(t.path, snap.id))
        print("rows read by pypaimon:", pp_read(t.path, snapshot_id=snap.id).num_rows)
    except Exception as e:  # noqa
        print("pypaimon:", type(e).__name__, str(e)[:300])
if dup:
    print("FINDING (duplicate): one call with a message listed twice ADDs the same data "
          "file twice in one snapshot delta")
else:
    print("NO FINDING")

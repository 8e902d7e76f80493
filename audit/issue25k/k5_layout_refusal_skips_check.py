"""_check_data_present skips every entry whose path "cannot be computed here"
(`except (ValueError, PaimonCommitError): continue`), and store.bucket_dir raises
UnsupportedTableError (a PaimonCommitError) for EVERY file of a table whose layout this
library refuses to compute (layout_refusal: e.g. `partition.legacy-name = false` with a
TIMESTAMP partition key, as Java/Flink tables commonly have). On such a table the data check
checks nothing, silently, yet rollback_to goes on: a target whose data files an interrupted
expiration (Java's deletes data first too) removed is made the latest, the intact newer
snapshots are deleted, and the table no longer reads. (check/expire/orphan cleanup refuse such
a table up front; rollback_to neither refuses nor says it could not check.)"""
import datetime, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa

S = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us"))])
t = new_table("t", KEEP, schema=S, partition_keys=["ts"])
root = t.store.root
ts = datetime.datetime(2024, 1, 1, 0)
write_rows(t, {"id": [1], "ts": [ts]}, schema=S)                        # snapshot 1
t = Table.open(root)
w = t.new_writer(); w.write_arrow(pa.table({"id": [2], "ts": [ts]}, schema=S))
with t.new_commit(commit_user="u") as c:                                # snapshot 2: overwrite
    c.overwrite(w.prepare_commit())
write_rows(Table.open(root), {"id": [3], "ts": [ts]}, schema=S)         # snapshot 3
t = Table.open(root)
only1 = [f for f in t.live_files(1) if f.file_name not in {g.file_name for g in t.live_files()}]
print("snapshot 1 rows:", t.read_arrow(snapshot_id=1).num_rows if hasattr(t, "read_arrow") else "?")
# The table's schema says partition.legacy-name = false (a Java-written table's option):
edit_schema_options(root, **{"partition.legacy-name": "false"})
print("layout refusal:", Table.open(root).store.layout_refusal())
# What an expiration of snapshot 1 stopped after its data step leaves: snapshot 1's file,
# its lists and manifests, and not its data file (dropped by the overwrite in snapshot 2).
os.unlink(only1[0].path)
print("deleted (as the stopped expiration did):", os.path.relpath(only1[0].path, root))
try:
    r = Table.open(root).rollback_to(snapshot_id=1)
    print("rollback_to(1) succeeded: deleted", r.deleted_snapshots,
          "latest", Table.open(root).latest_snapshot().id)
    latest = Table.open(root).latest_snapshot().id
    gone = not os.path.exists(only1[0].path)
    # (reading it back: the option put back as the files were written, the table read)
    edit_schema_options(root, **{"partition.legacy-name": "true"})
    print("read of the latest now:", rows(root))
    if latest == 1 and gone:
        print(f"FINDING: on a table whose layout this library refuses, rollback_to checked no "
              f"data file and made snapshot 1 the latest; its data file "
              f"{os.path.relpath(only1[0].path, root)} is gone (intact snapshots "
              f"{r.deleted_snapshots} deleted)")
    else:
        print("OK: the latest's data files are all there")
except Exception as e:
    print(f"OK: refused: {type(e).__name__}: {e}")

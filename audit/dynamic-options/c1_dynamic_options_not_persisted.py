"""C1 (check, expected NO FINDING): a handle opened with dynamic options writes them nowhere:
after commits, a compaction, a tag, snapshot expiration, orphan cleanup and a rollback through
the handle, the schema directory holds the same bytes and no snapshot/tag/changelog file
contains an option value."""
import os
import common  # noqa: F401
from common import Table, SCHEMA, new_path, write

MARK = "dyn-marker-7f3a"
p = new_path()
Table.create(p, SCHEMA, partition_keys=["p"], options={"write-only": "true"})
schema_before = {n: open(os.path.join(p, "schema", n), "rb").read()
                 for n in os.listdir(os.path.join(p, "schema"))}
h = Table.open(p, options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
                           "snapshot.time-retained": "1 ms", "tag.default-time-retained": "1 d",
                           "my.engine.option": MARK, "data-file.prefix": "dyn-",
                           "snapshot.clean-empty-directories": "true"})
for i in range(6):
    write(h, [i], "a")
h.compact(options={"compaction.min.file-num": "2"})
h.create_tag("t")
write(h, [9], "a")
h.expire_snapshots()
h.remove_orphan_files(older_than=None, dry_run=True)
h.rollback_to(tag="t")
schema_after = {n: open(os.path.join(p, "schema", n), "rb").read()
                for n in os.listdir(os.path.join(p, "schema"))}
leaks = [os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs
         if not f.endswith(".parquet") and MARK.encode() in open(os.path.join(d, f), "rb").read()]
print("schema unchanged:", schema_before == schema_after, "files holding the marker:", leaks)
print("rows:", Table.open(p).read_arrow().num_rows)
print("NO FINDING" if schema_before == schema_after and not leaks else "FINDING REPRODUCED")

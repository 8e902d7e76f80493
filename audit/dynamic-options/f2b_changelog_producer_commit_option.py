"""F2b: the same as F2 through a commit's options (Table.new_commit(options=...), also what
Spark's per-write .option('changelog-producer', ...) becomes): the post-commit expiration
deletes the files and delta lists the retained changelogs read. Not new in 214537c."""
import os
import common  # noqa: F401
import pyarrow as pa
from common import Table
from f2_changelog_producer_on_append_table import build, broken_changelogs

path, _ = build()
t = Table.open(path)
w = t.new_writer()
w.write_arrow(pa.table({"id": pa.array([99], pa.int64()), "p": pa.array(["a"])}))
with t.new_commit("audit", options={"write-only": "false", "changelog-producer": "input"}) as c:
    c.commit(w.prepare_commit())
bad = broken_changelogs(path)
print("changelogs:", sorted(os.listdir(os.path.join(path, "changelog"))), "broken:", bad[:3])
print("FINDING REPRODUCED" if bad else "NO FINDING")

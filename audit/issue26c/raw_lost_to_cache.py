"""Note (performance, not data): the raw-DELETE speed-up depends on which reader filled
ManifestIO's cache first. A post-commit compaction (TableCommit with
compaction.post-commit.enabled) runs on the committer's FileStore, whose cache already holds
the manifests decoded without raw bytes by the commit's own reads: its DELETEs are then encoded
field by field, as before 28ce9c8. Conversely a keep_raw read leaves every later reader of that
store holding _raw (a fifth more memory per cached entry). Counts DELETEs written with raw."""
import os, sys, tempfile
sys.path.insert(0, "tests")
from conftest import SCHEMA, make_rows
from paimon_commit import Table
from paimon_commit.format import entry_codec as ec
from paimon_commit.format.manifest import FileKind

seen = {"raw": 0, "plain": 0}
orig = ec.encode_entries
def counting(entries, codec, header):
    for e in entries:
        if e.kind == FileKind.DELETE:
            seen["raw" if e._raw is not None else "plain"] += 1
    return orig(entries, codec, header)
ec.encode_entries = counting
import paimon_commit.format.manifest as M
M.encode_entries = counting

def run(post_commit):
    seen.update(raw=0, plain=0)
    path = os.path.join(tempfile.mkdtemp(), "db.db", "t")
    opts = {"target-file-size": "64 kb", "source.split.open-file-cost": "1 b"}
    if post_commit:
        opts["compaction.post-commit.enabled"] = "true"
    t = Table.create(path, SCHEMA, partition_keys=["dt", "hr"], options=opts)
    with t.new_commit(commit_user="job") as c:
        for i in range(8):
            w = t.new_writer(); w.write_arrow(make_rows(range(i * 10, i * 10 + 10)))
            c.commit(w.prepare_commit(), i)
    if not post_commit:
        Table.open(path).compact()
    print(f"post_commit={post_commit}: DELETEs written {seen}")
run(False)
run(True)

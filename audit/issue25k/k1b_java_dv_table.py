"""k1 on a real Paimon Java primary-key table with deletion vectors (needs a JVM; the
tests/java oracle). Java's non-full compaction upgrades a small level-0 file and writes a new
deletion-vector index file: the data files of snapshot 5 all stay live in snapshot 6, only
its DV index file is replaced. Our expiration of 1..5 (keep 6) whose delete of an index
manifest fails stops after its index-file step: snapshot 5's data files are all there, its
DV file is gone. rollback_to(5) accepts it (the data check looks at data files only),
deletes snapshot 6, and Java can no longer read the table."""
import os, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
sys.path.insert(0, os.path.join(ROOT, "tests", "java"))
from javaoracle import JavaOracle

j = JavaOracle()
try:
    base = tempfile.mkdtemp(prefix="audit25k-")
    path = os.path.join(base, "wh", "db.db", "t")
    os.makedirs(os.path.dirname(path))
    j.create_table(path, [("id", "BIGINT NOT NULL"), ("v", "STRING")], primary_keys=("id",),
                   options={"bucket": "1", "deletion-vectors.enabled": "true",
                            "write-only": "true",
                            "compaction.max-size-amplification-percent": "100000", **KEEP})
    def rows_(ids, tag):
        return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]})
    j.write(path, rows_(list(range(1000)), "a"))           # 1
    j.compact(path)                                        # 2 (max level)
    j.write(path, rows_(list(range(0, 1000, 2)), "b"))     # 3
    j.compact(path, full=False)                            # 4: upgrade + DV file A
    j.write(path, rows_([1, 3], "c"))                      # 5
    j.compact(path, full=False)                            # 6: upgrade + DV file B
    t = Table.open(path)
    s5, s6 = t.store.snapshots.snapshot(5), t.store.snapshots.snapshot(6)
    dv5 = t.store.manifests.read_index_file_names(s5.index_manifest)
    dv6 = t.store.manifests.read_index_file_names(s6.index_manifest)
    same_data = {f.file_name for f in t.live_files(5)} <= {f.file_name for f in t.live_files(6)}
    print("snapshot 5 DV files", dv5, "snapshot 6 DV files", dv6,
          "snapshot 5's data all live in 6:", same_data)
    want5 = j.read(path, snapshot_id=5).num_rows
    print("Java reads snapshot 5:", want5, "rows")

    io = t.store.io
    real_dq = io.delete_quietly
    io.delete_quietly = lambda p: False if "index-manifest-" in p else real_dq(p)
    io.delete_files = lambda ps: [p for p in ps if io.delete_quietly(p)]
    r = expirer(t, 1).expire()
    print("expire (index manifest delete fails):", r.expired_ids, r.skipped[:1])
    gone = [n for n in dv5 if not os.path.exists(os.path.join(path, "index", n))]
    print("snapshot 5's DV files gone:", gone)
    try:
        res = Table.open(path).rollback_to(snapshot_id=5)
        print("rollback_to(5) succeeded: deleted", res.deleted_snapshots)
        try:
            got = j.read(path).num_rows
            print("Java reads the latest:", got)
            ok = got == want5
        except Exception as e:
            print("Java read of the latest fails:", type(e).__name__, str(e)[:300])
            ok = False
        if not ok:
            print("FINDING: rollback_to made snapshot 5 the latest although its deletion-vector "
                  f"file {gone} is gone; Java no longer reads the table (snapshot 6 deleted)")
        else:
            print("OK: Java still reads the rolled-back table")
    except ValueError as e:
        print("OK: refused:", e)
finally:
    j.close()

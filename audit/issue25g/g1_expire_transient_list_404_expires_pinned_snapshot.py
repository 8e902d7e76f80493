"""Idea (brief item 1): `ExpireSnapshots._past_half_expired` moves the first kept snapshot
past one whose manifest list the storage says is absent, whatever retain-min, the time
retention or a consumer say. It concludes "half expired" from ONE storage answer, with no second
look (a listing of manifest/, a re-read): a transient 404 (an S3-compatible store with
eventual read-after-write / a stale negative cache, an HDFS failover, an NFS lookup miss) on a
healthy list makes the plan larger -- against design.md "Read tolerantly, delete
conservatively. A partial view makes a plan smaller, never larger."

Set-up: snapshots 1 (append), 2 (append), 3 (overwrite: drops the files of 1 and 2),
4 (append). Two cases:
- "consumer": a consumer whose next snapshot is 2 (a streaming reader has not read 2 yet);
  expire-snapshots with retain-min 1, retain-max 1 must keep 2 (the consumer);
- "retention": no consumer; retain-min 3, retain-max 3 keep 2, 3 and 4.
Either way the run must expire only [1] (the dry run without a hiccup says so).

Two seams for the one false answer about snapshot 2's base manifest list, every other call
real: "read" (a read of it raises FileNotFoundError: how the first version of
_past_half_expired asked) and "exists" (the HEAD says it is absent: how _missing_list asks
since 04114d0)."""
import sys

import pyarrow as pa

from common import new_table, write, SCHEMA
from paimon_commit import Table
from paimon_commit.tags import ConsumerManager


def build():
    t = new_table(options={"snapshot.num-retained.min": "1000"})   # no post-commit expiry
    write(t, 0)          # 1
    write(t, 10)         # 2
    w = t.new_writer()
    w.write_arrow(pa.table({"id": [100], "v": ["x"]}, schema=SCHEMA))
    with t.new_commit(commit_user="u") as c:
        c.overwrite(w.prepare_commit())   # 3: the files of 1 and 2 are deleted in its delta
    write(t, 200)        # 4
    return t


def run(case, seam):
    t = build()
    if case == "consumer":
        ConsumerManager(t.store.io, t.store.root).write("stream-1", 2)
        retain_min, retain_max = 1, 1
    else:
        retain_min, retain_max = 3, 3
    rows2_before = Table.open(t.path).read_arrow(snapshot_id=2).num_rows
    control = Table.open(t.path).expire_snapshots(retain_min=retain_min, retain_max=retain_max,
                                                  dry_run=True)
    h = Table.open(t.path)
    list_path = h.store.manifests.path(h.snapshot(2).base_manifest_list)
    io = h.store.io
    hiccups = []
    if seam == "read":
        real = io.read_bytes

        def flaky(path, *a, **kw):
            if path == list_path and not hiccups:
                hiccups.append(path)
                raise FileNotFoundError(f"{path} (transient 404)")
            return real(path, *a, **kw)
        io.read_bytes = flaky
    else:
        real = io.exists

        def flaky(path, *a, **kw):
            if path == list_path and not hiccups:
                hiccups.append(path)
                return False   # (a HEAD answering 404 for a healthy object)
            return real(path, *a, **kw)
        io.exists = flaky
    try:
        r = h.expire_snapshots(retain_min=retain_min, retain_max=retain_max)
        outcome = f"expire reported success: expired {r.expired_ids}"
    except Exception as e:  # noqa: BLE001
        outcome = f"expire raised {type(e).__name__}: {e}"[:300]
    finally:
        if seam == "read":
            io.read_bytes = real
        else:
            io.exists = real
    print(f"[{case}/{seam}] control (no hiccup, dry run) would expire: {control.expired_ids}")
    print(f"[{case}/{seam}] {outcome}; false 404s injected: {len(hiccups)}")
    print(f"[{case}/{seam}] snapshots now:",
          sorted(Table.open(t.path).store.snapshots.list_snapshot_ids()))
    try:
        n = Table.open(t.path).read_arrow(snapshot_id=2).num_rows
        reads = f"{n} rows (had {rows2_before})"
    except Exception as e:  # noqa: BLE001
        n, reads = None, f"{type(e).__name__}: {str(e)[:200]}"
    print(f"[{case}/{seam}] snapshot 2 reads:", reads)
    return (2 not in control.expired_ids and hiccups and n != rows2_before
            and "raised" not in outcome)


found = [f"{case}/{seam}" for case in ("consumer", "retention") for seam in ("read", "exists")
         if run(case, seam)]
if found:
    print(f"FINDING ({', '.join(found)}): one false 404 on a healthy manifest list made "
          "_past_half_expired expire snapshot 2, which a consumer or the retention still "
          "keeps; its files dropped by snapshot 3 were deleted and the run reported success")
    sys.exit(1)
print("NO FINDING")
sys.exit(0)

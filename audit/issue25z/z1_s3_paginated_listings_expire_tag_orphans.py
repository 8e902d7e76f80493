"""z1: moto S3, every directory maintenance lists holding more than one LIST page (1,000
keys): 1,010 foreign keys sorted *before* the table's own names in snapshot/,
manifest/ and the data bucket directory, so every real snapshot, tag, manifest and data
file is on the second page. Then expiration (retain 2, tag T2 on 2 keeps its files),
delete_tag T2, orphan cleanup (allow_recent_cutoff, 1 ms: moto's mtimes are now). Every
retained snapshot reads; files only expired roots used are gone; the foreign data-dir keys
are removed by orphan cleanup (listed across pages)."""
import time
from common import *  # noqa: F401,F403
from conftest import SCHEMA, make_rows, write
from paimon_commit import Table

t0 = time.time()
server, client, bucket = moto_bucket()
try:
    uri = f"s3://{bucket}/db.db/t"
    t = Table.create(uri, SCHEMA, ["dt", "hr"], {"snapshot.num-retained.min": "1",
                                                  "write-only": "true"})
    for i in range(1, 7):
        write(t, make_rows([i]))
    t.create_tag("T2", 2)
    t.compact()  # a compaction: 1..6 rewritten into one file; T2 keeps 1, 2
    write(t, make_rows([7]))
    keys = s3_keys(client, bucket, "db.db/t/")
    data_dir = next(k.rsplit("/", 1)[0] for k in keys if k.endswith(".parquet"))
    foreign = [f"db.db/t/{d}/a-{i:05d}" for d in ("snapshot", "manifest")
               for i in range(1010)] + [f"{data_dir}/a-{i:05d}.orc" for i in range(1010)]
    put_many(client, bucket, foreign)
    print("keys:", len(s3_keys(client, bucket, "db.db/t/")), f"({time.time() - t0:.1f} s)")
    t = Table.open(uri)
    before = {s.id: sorted(t.read_arrow(snapshot_id=s.id).column("id").to_pylist())
              for s in t.snapshots()}
    print("snapshots before:", before)
    r = t.expire_snapshots(retain_max=2)
    t = Table.open(uri)
    after = {s.id: sorted(t.read_arrow(snapshot_id=s.id).column("id").to_pylist())
             for s in t.snapshots()}
    tag = sorted(t.read_arrow(tag="T2").column("id").to_pylist())
    print("after expire:", after, "T2:", tag)
    problems = []
    latest = max(before)
    for sid in after:
        if after[sid] != before[sid]:
            problems.append(f"snapshot {sid} reads {after[sid]} not {before[sid]}")
    if sorted(after) != [latest - 1, latest]:
        problems.append(f"retained {sorted(after)}")
    if tag != [1, 2]:
        problems.append(f"T2 reads {tag}")
    t.delete_tag("T2")
    t = Table.open(uri)
    o = t.remove_orphan_files(older_than_duration="1 ms", allow_recent_cutoff=True)
    t = Table.open(uri)
    final = {s.id: sorted(t.read_arrow(snapshot_id=s.id).column("id").to_pylist())
             for s in t.snapshots()}
    print("after delete_tag + orphans:", final)
    for sid in final:
        if final[sid] != before[sid]:
            problems.append(f"after orphans: snapshot {sid} reads {final[sid]}")
    left = set(s3_keys(client, bucket, "db.db/t/"))
    data_left = sorted(k for k in left if k.startswith(data_dir + "/"))
    foreign_data_left = [k for k in data_left if "/a-" in k]
    print("data dir after:", len(data_left), "keys; foreign left:", len(foreign_data_left))
    real_data = [k for k in data_left if k.endswith(".parquet")]
    print("parquet left:", len(real_data))
    if len(real_data) != 2:   # the compacted file (1..6) and row 7's
        problems.append(f"parquet files left in the data dir: {real_data}")
    print("foreign in snapshot/tag/manifest left:",
          sum(1 for k in left if "/a-" in k and not k.startswith(data_dir)))
    snaps = sorted(k.rsplit("/", 1)[1] for k in left if "/snapshot/snapshot-" in k)
    print("snapshot keys:", snaps)
    if snaps != ["snapshot-7", "snapshot-8"]:
        problems.append(f"snapshot keys left: {snaps}")
    print(f"{time.time() - t0:.1f} s")
    print("FINDING: " + "; ".join(problems) if problems else "OK")
finally:
    server.stop()

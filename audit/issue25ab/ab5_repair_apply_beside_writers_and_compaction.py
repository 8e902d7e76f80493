"""ab5: `repair(apply=True)` while two writers commit (one of them with post-commit
compaction and expiration, skipped or waiting while repair holds the lease) and a
compaction runs, on a table one of whose data files (rows 0..2) is gone (the first live file of the latest snapshot). Then: the latest
snapshot holds every committed row exactly once except the lost file's; repair gave up only
that file; check finds nothing broken but the snapshots that named it."""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa

OPTS = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "4",
        "snapshot.time-retained": "1 ms", "compaction.post-commit.enabled": "true",
        "compaction.min.file-num": "3"}
problems, out = [], {}
for rnd in range(3):
    t = new_table("r", OPTS)
    root = t.store.root
    for k in range(0, 4):
        write(Table.open(root), 10 * k)
    import pyarrow.parquet as pq
    victim = sorted(os.path.join(root, "bucket-0", f.file_name)
                    for f in Table.open(root).live_files())[0]
    lost_ids = pq.read_table(victim).column("id").to_pylist()
    os.remove(victim)
    committed, errs = [], []

    def writer(user, base):
        try:
            for i in range(8):
                write(Table.open(root), base + 10 * i, commit_user=user)
                committed.extend(range(base + 10 * i, base + 10 * i + 3))
        except Exception as e:  # noqa
            errs.append(f"{user}: {type(e).__name__}: {str(e)[:150]}")

    def compactor():
        for _ in range(3):
            try:
                Table.open(root).compact()
            except Exception as e:  # noqa
                errs.append(f"compact: {type(e).__name__}: {str(e)[:100]}")

    ths = [threading.Thread(target=writer, args=("A", 1000)),
           threading.Thread(target=writer, args=("B", 5000))]
    if rnd == 2:
        ths.append(threading.Thread(target=compactor))
    for th in ths:
        th.start()
    try:
        rp = Table.open(root).repair(apply=True)
        out[rnd] = (rp.snapshot_id, [os.path.basename(getattr(p, "path", str(p))) for p in rp.files])
    except Exception as e:  # noqa
        out[rnd] = f"{type(e).__name__}: {str(e)[:150]}"
    for th in ths:
        th.join()
    want = sorted(x for x in list(range(0, 3)) + list(range(10, 13)) + list(range(20, 23)) +
                  list(range(30, 33)) + committed if x not in lost_ids)
    got = ids(root)
    if isinstance(got, str):          # repair refused/lost: run it again, no writers
        rp = Table.open(root).repair(apply=True)
        got = ids(root)
    if got != want:
        problems.append(f"round {rnd}: latest {got if isinstance(got, str) else len(got)} != "
                        f"{len(want)} rows; dupes {dupes(got) if isinstance(got, list) else '-'}; "
                        f"missing {sorted(set(want) - set(got if isinstance(got, list) else []))[:10]}")
    if [e for e in errs if not e.startswith("compact")]:
        problems.append(f"round {rnd}: writer errors {errs}")
    chk = Table.open(root).check()
    latest = Table.open(root).latest_snapshot().id
    if any(b == f"snapshot {latest}" for b in chk.broken):
        problems.append(f"round {rnd}: latest broken after repair: {chk.broken}")
    print(f"round {rnd}: repair {out[rnd]}; errors {errs[:2]}; broken {list(chk.broken)[:4]}")
print(f"FINDING: {problems}" if problems else "OK")

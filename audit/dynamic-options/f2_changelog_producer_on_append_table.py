"""F2: a dynamic 'changelog-producer' on an APPEND table (Paimon refuses it there: 'Can not
set changelog-producer on table without primary keys', SchemaValidation, also for dynamic
options) is accepted by Table.open(options=...). Snapshot expiration through that handle then
treats the table as one whose changelogs are read from changelog lists: with a decoupled
changelog lifecycle it deletes the APPEND data files (and delta manifest lists) that the
long-lived changelogs it creates still read. The same expiration through a plain handle keeps
them. Every changelog/changelog-N left must have its delta list and the data files it adds."""
import os
import time
import common  # noqa: F401
from common import Table, SCHEMA, new_path, write
from paimon_commit.format.snapshot import Snapshot

OPTS = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
        "snapshot.time-retained": "1 ms", "snapshot.expire.limit": "100",
        "changelog.num-retained.min": "50", "changelog.num-retained.max": "50",
        "changelog.time-retained": "1 d", "write-only": "true"}


def build():
    path = new_path()
    Table.create(path, SCHEMA, partition_keys=["p"], options=OPTS)
    t = Table.open(path)
    for i in range(5):
        write(t, [i], "a")
    r = t.compact(options={"compaction.min.file-num": "2"})   # DELETEs the 5 APPEND files
    write(t, [10], "a")
    write(t, [11], "a")
    time.sleep(0.01)
    return path, r


def broken_changelogs(path):
    """Changelogs whose delta list, or a data file their delta ADDs, is missing."""
    t = Table.open(path)
    st, bad = t.store, []
    d = os.path.join(path, "changelog")
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not name.startswith("changelog-"):
            continue
        s = Snapshot.from_json(open(os.path.join(d, name), "rb").read(), name)
        try:
            entries = st.delta_entries(s)
        except Exception as e:   # noqa: BLE001
            bad.append(f"{name}: delta list unreadable ({type(e).__name__})")
            continue
        for e in entries:
            if e.kind == 0 and not os.path.exists(st.data_file_path(e)):
                bad.append(f"{name}: data file {e.file.file_name} gone")
    return bad


if __name__ == "__main__":
    for label, opts in [("plain handle", None),
                        ("changelog-producer=input", {"changelog-producer": "input"})]:
        path, r = build()
        t = Table.open(path, options=opts)
        res = t.expire_snapshots()
        bad = broken_changelogs(path)
        n = sum(f.endswith(".parquet") for _, _, fs in os.walk(path) for f in fs)
        print(f"{label}: {n} data files left (of 8: the 5 APPEND files the compaction "
              f"replaced, which the changelogs read, and 3 live)")
        print(f"{label}: compact snapshot {r.snapshot_id}; expired "
              f"{res.to_dict().get('expired_snapshots')}; changelogs "
              f"{sorted(os.listdir(os.path.join(path, 'changelog')))}; broken: {bad}")
        if label != "plain handle":
            print("FINDING REPRODUCED" if bad else "NO FINDING")

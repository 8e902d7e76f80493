"""C5 (check): within the spaced snapshot-file step an interrupt (request_stop, as SIGINT /
SIGTERM do) is still honoured before every file; and the lease guard runs at least every
GUARD_EVERY_FILES files (a lease broken after the first snapshot file of a 100-snapshot run
stops it within 32 files, EARLIEST right, rows all readable, rerun completes)."""
import os

from common import Table, break_lease, new_table, write, ls

import paimon_commit.io.deletion as deletion
from paimon_commit.io.local import LocalFileIO
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots

CFG = ExpireConfig(retain_min=1, retain_max=1, time_retained_ms=0, max_deletes=1000)
unlink = LocalFileIO._unlink


def run(n, on_first):
    t = new_table()
    path = t.path if hasattr(t, "path") else t.store.root
    for i in range(n):
        write(t, i)
    gone = []

    def hooked(self, norm):
        r = unlink(self, norm)
        if "/snapshot/snapshot-" in norm:
            gone.append(os.path.basename(norm))
            if len(gone) == 1:
                on_first(path)
        return r
    LocalFileIO._unlink = hooked
    try:
        r = ExpireSnapshots(Table.open(path).store, CFG).expire()
    finally:
        LocalFileIO._unlink = unlink
        deletion.clear_stop()
    snaps = [n for n in ls(path, "snapshot") if n.startswith("snapshot-")]
    hp = os.path.join(path, "snapshot", "EARLIEST")
    hint = open(hp).read() if os.path.exists(hp) else "(none written)"
    ids = sorted(Table.open(path).read_arrow().column("id").to_pylist())
    print(f"  deleted snapshot files {len(gone)}, result complete={r.complete} "
          f"stopped_by={r.stopped_by}, snapshots left {len(snaps)} (first "
          f"{min(snaps, key=lambda s: int(s.split('-')[1]))}), EARLIEST hint {hint}, "
          f"rows readable {ids == list(range(n))}")
    r2 = ExpireSnapshots(Table.open(path).store, CFG).expire()
    print(f"  rerun: complete={r2.complete}, snapshots left "
          f"{[n for n in ls(path, 'snapshot') if n.startswith('snapshot-')]}, rows readable "
          f"{sorted(Table.open(path).read_arrow().column('id').to_pylist()) == list(range(n))}")


print("interrupt after the first snapshot file:")
run(40, lambda path: deletion.request_stop("SIGINT (audit)"))
print("lease broken after the first snapshot file (100 snapshots):")
run(100, break_lease)

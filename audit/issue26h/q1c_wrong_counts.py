"""Q1 (bad input): delta lists whose num_deleted_files say 0 while their manifests hold DELETEs
(a writer that leaves the counts at 0). Later chunks read a delta they already scanned for
ADDs again "for its DELETEs only", skipping manifests whose count is 0 (reachability
delta_refs: "were the count wrong, fewer files would be deleted, never more"), so which data
files a run deletes depends on where its chunk boundaries fall, and the sized first chunk
moves them. Old (parent commit's code path) vs new, FIRST_CHUNK=5, CHUNK_FILES=200, 200
snapshots: both leave every retained snapshot intact; they leave different sets of files
behind (the old one more: leaks for orphan cleanup, not live files).

Exits 0; prints the difference."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ExpireConfig, ExpireSnapshots, clone, sizes, table_files  # noqa: E402
from q5_memory import make  # noqa: E402

from invariants import assert_intact  # noqa: E402
from paimon_commit.store import FileStore  # noqa: E402


def main():
    import logging
    logging.disable(logging.WARNING)
    base = tempfile.mkdtemp(prefix="audit26h-q1c-")
    cfg = ExpireConfig(retain_min=3, retain_max=3, time_retained_ms=0, max_deletes=1 << 30)
    out = {}
    for name in ("plain", "zero counts"):
        tpl = make(base, name)
        for mode in ("old", None):
            path = clone(tpl, os.path.join(base, "run" + name.replace(" ", "_"), "db.db", f"t{mode}"))
            with sizes(mode, FIRST_CHUNK=5, CHUNK_FILES=200):
                r = ExpireSnapshots(FileStore.open(path), cfg).expire()
            assert_intact(path)
            data = {f for f in table_files(path) if f.endswith(".parquet")}
            out[(name, mode)] = (r.expired_ids, data)
            print(f"{name:12} {'old' if mode else 'new'}: expired {len(r.expired_ids)}, data "
                  f"files left {len(data)} (what the 3 retained snapshots read: 6)")
    (oi, od), (ni, nd) = out[("zero counts", "old")], out[("zero counts", None)]
    print(f"zero counts: same expired ids {oi == ni}; data files only old left "
          f"{len(od - nd)}, only new left {len(nd - od)}")


if __name__ == "__main__":
    sys.exit(main())

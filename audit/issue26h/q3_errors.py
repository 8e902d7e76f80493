"""Q3: errors met while `_first_limit` reads (a snapshot file, a delta manifest list), old
(fixed first chunk) vs new (sized) behaviour, on local storage.

A LocalFileIO that raises on reads of ONE target file, either on its first read only
(transient) or on every read (persistent). Targets: snapshot 10's delta list and snapshot 10's
file (inside the new first chunk's range, outside the old first chunk of 3). Errors: the
OSError subclasses PermissionError, TimeoutError, ConnectionResetError, FileNotFoundError;
MemoryError; KeyboardInterrupt.

Per run: what expire() raised or returned (stopped_by), the snapshots it expired, the files it
deleted; then every snapshot/tag left must read from the first kept snapshot on, and a rerun
without faults must end at the files of a faultless run. Printed side by side; a line is
marked DIFF where old and new disagree on the outcome, WORSE where new deletes anything a
faultless run keeps that old did not, or leaves unreadable what old left readable. Files left
behind (leaks, for orphan cleanup) are counted, not judged.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ExpireConfig, ExpireSnapshots, clone, run_until_done, sizes,  # noqa: E402
                    table_files)
from q2_crash_sweep import template  # noqa: E402

from invariants import assert_intact  # noqa: E402
from paimon_commit import Table  # noqa: E402
from paimon_commit.io.local import LocalFileIO  # noqa: E402
from paimon_commit.store import FileStore  # noqa: E402


class ErrIO(LocalFileIO):
    def __init__(self, root, target, error, transient):
        super().__init__(root)
        self.target, self.error, self.transient, self.hits = target, error, transient, 0

    def _check(self, path):
        if path.endswith(self.target):
            self.hits += 1
            if self.hits == 1 or not self.transient:
                raise self.error(f"injected {self.error.__name__} on {self.target}")

    def read_bytes(self, path):
        self._check(path)
        return super().read_bytes(path)

    def read_bytes_versioned(self, path):
        self._check(path)
        return super().read_bytes_versioned(path)


def cfg():
    return ExpireConfig(retain_min=3, time_retained_ms=0, max_deletes=1 << 30)


def attempt(tpl, base, first_files, target, error, transient):
    path = clone(tpl, os.path.join(base, "run", "db.db", f"t{first_files}"))
    with sizes(first_files, CHUNK_FILES=120):
        io = ErrIO(path, target, error, transient)
        try:
            r = ExpireSnapshots(FileStore.open(path, io=io), cfg()).expire()
            outcome = f"returned stopped_by={r.stopped_by}"
            expired, deleted = r.expired_ids, len(r.deleted_paths)
        except BaseException as e:   # noqa: BLE001 (KeyboardInterrupt is one of the cases)
            outcome = f"raised {type(e).__name__}"
            expired, deleted = None, None
        kept = min(s.id for s in Table.open(path).snapshots())
        try:
            assert_intact(path, min_snapshot=kept)
            intact = True
        except (AssertionError, OSError):
            intact = False
        rest = run_until_done(path, cfg())
        return outcome, expired, deleted, table_files(path), io.hits, intact, rest["error"]


def main():
    import logging
    logging.disable(logging.WARNING)
    base = tempfile.mkdtemp(prefix="audit26h-q3-")
    tpl = template(base)
    ref = clone(tpl, os.path.join(base, "ref", "db.db", "t"))
    with sizes(None, CHUNK_FILES=120):
        run_until_done(ref, cfg())
    expected = table_files(ref)
    t = Table.open(tpl)
    targets = {"delta list of 10": t.store.snapshots.snapshot(10).delta_manifest_list,
               "snapshot-10": "snapshot/snapshot-10"}
    unsafe = 0
    for tname, target in targets.items():
        for error in (PermissionError, TimeoutError, ConnectionResetError, FileNotFoundError,
                      MemoryError, KeyboardInterrupt):
            for transient in (True, False):
                res = {f: attempt(tpl, base, f, target, error, transient) for f in ("old", None)}
                o, n = res["old"], res[None]
                # new must end where old ends (same files, same readability); outcome
                # differences (raised vs completed) are marked DIFF and explained in README
                # (files a faultless run keeps that this one deleted: must be none; files it
                # left that a faultless run deletes: leaks, for orphan cleanup)
                over = {f: len(expected - x[3]) for f, x in res.items()}
                leak = {f: len(x[3] - expected) for f, x in res.items()}
                worse = over[None] > over["old"] or (o[5] and not n[5])
                unsafe += bool(worse)
                mark = "WORSE" if worse else ("same" if o[:3] == n[:3] else "DIFF")
                print(f"{mark:6} {tname:16} {error.__name__:20} "
                      f"{'transient ' if transient else 'persistent'}: old {o[0]}, expired "
                      f"{None if o[1] is None else len(o[1])}, reads of target {o[4]} | new "
                      f"{n[0]}, expired {None if n[1] is None else len(n[1])}, reads of target "
                      f"{n[4]}; after the run intact old={o[5]} new={n[5]}; files deleted beyond a faultless run "
                      f"old={over['old']} new={over[None]}, left (leaked) old={leak['old']} "
                      f"new={leak[None]}", flush=True)
    print("cases where new is worse than old:", unsafe)
    return 1 if unsafe else 0


if __name__ == "__main__":
    sys.exit(main())

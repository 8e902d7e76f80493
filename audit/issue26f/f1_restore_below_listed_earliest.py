"""F1: a rollback to a tag whose snapshot was expired (this library's `rollback_to(tag=...)`
restores snapshot-K from the tag; Paimon Java's `rollbackTo(tag)` writes it back the same
way) re-creates ids *below the listed earliest*. Landing between the roots phase's listing of
snapshot/ and its read of the newest listed id, it leaves ids the used set never lists and
never reads, all below the mark: "everything at or below the mark is in the used set" fails.

Interleaving (both modes; read-ahead only makes the injection land in the first wave):
  table: snapshots 1..6 (each commit merges its manifests), tag T on 1, snapshots 1-3
  expired (snapshot/ = {4,5,6}); a job's data file F written, not committed, old;
  1. orphan run (real): candidates listed (F one of them); the roots phase lists snapshot/
     = {4,5,6};
  2. before it reads snapshot-6: rollback_to(tag='T') (ours, under the lease: the run's lease
     is not taken yet) restores snapshot-1 from T and deletes 4,5,6; the job, retried,
     commits F as 2; an overwrite of the partition commits 3 (drops F); commits 4', 5', 6'
     (their bases merge the manifests: F in none of them);
  3. the run reads 6' (the mark), 5', 4', tag T (= snapshot 1); 2 and 3 are neither listed
     nor read; no id above 6 -> the re-check finds 6' unchanged, nothing committed since;
  4. F is deleted; snapshots 2 and 3 (retained) name it.

Usage: python f1_restore_below_listed_earliest.py
  AUDIT_CODE=/tmp/issue26f-7cea851-parent (7cea851^: newest read last)
  AUDIT_CODE=/tmp/issue26e-3a04c07-parent (3a04c07^: mark listed + read before the plan)
"""
import os
import threading

from common import (CODE, CleanContext, LocalFileIO, MainLeaseGate, OrphanFilesCleaner,
                    Table, age_everything, cutoff, describe, expire_keeping, make_rows,
                    new_table, threads_now, write)

NEW_MARK = hasattr(OrphanFilesCleaner, "_mark_from")


class HookIO(LocalFileIO):
    """Key-ordered listings; `inject` runs once, right before the roots phase's first read
    of `at` (a path below the table, after its listing of snapshot/)."""

    def __init__(self, root, concurrency, inject, at="snapshot/snapshot-6"):
        super().__init__(root)
        self.read_concurrency = concurrency
        self.root_, self.inject, self.at = root, inject, at
        self.snapshot_listings = 0
        self.roots_listing = 1 if NEW_MARK else 2   # (3a04c07^: its own mark listed first)
        self.armed = False
        self.fired = threading.Event()
        self.lock = threading.Lock()
        self.gate = MainLeaseGate()
        self.gate.armed = concurrency > 1
        self.listed = None

    def list_names(self, path):
        out = sorted(super().list_names(path))
        if path.rstrip("/") == os.path.join(self.root_, "snapshot"):
            with self.lock:
                self.snapshot_listings += 1
                if self.snapshot_listings == self.roots_listing:
                    self.armed = True
                    self.listed = [n for n in out if n.startswith("snapshot-")]
        return out

    def read_bytes(self, path):
        if self.armed and path == os.path.join(self.root_, self.at):
            with self.lock:
                if not self.fired.is_set():
                    try:
                        self.inject()
                    finally:
                        self.fired.set()
                        self.gate.open.set()
        return super().read_bytes(path)

    def list_status(self, path, *a, **kw):
        self.gate.maybe_wait(path)
        return super().list_status(path, *a, **kw)


def setup():
    path = new_table({"manifest.full-compaction-threshold-size": "1b",
                      "manifest.merge-min-count": "1"})
    for i in range(1, 7):
        write(path, [i])                       # snapshots 1..6
    Table.open(path).create_tag("T", 1)
    expire_keeping(path, 3)                    # snapshot/ = {4, 5, 6}; T keeps 1's files
    t = Table.open(path)
    w = t.new_writer()
    w.write_arrow(make_rows([99]))
    msgs = w.prepare_commit()                  # the job's file F, written, not committed
    age_everything(path)
    m = msgs[0]
    f = os.path.join(path, f"dt=19723/hr=1/bucket-{m.bucket}", m.new_files[0].file_name)
    return path, msgs, f


def rollback_restore_and_recommit(path, msgs):
    def inject():
        r = Table.open(path).rollback_to(tag="T")      # restores 1 from T, deletes 4,5,6
        assert r.snapshot_id == 1, r
        with Table.open(path).new_commit(commit_user="job") as c:   # the job, retried
            assert c.commit(msgs, 77) == 2
        assert write(path, [50], overwrite=True) == 3   # F dropped
        for want in (4, 5, 6):                          # re-created 4', 5', 6': no F
            assert write(path, [want * 10]) == want
    return inject


def report(path, f, io, res, conc, label):
    print(f"--- read_concurrency={conc} ({label})")
    print(f"  roots phase listed: {io.listed}; injected: {io.fired.is_set()}")
    print(f"  orphan run: {res}")
    print(f"  F ({os.path.relpath(f, path)}) exists: {os.path.exists(f)}")
    tbl = Table.open(path)
    print(f"  snapshots now: {tbl.store.snapshots.list_snapshot_ids()}, tags: "
          f"{[(t.name, t.snapshot.id) for t in tbl.tags()]}")
    for sid in (2, 3, 6):
        try:
            ids = sorted(tbl.read_arrow(snapshot_id=sid).column("id").to_pylist())
            print(f"  read_arrow(snapshot_id={sid}): {ids}")
        except Exception as e:  # noqa: BLE001
            print(f"  read_arrow(snapshot_id={sid}) FAILS: {type(e).__name__}: {str(e)[-120:]}")
    chk = tbl.check()
    print(f"  check(): healthy={chk.healthy} problems="
          f"{[(p.path[-60:], p.kind, p.state) for p in chk.problems][:3]}")
    print(f"  threads left: {threads_now()}")


def run(conc, cleaner=None):
    path, msgs, f = setup()
    io = HookIO(path, conc, rollback_restore_and_recommit(path, msgs))
    make = cleaner or OrphanFilesCleaner
    try:
        r = make(CleanContext(path, older_than_ms=cutoff(), file_io=io)).clean()
        res = short(r, path, f)
    except Exception as e:  # noqa: BLE001
        res = f"raised {type(e).__name__}: {str(e)[:300]}"
    report(path, f, io, res, conc, "mark = newest read" if NEW_MARK else "old mark")


def short(r, path, f):
    """describe(), with the deleted paths summarised (the rest are the rolled-back and
    expired snapshots' own files: real orphans)."""
    rel = os.path.relpath(f, path)
    out = (f"complete={r.complete} stopped_by={r.stopped_by} deleted {len(r.deleted_paths)} "
           f"file(s), F among them: {rel in r.deleted_paths}")
    return out + (f"\n    message={r.message[:300]}" if r.message else "")


if __name__ == "__main__":
    print(f"code: {CODE}")
    for conc in (1, 8):
        run(conc)

"""F1: the delete phase's mark (3a04c07, `_mark_from`) is the newest snapshot the used set
read, with the identity read under it. The re-check (`_recheck_root`) compares only that top
snapshot's identity. A rollback and new commits that re-create ids *below and up to* the top
while the used set reads the listed snapshots (after it read id 2, before it reads id 3) are
invisible: the top it reads is already the re-created one (identity unchanged at the
re-check), and the re-created id 2' was never read.

Interleaving (both modes; read_concurrency 8 only makes the read of snapshot-3 wait for the
read of snapshot-2, which sequential mode does by itself):
  table: snapshot 1 (A), 2 (B), 3 (C); a job's file F written, not committed (old);
  1. orphan plan lists candidates (F is an old candidate), lists snapshot/ = {1, 2, 3};
  2. reads snapshot 1, snapshot 2 (old 2: B);
  3. this library's rollback_to(1) (under the lease: the orphan run's lease is not taken
     yet) deletes 2 and 3; the job (retried) commits F as 2'; an overwrite of the
     partition commits 3' (F, A deleted there: live only in 2');
  4. the plan reads snapshot 3 -> 3'; mark = (3, identity of 3').
  5. delete phase: re-check reads snapshot 3 (= 3', unchanged), 4 is absent: nothing
     committed since; F is deleted. Snapshot 2' (retained) names a missing file.

At 3a04c07^ the mark was a listing + read made before the candidates were listed:
(3, identity of old 3); the re-check sees 3 changed and stops the run (safe).

Usage: python f1_rollback_between_reads.py   (AUDIT_CODE=/tmp/issue26e-3a04c07-parent for
the parent)
"""
import os
import threading

from common import (CODE, CleanContext, LocalFileIO, MainLeaseGate, OrphanFilesCleaner,
                    Table, age_everything, cutoff, describe, make_rows, new_table,
                    threads_now, write)

NEW_MARK = hasattr(OrphanFilesCleaner, "_mark_from")


class HookIO(LocalFileIO):
    def __init__(self, root, concurrency, inject):
        super().__init__(root)
        self.read_concurrency = concurrency
        self.root_, self.inject = root, inject
        self.snapshot_listings = 0
        # the roots phase's listing of snapshot/: the 1st list_names of it (the 2nd at the
        # parent, whose mark listed it first)
        self.roots_listing = 1 if NEW_MARK else 2
        self.armed = False
        self.below_read = {i: threading.Event() for i in (1, 2, 3)}
        self.fired = threading.Event()
        self.lock = threading.Lock()
        self.gate = MainLeaseGate()
        self.gate.armed = concurrency > 1

    def list_names(self, path):
        # in key order, as an object store lists (a local directory lists in hash order;
        # the used set reads snapshots in listing order when sequential)
        out = sorted(super().list_names(path))
        if path.rstrip("/") == os.path.join(self.root_, "snapshot"):
            with self.lock:
                self.snapshot_listings += 1
                if self.snapshot_listings == self.roots_listing:
                    self.armed = True
        return out

    def read_bytes(self, path):
        if self.armed and not self.fired.is_set():
            if path.endswith("/snapshot/snapshot-4"):
                for ev in self.below_read.values():   # (concurrent: 1-3 answered first)
                    ev.wait(20)
                with self.lock:
                    if not self.fired.is_set():
                        try:
                            self.inject()
                        finally:
                            self.fired.set()
                            self.gate.open.set()
            elif path.rsplit("/", 1)[-1] in ("snapshot-1", "snapshot-2", "snapshot-3") \
                    and "/snapshot/" in path:
                out = super().read_bytes(path)
                self.below_read[int(path.rsplit("-", 1)[-1])].set()
                return out
        return super().read_bytes(path)

    def list_status(self, path, *a, **kw):
        self.gate.maybe_wait(path)
        return super().list_status(path, *a, **kw)


def run(concurrency):
    # manifests fully compacted at each commit (Paimon's manifest.full-compaction-threshold-
    # size, small): 3' names no manifest holding F's ADD entry (as on a table whose commits
    # compact manifests; without it 3''s base list keeps 2''s manifest and F with it)
    path = new_table({"manifest.full-compaction-threshold-size": "1b",
                      "manifest.merge-min-count": "1"})
    write(path, [1])          # 1: A
    write(path, [2])          # 2: B
    write(path, [3])          # 3: C
    write(path, [4])          # 4: D
    t = Table.open(path)
    w = t.new_writer()
    w.write_arrow(make_rows([9]))
    msgs = w.prepare_commit()   # the job's file F, written, not committed
    age_everything(path)
    m = msgs[0]
    f = os.path.join(path, f"dt=19723/hr=1/bucket-{m.bucket}", m.new_files[0].file_name)

    def inject():
        r = Table.open(path).rollback_to(1)                       # ours, under the lease
        assert r.snapshot_id == 1 if hasattr(r, "snapshot_id") else True
        with Table.open(path).new_commit(commit_user="job") as c:  # the job, retried: 2'
            assert c.commit(msgs, 7) == 2
        assert write(path, [5], overwrite=True) == 3              # 3': F deleted
        assert write(path, [6]) == 4     # 4': its base merges the manifests: no F in it

    io = HookIO(path, concurrency, inject)
    try:
        r = OrphanFilesCleaner(CleanContext(path, older_than_ms=cutoff(), file_io=io)).clean()
        res = describe(r)
    except Exception as e:  # noqa: BLE001
        res = f"raised {type(e).__name__}: {str(e)[:300]}"
    print(f"--- read_concurrency={concurrency} ({'3a04c07 mark' if NEW_MARK else 'old mark'})")
    print(f"  injected: {io.fired.is_set()}; orphan run: {res}")
    print(f"  F ({os.path.relpath(f, path)}) exists: {os.path.exists(f)}")
    tbl = Table.open(path)
    print(f"  snapshots: {tbl.store.snapshots.list_snapshot_ids()}")
    for sid in (2, 3, 4):
        try:
            ids = sorted(tbl.read_arrow(snapshot_id=sid).column("id").to_pylist())
            print(f"  read_arrow(snapshot_id={sid}): {ids}")
        except Exception as e:  # noqa: BLE001
            print(f"  read_arrow(snapshot_id={sid}) FAILS: {type(e).__name__}: {str(e)[:160]}")
    chk = tbl.check()
    print(f"  check(): healthy={chk.healthy} problems="
          f"{[(p.path, p.kind, p.state) for p in chk.problems][:3]}")
    print(f"  threads left: {threads_now()}")


if __name__ == "__main__":
    print(f"code: {CODE}")
    for conc in (1, 8):
        run(conc)

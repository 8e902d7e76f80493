"""F3: the re-check's speculative listing of ids (`_recheck_root`, `ahead`) may be answered
before the read of the next id is made. A job's commit of an old file F (snapshot 2), a
commit on top (3) and Paimon Java's expiration of 1-2 (no lease) landing in between: the
read of 2 misses, the listing (older) shows no id >= 2, the re-check ends, F is deleted, and
snapshot 3 (whose base list holds F) names a missing file.

Sequential mode (read_concurrency 1) with the same events landing at the same point (right
before the read of the next id): the listing comes after the miss, sees 3 and stops the run
(`_probe_on`, "gone while snapshot 3 exists").

This is the window the commit message accepts ("what it adds to the window ... is one round
trip"); the script shows that the interleaving is real and that the bound is the gap between
the LIST answer and the GET of the next id, which on an object store includes the GET's wait
for an adaptive-limit slot and its retries' backoff, not one round trip.
"""
import os
import threading

from common import (CleanContext, LocalFileIO, OrphanFilesCleaner, Table, age_everything,
                    cutoff, describe, make_rows, new_table, threads_now, write)


class HookIO(LocalFileIO):
    def __init__(self, root, concurrency, inject):
        super().__init__(root)
        self.read_concurrency = concurrency
        self.root_, self.inject = root, inject
        self.listings = 0
        self.s1_reads = 0
        self.listed = threading.Event()
        self.fired = False
        self.lock = threading.Lock()

    def list_names(self, path):
        out = super().list_names(path)
        if path.rstrip("/") == os.path.join(self.root_, "snapshot"):
            with self.lock:
                self.listings += 1
                n = self.listings
            if n == 3:   # 1: the mark, 2: the roots, 3: the re-check's (speculative) listing
                self.listed.set()
        return out

    def read_bytes(self, path):
        if path.endswith("/snapshot/snapshot-1"):
            with self.lock:
                self.s1_reads += 1
        if path.endswith("/snapshot/snapshot-2") and not self.fired:
            # the re-check's read of the next id (2 does not exist during the plan)
            if self.read_concurrency > 1:
                self.listed.wait(10)            # the LIST answered first
                for _ in range(1000):           # and the marked snapshot's read too
                    if self.s1_reads >= 3:
                        break
                    threading.Event().wait(0.01)
            self.fired = True
            self.inject()
        return super().read_bytes(path)


def run(concurrency):
    path = new_table()
    write(path, [1])                                       # 1
    t = Table.open(path)
    w = t.new_writer()
    w.write_arrow(make_rows([2]))
    msgs = w.prepare_commit()                              # the job's file F, not committed
    age_everything(path)
    m = msgs[0]
    f = os.path.join(path, f"dt=19723/hr=1/bucket-{m.bucket}", m.new_files[0].file_name)

    def inject():
        with Table.open(path).new_commit(commit_user="job") as c:   # F published as 2
            assert c.commit(msgs, 1) == 2
        assert write(path, [3]) == 3                                # 3 (base list holds F)
        for sid in (1, 2):   # Paimon Java's expiration keeping 1 snapshot (no lease)
            os.remove(os.path.join(path, "snapshot", f"snapshot-{sid}"))
        with open(os.path.join(path, "snapshot", "EARLIEST"), "w") as fh:
            fh.write("3")

    io = HookIO(path, concurrency, inject)
    try:
        r = OrphanFilesCleaner(CleanContext(path, older_than_ms=cutoff(), file_io=io)).clean()
        res = describe(r)
    except Exception as e:  # noqa: BLE001
        res = f"raised {type(e).__name__}: {str(e)[:200]}"
    print(f"--- read_concurrency={concurrency}")
    print(f"  injected: {io.fired}; orphan run: {res}")
    print(f"  F ({os.path.relpath(f, path)}) exists: {os.path.exists(f)}")
    try:
        ids = sorted(Table.open(path).read_arrow().column("id").to_pylist())
        print(f"  read_arrow(): {ids}")
    except Exception as e:  # noqa: BLE001
        print(f"  read_arrow() FAILS: {type(e).__name__}: {str(e)[:200]}")
    print(f"  threads left: {threads_now()}")


if __name__ == "__main__":
    for conc in (1, 8):
        run(conc)

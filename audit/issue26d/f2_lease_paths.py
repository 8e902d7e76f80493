"""Change 2 (the lease taken on the main thread while used_files runs on the pool): its
exit paths, in the concurrent mode (LocalFileIO, read_concurrency 8).

Cases:
  abort-held   used_files aborts (a listed snapshot unreadable) after the lease was taken
  held-other   another holder has the lease: LeaseHeldError while used_files runs
  kbint-take   KeyboardInterrupt on the main thread during its lease take
  oom          MemoryError reading a manifest in used_files (clean()'s _out_of_memory)
  stale-stack  F2: find_orphans(executor, ...) called again on a cleaner after a real clean():
               _lease_stack still names clean()'s closed ExitStack, so the lease is entered
               into it and never released (its renewer keeps it alive)

For each: the result, the latest lease record (released?), whether another run can take the
lease now, and the threads left.
"""
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from common import (CleanContext, LocalFileIO, OrphanFilesCleaner, Table, age_everything,
                    cutoff, describe, new_table, threads_now, write)
from paimon_commit.errors import LeaseHeldError
from paimon_commit.lease import lease_manager, lease_settings, maintenance_lease
from paimon_commit.operations.orphan_context import OrphanCleanResult


class IO8(LocalFileIO):
    read_concurrency = 8

    def __init__(self, root, case):
        super().__init__(root)
        self.case, self.fired = case, False
        self.lease_taken = threading.Event()

    def list_status(self, path, *a, **kw):
        if "/.maintenance" in path and threading.current_thread() is threading.main_thread():
            if self.case == "kbint-take" and not self.fired:
                self.fired = True
                raise KeyboardInterrupt()
        return super().list_status(path, *a, **kw)

    def try_create_atomic(self, path, data, **kw):
        out = super().try_create_atomic(path, data, **kw)
        if "/.maintenance/lease-" in path:
            self.lease_taken.set()
        return out

    def read_bytes(self, path):
        if self.case == "abort-held" and path.endswith("/snapshot/snapshot-2") \
                and threading.current_thread() is not threading.main_thread():
            # the roots phase's read of snapshot 2 (not the mark's, which runs first): wait
            # until the main thread has the lease, then fail as a concurrent expiration would
            if self.mark_read:
                self.lease_taken.wait(10)
                raise FileNotFoundError(path)
            self.mark_read = True
        if self.case == "oom" and "/manifest/manifest-" in path and \
                "manifest-list" not in path:
            self.lease_taken.wait(10)
            raise MemoryError()
        return super().read_bytes(path)

    mark_read = False


def lease_state(path):
    m = lease_manager(Table.open(path).store)
    rec = m.latest()
    out = []

    def probe():   # on another thread: the lease is re-entrant per thread
        try:
            with maintenance_lease(Table.open(path).store, "probe", wait_s=0.5):
                out.append("yes")
        except LeaseHeldError as e:
            out.append(f"NO ({str(e)[:150]})")
    t = threading.Thread(target=probe)
    t.start()
    t.join()
    free = out[0]
    return (f"latest record {rec.number if rec else None} op={rec.operation if rec else None} "
            f"released={rec.released if rec else None}; another run can take it: {free}")


def run(case):
    path = new_table()
    write(path, [1])
    write(path, [2])
    stray = os.path.join(path, "manifest", "manifest-stray")
    open(stray, "wb").write(b"x")
    age_everything(path)
    io = IO8(path, case)
    cleaner = OrphanFilesCleaner(CleanContext(path, older_than_ms=cutoff(), file_io=io))
    holder = None
    t0 = time.time()
    try:
        if case == "held-other":
            got, stop = threading.Event(), threading.Event()

            def hold():
                with maintenance_lease(Table.open(path).store, "someone-else"):
                    got.set()
                    stop.wait(30)
            holder = threading.Thread(target=hold)
            holder.start()
            got.wait(10)
            with lease_settings(wait_s=1):
                r = cleaner.clean()
        else:
            r = cleaner.clean()
        res = describe(r)
    except BaseException as e:  # noqa: BLE001
        res = f"raised {type(e).__name__}: {str(e)[:220]}"
    took = time.time() - t0
    if holder is not None:
        stop.set()
        holder.join()
    print(f"--- {case}")
    print(f"  clean(): {res}  ({took:.1f} s)")
    if case == "stale-stack":
        found, _ = cleaner.find_orphans(ThreadPoolExecutor(4), OrphanCleanResult(
            True, cleaner.ctx.older_than_ms))
        print(f"  then find_orphans(executor, dry-run result): {len(found)} found")
        print(f"  lease: {lease_state(path)}")
        time.sleep(1.5)
    time.sleep(0.2)
    print(f"  lease: {lease_state(path)}")
    print(f"  stray exists: {os.path.exists(stray)}; threads left: {threads_now()}")


if __name__ == "__main__":
    for case in ("abort-held", "held-other", "kbint-take", "oom", "stale-stack"):
        run(case)

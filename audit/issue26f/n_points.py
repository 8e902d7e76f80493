"""Sweep: five actions of other processes injected at four points of the roots phase of a
real orphan run (main at 7cea851: newest listed snapshot read first = the mark), both
read_concurrency 1 and 8. Table as in F1: snapshots 4,5,6 listed (1-3 expired), tag T on 1,
a job's old uncommitted file F. "intact" = F exists (or no snapshot/tag names it) and
check() is healthy; every outcome also prints how the run ended.

Points (the hook fires right before the roots phase's read of):
  a  snapshot-6   between the listing of snapshot/ and the read of the newest
  b  snapshot-4   after the mark was read, before the other snapshots
  c  snapshot-5   between the other snapshots' reads
  d  tag/tag-T    after every snapshot was read
Actions:
  expire-newest      commits 7, 8, then our expiration keeping 2 (6 expired before read)
  rollback-recommit  our rollback_to(4), the job commits F as 5', an overwrite 6', commit 7'
  commits-above      the job commits F as 7, an overwrite 8, commit 9 (ids above the mark)
  changelog-expire   commit 7 with F, overwrite 8, our expiration keeping 1 with
                     changelogs retained (changelog-N written, snapshot-N deleted)
  restore-from-tag   F1: rollback_to(tag='T') restores 1, F as 2, overwrite 3, commits 4'-6'
"""
import os

import f1_restore_below_listed_earliest as f1
from common import (CODE, CleanContext, OrphanFilesCleaner, Table, cutoff, expire_keeping,
                    write)


def actions(path, msgs):
    def job(expect):
        with Table.open(path).new_commit(commit_user="job") as c:
            assert c.commit(msgs, 77) == expect

    def expire_newest():
        write(path, [7]), write(path, [8])
        expire_keeping(path, 2)

    def rollback_recommit():
        Table.open(path).rollback_to(4)
        job(5)
        write(path, [60], overwrite=True)
        write(path, [70])

    def commits_above():
        job(7)
        write(path, [80], overwrite=True)
        write(path, [90])

    def changelog_expire():
        job(7)
        write(path, [80], overwrite=True)
        expire_keeping(path, 1, changelog_retain_min=100, changelog_retain_max=100)

    return {"expire-newest": expire_newest, "rollback-recommit": rollback_recommit,
            "commits-above": commits_above, "changelog-expire": changelog_expire,
            "restore-from-tag": f1.rollback_restore_and_recommit(path, msgs)}


POINTS = {"a": "snapshot/snapshot-6", "b": "snapshot/snapshot-4", "c": "snapshot/snapshot-5",
          "d": "tag/tag-T"}


def one(conc, point, action):
    path, msgs, f = f1.setup()
    inject = actions(path, msgs)[action]
    io = f1.HookIO(path, conc, inject, at=POINTS[point])
    try:
        r = OrphanFilesCleaner(CleanContext(path, older_than_ms=cutoff(), file_io=io)).clean()
        how = f"complete={r.complete} stopped_by={r.stopped_by} F deleted=" \
              f"{os.path.relpath(f, path) in r.deleted_paths}"
    except Exception as e:  # noqa: BLE001
        how = f"{type(e).__name__}: {str(e)[:90]}"
    chk = Table.open(path).check()
    ok = chk.healthy
    print(f"  conc={conc} point={point} {action:18s} fired={io.fired.is_set()!s:5s} "
          f"{'intact' if ok else 'DAMAGED'}: {how}", flush=True)
    return ok


if __name__ == "__main__":
    import logging
    logging.disable(logging.WARNING)
    print(f"code: {CODE}")
    bad = total = 0
    for conc in (1, 8):
        for point in POINTS:
            for action in actions("", None):
                total += 1
                bad += not one(conc, point, action)
    print(f"{total - bad}/{total} intact")

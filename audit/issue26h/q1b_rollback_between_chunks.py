"""Q1 (rollback): a rollback by another process during the run, (a) between the first chunk's
plan and its deletes, (b) right after the first chunk's deletes (before the next chunk is
planned), each followed by new commits that re-create the rolled-back ids. Old (fixed first
chunk) vs new (sized first chunk): every snapshot and tag left must read (assert_intact), and
once reruns finish, both copies must hold the same files.

Prints one line per case; exits 1 on a difference or an unreadable table."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ExpireConfig, ExpireSnapshots, clone, run_until_done, sizes,  # noqa: E402
                    table_files)
from q1_differential import api_template, FAR  # noqa: E402

from conftest import make_rows, write, D1  # noqa: E402
from invariants import assert_intact  # noqa: E402
from paimon_commit import Table  # noqa: E402


def cfg():
    return ExpireConfig(retain_min=3, time_retained_ms=0, max_deletes=1 << 30)


def run_case(template, base, first_files, when, back):
    path = clone(template, os.path.join(base, "run", "db.db", f"t{first_files}"))
    execute, plan_fn = ExpireSnapshots._execute, ExpireSnapshots.plan
    state = {"done": False}

    def rollback():
        t = Table.open(path)
        target = t.latest_snapshot().id - back
        t.rollback_to(target)
        for i in range(2):   # ids re-created with other content
            write(Table.open(path), make_rows([9000 + i], dt=D1, hr=1))

    def hooked_execute(self, plan):
        if when == "before-deletes" and not state["done"] and plan.end is not None:
            state["done"] = True
            rollback()
        out = execute(self, plan)
        if when == "after-first-chunk" and not state["done"] and plan.end is not None:
            state["done"] = True
            rollback()
        return out
    ExpireSnapshots._execute = hooked_execute
    try:
        with sizes(first_files, CHUNK_FILES=100):
            r = ExpireSnapshots(Table.open(path).store, cfg(), clock=FAR).expire()
    finally:
        ExpireSnapshots._execute, ExpireSnapshots.plan = execute, plan_fn
    assert_intact(path)   # every retained snapshot and tag reads, right after the run
    with sizes(first_files, CHUNK_FILES=100):
        rest = run_until_done(path, cfg(), clock=FAR)
    assert_intact(path)
    files = table_files(path)
    before = table_files(template)
    # (the commits made after the rollback write files with random names: compared by count)
    return (r.expired_ids + rest["expired"], (files & before, len(files - before)),
            r.skipped)


def main():
    import logging
    logging.disable(logging.WARNING)
    base = tempfile.mkdtemp(prefix="audit26h-q1b-")
    template = api_template(base)
    bad = 0
    for when in ("before-deletes", "after-first-chunk"):
        for back in (2, 10, 30):
            got = {f: run_case(template, base, f, when, back) for f in ("old", 0, None)}
            same = got["old"][:2] == got[None][:2] == got[0][:2]
            bad += not same
            print(f"{'SAME' if same else 'DIFF'} rollback {when}, {back} back: expired "
                  f"old={len(got['old'][0])} new={len(got[None][0])}; first run skipped "
                  f"old={[s[:60] for s in got['old'][2]]} new={[s[:60] for s in got[None][2]]}")
    print("differences:", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

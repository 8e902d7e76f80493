"""S1-S3: a kept snapshot file changed at the moments the new version cache relies on.

 a) between chunk 1's execution and chunk 2's listing: deleted and re-created with the same
    size (the freed inode number is reused) -> chunk 2 must read it again (not the cache);
 b) between chunk 2's listing (now taken BEFORE `_end`) and `_end`'s reads: re-created the
    same way -> the re-check before chunk 2's deletes must stop the chunk;
 c) a kept snapshot that is a symlink, re-pointed to other same-size bytes after chunk 2 was
    planned -> the re-check must stop the chunk.
"""
import os
import sys
from common import (ExpireSnapshots, FileStore, SNAPSHOTS, cfg, recommit_same_size, small_chunks,
                    snap_ids, table)
from invariants import assert_intact

small_chunks()
newest = SNAPSHOTS


def run(case):
    path = table(case)
    target = os.path.join(path, "snapshot", f"snapshot-{newest}")
    plans, opens, info = [], [], {}
    real_plan, real_end, real_open = ExpireSnapshots.plan, ExpireSnapshots._end, os.open
    real_execute = ExpireSnapshots._execute

    def plan(self):
        plans.append(1)
        if case == "a" and len(plans) == 2:
            info["stat"] = recommit_same_size(path, newest)
        return real_plan(self)

    def end(self, *a):
        if case == "b" and len(plans) == 2 and "stat" not in info:
            info["stat"] = recommit_same_size(path, newest)
        return real_end(self, *a)

    def execute(self, plan):
        if case == "c" and len(plans) == 2 and "stat" not in info:
            # snapshot-60 is a symlink (set up below); point it at other same-size bytes
            with open(target + ".real", "rb") as f:
                data = f.read()
            at = data.index(b'"commitUser": "') + len(b'"commitUser": "')
            with open(target + ".other", "wb") as f:
                f.write(data[:at] + b"q" + data[at + 1:])
            os.unlink(target)
            os.symlink(target + ".other", target)
            info["stat"] = (None, None)
        return real_execute(self, plan)

    def counting_open(p, *a, **kw):
        if os.fspath(p).endswith(f"/snapshot/snapshot-{newest}"):
            opens.append(len(plans))
        return real_open(p, *a, **kw)

    if case == "c":
        os.rename(target, target + ".real")
        os.symlink(target + ".real", target)
    ExpireSnapshots.plan, ExpireSnapshots._end = plan, end
    ExpireSnapshots._execute = execute
    os.open = counting_open
    try:
        r = ExpireSnapshots(FileStore.open(path), cfg()).expire()
    finally:
        ExpireSnapshots.plan, ExpireSnapshots._end = real_plan, real_end
        ExpireSnapshots._execute = real_execute
        os.open = real_open
    old, new = info["stat"]
    if old is not None:
        print(f"  inode reused: {old.st_ino == new.st_ino}; ctime same: "
              f"{old.st_ctime_ns == new.st_ctime_ns}; size same: {old.st_size == new.st_size}")
    print(f"  opens of snapshot-{newest} per plan number: {sorted(set(opens))} "
          f"(chunk 2 = plan 2)")
    print(f"  expired {len(r.expired_ids)} snapshots; skipped: {r.skipped[-1:] }")
    print(f"  snapshots left: {snap_ids(path)[0]}..{snap_ids(path)[-1]}")
    assert_intact(path)
    print("  assert_intact: OK")
    return r


print("a) re-created (inode reuse) between chunk 1 and chunk 2's listing")
r = run("a")
assert r.expired_ids == list(range(1, SNAPSHOTS - 2)), r.expired_ids
print("b) re-created between chunk 2's listing and _end")
r = run("b")
assert r.skipped and "was replaced" in r.skipped[-1], r.skipped
print("c) symlinked kept snapshot re-pointed after chunk 2 was planned")
r = run("c")
assert r.skipped and "was replaced" in r.skipped[-1], r.skipped
print("ALL AS EXPECTED: no stale cached bytes used")

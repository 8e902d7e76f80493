"""Expiration in many small chunks over a history with re-adds that straddle the chunk
boundaries (ADD f, DELETE f two snapshots later, ADD f again two later, some DELETEd once
more), while between chunks a tag is created on a snapshot the run is about to expire, a
consumer is registered and a new snapshot is committed. Every retained snapshot and tag
must still read back (pypaimon) with the expected rows, and the deleted set must equal a
run of one chunk on a copy of the table (the pre-change semantics).

Run: PYTHONPATH=$PWD:$PWD/tests .venv/bin/python audit/chunks_readd_tag_midrun.py
"""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
from conftest import SCHEMA, make_rows, write  # noqa: E402
from invariants import assert_intact  # noqa: E402

from paimon_commit import Table  # noqa: E402
from paimon_commit.operations import expire as expire_mod  # noqa: E402
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots  # noqa: E402
from paimon_commit.tags import ConsumerManager  # noqa: E402

FAR = lambda: time.time() + 10 * 365 * 86400  # noqa: E731


def files(root):
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def build(path):
    t = Table.create(path, SCHEMA, partition_keys=["dt", "hr"])
    live, expected = {}, {}
    sid = 0
    for k in range(6):
        w = t.new_writer()
        w.write_arrow(make_rows([100 + k], hr=10 + k))
        msgs = w.prepare_commit()
        with t.new_commit() as c:
            sid = c.commit(msgs)                     # ADD f
        live[100 + k] = 1
        expected[sid] = sorted(live)
        sid = write(t, make_rows([200 + k], hr=1))   # filler
        live[200 + k] = 1
        expected[sid] = sorted(live)
        with t.new_commit() as c:
            sid = c.drop_partitions([{"hr": 10 + k}])   # DELETE f
        del live[100 + k]
        expected[sid] = sorted(live)
        sid = write(t, make_rows([300 + k], hr=2))   # filler
        live[300 + k] = 1
        expected[sid] = sorted(live)
        with t.new_commit(commit_user=f"recovery{k}") as c:
            r = c.filter_and_commit({1: msgs})        # ADD f again
        sid = r[-1] if isinstance(r, list) else r
        live[100 + k] = 1
        expected[sid] = sorted(live)
        if k % 2:
            with t.new_commit() as c:
                sid = c.drop_partitions([{"hr": 10 + k}])   # DELETE f once more
            del live[100 + k]
            expected[sid] = sorted(live)
    return t, expected


def run(path, chunked, midrun):
    t = Table.open(path)
    cfg = ExpireConfig(retain_min=4, retain_max=4, time_retained_ms=0, max_deletes=1 << 30)
    ex = ExpireSnapshots(t.store, cfg, clock=FAR)
    ends = []
    orig = ExpireSnapshots.plan

    once = []

    def plan(self):
        if midrun and len(ends) == 2 and not once:   # between chunk 2 and chunk 3
            once.append(1)
            midrun(t, ends[-1])
        p = orig(self)
        ends.append(p.end)
        return p
    saved = expire_mod.FIRST_CHUNK, expire_mod.CHUNK_FILES
    if chunked:
        expire_mod.FIRST_CHUNK, expire_mod.CHUNK_FILES = 2, 3
    ExpireSnapshots.plan = plan
    try:
        r = ex.expire()
    finally:
        ExpireSnapshots.plan = orig
        expire_mod.FIRST_CHUNK, expire_mod.CHUNK_FILES = saved
    return r, ends


def main():
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "wh", "db.db", "t")
    os.makedirs(os.path.dirname(path))
    t, expected = build(path)
    latest = max(expected)
    copy = path + "_one"
    shutil.copytree(path, copy)
    _, ends1 = run(copy, False, None)
    _, ends = run(path, True, None)
    if len(sys.argv) > 1:   # for a comparison with another version of the code
        open(sys.argv[1], "w").write("\n".join(sorted(files(path))))
    print("chunk ends:", ends, "one-run ends:", ends1)
    assert files(path) == files(copy), (files(path) ^ files(copy))
    assert_intact(path, expected)
    print("plain chunked run == one-chunk run, intact")

    # Again from scratch, with a tag, a consumer and a commit made between chunks.
    shutil.rmtree(tmp)
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "wh", "db.db", "t")
    os.makedirs(os.path.dirname(path))
    t, expected = build(path)
    made = {}

    def midrun(table, last_end):
        nxt = last_end + 1            # a snapshot the next chunk would expire
        table.create_tag("mid", nxt)
        ConsumerManager(table.store.io, table.store.root).write("c1", nxt + 2)
        made["tag"] = nxt
        made["sid"] = write(table, make_rows([999], hr=3))
    r, ends = run(path, True, midrun)
    print("chunk ends with mid-run tag/commit:", ends, "tag on", made["tag"])
    tag_rows = {"mid": expected[made["tag"]]}
    assert_intact(path, {k: v for k, v in expected.items()}, tag_rows)
    print("mid-run tag and commit: intact")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()

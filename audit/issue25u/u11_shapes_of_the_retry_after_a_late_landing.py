"""Idea u11: a call of user 'job' with F1, F2 (rows 11, 12) whose every publish fails (PUTs of
snapshot 3 late; CommitFailedError, recorded as may-have-published); the first PUT lands
late, then a compaction replaces F1, F2. Retries of other shapes: the same files in the other
order; a subset (F1); a superset (F1, F2, G); through a symlink to the table; a second Table
handle; a new random user; filter_and_commit with a new identifier. Checked: 11, 12 read once,
and G (13) only ever once."""
import os

from common import (fresh, write, make_rows, prepared, dups, snapshot_ids, LatePut, call, show,
                    try_commit, OPTS)
from paimon_commit import Table

findings = []
for shape in ("order", "subset", "superset", "symlink", "handle", "random", "fac"):
    path, t = fresh(OPTS)
    write(t, make_rows([10]))
    F1, F2 = prepared(t, [11]), prepared(t, [12])
    with LatePut("job", {i: "lost" for i in range(1, 40)}) as late:
        with t.new_commit(commit_user="job") as c:
            r1 = call(lambda: c.commit(F1 + F2))
    late.land(0)
    t.compact()
    if shape == "order":
        r = try_commit(t, F2 + F1, user="job")
    elif shape == "subset":
        r = try_commit(t, F1, user="job")
    elif shape == "superset":
        r = try_commit(t, F1 + F2 + prepared(t, [13]), user="job")
    elif shape == "symlink":
        link = path + "-link"
        os.symlink(path, link)
        r = try_commit(Table.open(link), F1 + F2, user="job")
    elif shape == "handle":
        r = try_commit(Table.open(path), F1 + F2, user="job")
    elif shape == "random":
        r = try_commit(t, F1 + F2)
    else:
        r = try_commit(t, {9: F1 + F2}, user="job", how="filter_and_commit")
    ours, theirs, d = dups(path)
    print(f"{shape}: first -> {show(r1)[:40]}; late PUT landed, compacted; retry -> "
          f"{show(r)[:110]}; snapshots {snapshot_ids(path)}; ours {ours} pypaimon {theirs}")
    if d:
        findings.append(f"{shape}: rows {d} read twice")
    if not {11, 12} <= set(ours):
        findings.append(f"{shape}: rows lost")
print(("FINDING: " + "; ".join(findings)) if findings else "OK")

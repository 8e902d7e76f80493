"""Idea 2 (exactly-once, 7d5cc63): does `_refuse_replaced` refuse a legitimate first commit,
and do sequences of users with compaction / rollback / overwrite publish rows twice (within
the record's bound)? Each case reads back with our reader and pypaimon.
 i   another user's call failed before its publish (nothing may have landed), then a new user
     commits the same messages: must publish once.
 ii  compaction's own commits (explicit and post-commit) after commits of several users.
 iii A commits F, compaction, rollback to the snapshot before the compaction (F live again), B
     commits F (table check), then rollback to before A, B again (rolled back): never twice.
 iv  A commits F, A overwrites the partition with other rows, B commits F: refused (F's rows
     were overwritten away; documented: the table cannot tell), never twice.
 v   a streaming writer restarts as another commit user and resumes with filter_and_commit:
     identifiers published by the old user after a compaction are not published again."""
from common import Table, make_rows, new_path, prepared, ids_read, snapshot_ids, write
from paimon_commit.errors import CommitConflictError
from paimon_commit.snapshots import SnapshotManager

problems, notes = [], []


def fresh(options=None):
    path = new_path()
    return path, Table.create(path, make_rows([]).schema, partition_keys=["dt", "hr"],
                              options=dict({"compaction.min.file-num": "2"}, **(options or {})))


def commit(t, msgs, user=None, ident=None):
    try:
        with t.new_commit(**({"commit_user": user} if user else {})) as c:
            return c.commit(msgs, ident) if ident is not None else c.commit(msgs)
    except CommitConflictError as e:
        return e


def twice(path, label):
    ours, theirs = ids_read(path)
    dup = sorted({i for i in ours if ours.count(i) > 1} | {i for i in theirs if theirs.count(i) > 1})
    if dup:
        problems.append(f"{label}: rows {dup} read twice")
    return ours


# i
path, t = fresh()
write(t, make_rows([1]))
cell = prepared(t, [2])
import paimon_commit.operations.commit as C  # noqa: E402
cls = next(v for v in vars(C).values() if isinstance(v, type) and hasattr(v, "_write_snapshot_files"))
real = cls._write_snapshot_files


def failing(self, *a, **k):
    raise OSError("simulated: the manifest write failed")
cls._write_snapshot_files = failing
try:
    r = commit(t, cell, user="A")
except Exception as e:  # noqa
    r = e
cls._write_snapshot_files = real
r2 = commit(t, cell)      # a new (random) user
print(f"i: A raised ({type(r).__name__ if isinstance(r, BaseException) else r}); a new user -> {r2!r}")
if isinstance(r2, CommitConflictError):
    problems.append(f"i: a first commit refused after another user's call failed before its publish: {r2}")
twice(path, "i")

# ii
path, t = fresh({"compaction.post-commit.enabled": "true"})
for n, u in enumerate(["A", "B", None, "A", "C"]):
    r = commit(t, prepared(t, [10 + n]), user=u)
    if isinstance(r, CommitConflictError):
        problems.append(f"ii: a first commit (user {u}) refused: {r}")
try:
    t.compact(options={"compaction.min.file-num": "2"})
except CommitConflictError as e:
    problems.append(f"ii: compaction refused: {e}")
print("ii: snapshots", snapshot_ids(path), "rows", twice(path, "ii"))

# iii
path, t = fresh()
write(t, make_rows([1]))
F = prepared(t, [2])
commit(t, F, user="A")                         # 2
t.compact(options={"compaction.min.file-num": "2"})   # 3
t.rollback_to(2)
r1 = commit(t, F, user="B")
twice(path, "iii after rollback to 2")
t.rollback_to(1)
r2 = commit(t, F, user="B")
print(f"iii: B with F live -> {type(r1).__name__}; after rollback to 1 -> {type(r2).__name__}")
twice(path, "iii")

# iv
path, t = fresh()
F = prepared(t, [5])
commit(t, F, user="A")
with t.new_commit(commit_user="A") as c:
    w = t.new_writer(); w.write_arrow(make_rows([6]))
    c.overwrite(w.prepare_commit(), {"dt": make_rows([1]).column("dt")[0].as_py(), "hr": 1})
r = commit(t, F, user="B")
print(f"iv: B after A's overwrite -> {type(r).__name__ if isinstance(r, BaseException) else r}")
twice(path, "iv")

# v
path, t = fresh({"compaction.post-commit.enabled": "true"})
by_ident = {}
with t.new_commit(commit_user="s1") as c:
    for i in (1, 2, 3):
        by_ident[i] = prepared(t, [100 + i])
        c.commit(by_ident[i], i)
by_ident[4] = prepared(t, [104])
try:
    with t.new_commit(commit_user="s2") as c:   # restarted as another user
        c.filter_and_commit(by_ident)
    print("v: s2 resumed with filter_and_commit")
except CommitConflictError as e:
    print(f"v: s2's filter_and_commit refused: {str(e)[:150]}")
twice(path, "v")

print("FINDING: " + "; ".join(problems) if problems else
      "OK: no legitimate first commit refused; no sequence published rows twice")

"""v2: entries named like expiring marks that are not regular files (a directory, a symlink
to a directory outside the table, a FIFO, a dangling symlink), with a range below what
post-commit expiration expires. The mark is 'in force' (refuses) while snapshot `end` exists;
once an expiration passes `end`, `_finished` removes every mark with end <= plan.end through
the gate. Does a non-regular one make the expiration (or the published commit) fail, get
followed outside the table, or hang? Everything retained must still read."""
import os
import tempfile
import uuid

from common import make_rows, new_table, snapshot_ids, lease_dir, rows

problems = []
outside = tempfile.mkdtemp(prefix="audit25v-outside-")
with open(os.path.join(outside, "keep.txt"), "w") as f:
    f.write("x")
for kind in ("dir", "symlink-dir", "fifo", "dangling"):
    t = new_table(options={"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2",
                           "snapshot.time-retained": "1 ms"})
    d = lease_dir(t)
    p = os.path.join(d, f"expiring-1-3-{uuid.uuid4().hex}")
    if kind == "dir":
        os.mkdir(p); open(os.path.join(p, "x"), "w").close()
    elif kind == "symlink-dir":
        os.symlink(outside, p)
    elif kind == "fifo":
        os.mkfifo(p)
    else:
        os.symlink("/nonexistent/zzz", p)
    errs = []
    for i in range(1, 7):
        w = t.new_writer(); w.write_arrow(make_rows([i]))
        try:
            with t.new_commit() as c:
                c.commit(w.prepare_commit())
        except BaseException as e:  # noqa
            errs.append(f"commit {i}: {type(e).__name__}: {str(e)[:120]}")
    try:
        r = t.expire_snapshots()
        ex = f"complete={r.complete}"
    except BaseException as e:  # noqa
        ex = f"raised {type(e).__name__}: {str(e)[:120]}"
    ids = snapshot_ids(t.path)
    ok_read = all(rows(t.path, s) == list(range(1, s + 1)) for s in ids)
    left = os.path.lexists(p)
    print(f"{kind}: commit errors {errs[:2]} | explicit expire {ex} | snapshots {ids} read ok "
          f"{ok_read} | mark entry left {left} | outside intact "
          f"{os.path.exists(os.path.join(outside, 'keep.txt'))}")
    if errs:
        problems.append(f"{kind}: {errs[0]}")
    if not ok_read or not os.path.exists(os.path.join(outside, "keep.txt")):
        problems.append(f"{kind}: loss")
print("FINDING: " + "; ".join(problems) if problems else
      "OK: non-regular marks neither fail commits nor reach outside; retained snapshots read")

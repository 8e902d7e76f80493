"""v1: a lease record, a waiter record or an expiring mark that is a huge *regular* file
(a sparse 1 TB file: no disk used). The lstat checks added for p1/b4 refuse only non-regular
entries; the body is then read whole (`os.read(fd, st_size + 1)`), and a size beyond memory
raises MemoryError, which neither `LeaseRecord`/`read`, `waiter_gone`, `ExpiringMarkers.read`
nor post-commit maintenance catch (they catch OSError, ValueError, LeaseRecordError, ...).
docs/safety.md 5b: "no bad record (nor any entry refused below) fails a commit".
Cases: a) the highest lease record; b) a waiter record (lease free, waiter fresh);
c) a mark covering the snapshot an automatic tag (tag.automatic-creation) is created on.
Each: a one-shot commit -> published? raised?  And a streaming commit (identifier) twice."""
import os
import time
import uuid

from common import make_rows, new_table, snapshot_ids, lease_dir, rows  # noqa: F401

TB = 1 << 40


def sparse(path, size=TB):
    with open(path, "wb") as f:
        f.truncate(size)


def attempt(t, i, stream=None):
    w = t.new_writer()
    w.write_arrow(make_rows([i]))
    msgs = w.prepare_commit()
    before = snapshot_ids(t.path)
    try:
        if stream is not None:
            stream.commit(msgs, i)
        else:
            with t.new_commit() as c:
                c.commit(msgs)
        err = None
    except BaseException as e:  # noqa
        err = f"{type(e).__name__}: {str(e)[:80]}"
    after = snapshot_ids(t.path)
    return (after[-1] if after != before else None), err


findings = []
for case in ("a", "b", "c"):
    opts = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
            "snapshot.time-retained": "1 ms"}
    if case == "c":
        opts.update({"tag.automatic-creation": "batch"})
    t = new_table(options=opts)
    with t.new_commit() as c:
        w = t.new_writer(); w.write_arrow(make_rows([0])); c.commit(w.prepare_commit())
    d = lease_dir(t)
    if case == "a":
        nums = [int(n[6:]) for n in os.listdir(d) if n.startswith("lease-")]
        sparse(os.path.join(d, f"lease-{max(nums, default=0) + 1}"))   # the highest record
    elif case == "b":
        sparse(os.path.join(d, f"wait-{int(time.time()*1000)}-{uuid.uuid4().hex}"))
    else:
        # a mark covering snapshots 1..99 (end snapshot absent -> not in force; make it in force:
        # end = the next snapshot the commit creates is unknown, so cover up to latest+1 and
        # let the covering check read it)
        sparse(os.path.join(d, f"expiring-1-3-{uuid.uuid4().hex}"))
    t0 = time.time()
    pub, err = attempt(t, 1)
    line = f"{case}: one-shot commit -> snapshot {pub}, raised {err} ({time.time()-t0:.1f}s)"
    stream = t.new_commit(commit_user="stream")
    pub2, err2 = attempt(t, 2, stream)
    pub3, err3 = attempt(t, 3, stream)
    line += f" | stream: {pub2} {err2} ; {pub3} {err3}"
    print(line)
    if case == "a":
        try:
            t.expire_snapshots()
            print("a: explicit expire_snapshots ran")
        except BaseException as e:  # noqa
            print(f"a: explicit expire_snapshots: {type(e).__name__}: {str(e)[:120]}")
    if pub is not None and err is not None and "Memory" in err:
        findings.append(f"{case}: snapshot {pub} published, then the commit raised {err.split(':')[0]}")
    if (pub3 is not None or pub2 is not None) and (err3 and "Memory" in err3 or err2 and "Memory" in err2):
        findings.append(f"{case}: stream commit raised MemoryError")
if findings:
    print("FINDING: " + "; ".join(findings))
else:
    print("OK: huge records never fail a commit")

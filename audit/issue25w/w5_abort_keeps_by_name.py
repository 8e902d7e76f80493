"""Idea w5: abort keeps files a commit call of this process was handed, looked up by data file
name in the process record. Every publish of commit(F) on table A fails (late PUT of snapshot 2,
held); then:
a) TableCommit.abort(F) on A opened through a symlink (another spelling): must keep F;
b) the same data file name handed to a commit on table B (a copy of F's file under B,
   committed there with success) and aborted on A: A's F must still be kept;
c) an abort on B of B's own never-committed file that bears the same name as A's F (B's record
   has nothing for it): deleted (a name is looked up per table);
d) abort of F in another thread WHILE A's call is still retrying (not yet recorded): the
   record cannot know it; shown for completeness (concurrent abort of messages being
   committed is a caller error).
Then the late PUT lands; A's latest must read (ours and pypaimon)."""
import os
import shutil
import threading

from common import (fresh, write, make_rows, prepared, LatePut, names, call, show, reads, OPTS)
from paimon_commit import Table

findings = []
for case in ("a", "b", "c", "d"):
    path, t = fresh(OPTS)
    write(t, make_rows([10]))
    F = prepared(t, [11])
    fname = names(F)[0]
    fpath = [os.path.join(d, fname) for d, _, fs in os.walk(path) if fname in fs][0]
    extra = ""
    if case == "d":
        box = {}

        def hook(snap):
            if late.calls == 2:   # A's second attempt: abort from another thread now
                th = threading.Thread(target=lambda: box.setdefault(
                    "r", call(lambda: Table.open(path).new_commit(commit_user="job").abort(F))))
                th.start(); th.join()
        plan = {1: "lost", 2: hook, 3: "lost"}
    else:
        plan = {i: "lost" for i in range(1, 20)}
    with LatePut("job", plan) as late:
        r = call(lambda: t.new_commit(commit_user="job").commit(F))
    if case == "a":
        link = path + "-link"
        os.symlink(path, link)
        ab = call(lambda: Table.open(link).new_commit(commit_user="job").abort(F))
    elif case in ("b", "c"):
        pb, tb = fresh(OPTS)
        write(tb, make_rows([20]))
        G = prepared(tb, [21])
        gname = names(G)[0]
        gpath = [os.path.join(d, gname) for d, _, fs in os.walk(pb) if gname in fs][0]
        newg = os.path.join(os.path.dirname(gpath), fname)
        os.rename(gpath, newg)   # B's file now bears F's name
        import dataclasses
        G = [dataclasses.replace(m, new_files=tuple(dataclasses.replace(f, file_name=fname)
                                                     for f in m.new_files)) for m in G]
        if case == "b":
            cb = call(lambda: tb.new_commit(commit_user="job").commit(G))
            extra = f"B commit {show(cb)}; "
        else:
            cb = call(lambda: tb.new_commit(commit_user="other").abort(G))
            extra = (f"B abort of its own file named like F: {cb}; B's file exists "
                     f"{os.path.exists(newg)}; ")
            if os.path.exists(newg):
                findings.append("c: B's never-committed file kept because A holds its name "
                                "(safe direction)")
        ab = call(lambda: t.new_commit(commit_user="job").abort(F))
    else:
        ab = box.get("r")
    there = os.path.exists(fpath)
    landed = late.land(0) if late.held else None
    rows, d, ours = reads(path)
    print(f"{case}: commit -> {show(r)[:60]}; {extra}abort on A -> {str(ab)[:120]}; F exists "
          f"after abort {there}; late PUT lands {landed}; A latest {rows}")
    if ours is None and case != "d":
        findings.append(f"{case}: latest unreadable after the abort and the late landing")
    if case == "d" and ours is None:
        print("d: (caller error: abort while the same messages are being committed)")
print(("FINDING: " + "; ".join(f for f in findings if not f.startswith("c:"))) if
      [f for f in findings if not f.startswith("c:")] else "OK" + (f" ({findings[0]})" if findings else ""))

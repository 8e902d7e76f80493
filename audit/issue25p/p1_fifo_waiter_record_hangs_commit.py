"""Idea (A2, special files named wait-...): `LeaseManager.scan` passes over a directory or a
symlink named `wait-<since>-<token>` but not a FIFO. A taker that finds the lease free and a
"live" waiter ahead (the FIFO's mtime is within WAITER_TTL_MS) calls `_Line.gone` ->
`waiter_gone` -> `io.read_bytes` of it, and open(2) of a FIFO for reading blocks until a
writer comes: the post-commit maintenance of a one-shot commit (which already published)
never returns, nor does `paimon-commit lease TABLE` (its `_lease_waiters` reads each body) or
`lease TABLE --break`, the remedy. Lease records are lstat()ed before they are read (a FIFO
`lease-N` is refused naming it); waiter records are not.
Each call runs in a child process with a 10 s timeout."""
import os
import subprocess
import sys
import time
import uuid

from common import new_table, write

t = new_table()
write(t, 0)
ldir = os.path.join(t.path, ".maintenance")
os.makedirs(ldir, exist_ok=True)
fifo = os.path.join(ldir, f"wait-{int(time.time() * 1000)}-{uuid.uuid4().hex}")
os.mkfifo(fifo)
print("made FIFO", os.path.relpath(fifo, t.path))

here = os.path.dirname(os.path.abspath(__file__))
commit_child = f"""
import sys; sys.path.insert(0, {here!r})
from common import write
from paimon_commit import Table
t = Table.open({t.path!r})
sid, _ = write(t, 100)
print('commit returned snapshot', sid, flush=True)
"""
env = dict(os.environ, PYTHONPATH=os.getcwd())
hung = []
for what, argv in [("one-shot commit (post-commit maintenance)", [sys.executable, "-c", commit_child]),
                   ("paimon-commit lease TABLE", [sys.executable, "-m", "paimon_commit", "lease", t.path]),
                   ("paimon-commit lease TABLE --break", [sys.executable, "-m", "paimon_commit", "lease",
                                                          t.path, "--break"])]:
    t0 = time.time()
    try:
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=10)
        print(f"{what}: rc={r.returncode} in {time.time() - t0:.1f} s; "
              f"out={r.stdout.strip()[-200:]!r} err={r.stderr.strip()[-200:]!r}")
    except subprocess.TimeoutExpired:
        hung.append(what)
        print(f"{what}: still blocked after 10 s (killed)")
snaps = sorted(os.listdir(os.path.join(t.path, "snapshot")))
print("snapshot dir:", snaps)
os.unlink(fifo)
if hung:
    print("FINDING: a FIFO named like a waiter record blocks for ever:", "; ".join(hung))
else:
    print("OK: no call blocked on the FIFO")

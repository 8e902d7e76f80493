"""Idea: commit_record.IN_FLIGHT (claims of the files a call of this process is committing)
has no fork hook, unlike the lease and the deletion guards. A child forked while a thread of
the parent is inside a commit inherits the claim, whose Event no thread of the child will ever
set: a commit of the same files in the child (another process: it should screen them as any
other process does, i.e. commit or be refused) waits for ever. The pause inside the parent's
commit is simulated by blocking FileStoreCommit._screened_run."""
import os
import signal
import threading
import time

import pyarrow as pa

from common import SCHEMA, new_table
from paimon_commit.operations import commit as commit_mod

t = new_table()
w = t.new_writer()
w.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
msgs = w.prepare_commit()

inside, release = threading.Event(), threading.Event()
orig = commit_mod.FileStoreCommit._screened_run


def paused(self, *a, **k):
    if threading.current_thread().name == "parent-commit":
        inside.set()
        release.wait(30)
    return orig(self, *a, **k)


commit_mod.FileStoreCommit._screened_run = paused


def parent_commit():
    with t.new_commit(commit_user="job") as c:
        c.commit(msgs, commit_identifier=1)


th = threading.Thread(target=parent_commit, name="parent-commit")
th.start()
inside.wait(10)
pid = os.fork()
if pid == 0:
    # The child: another process, committing the same messages (its own retry).
    from paimon_commit.operations import commit_record
    orig_wait = commit_record.wait_for_call

    def noted(done):
        os.write(1, b"child: waiting on an inherited in-flight claim\n")
        orig_wait(done)

    commit_record.wait_for_call = noted
    try:
        with t.new_commit(commit_user="job") as c:
            sid = c.commit(msgs, commit_identifier=1)
        os.write(1, f"child committed: snapshot {sid}\n".encode())
    except Exception as e:  # noqa
        os.write(1, f"child refused: {type(e).__name__}: {str(e)[:150]}\n".encode())
    os._exit(0)
deadline = time.time() + 15
while time.time() < deadline:
    done, _ = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.2)
else:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    release.set()
    th.join()
    print("FINDING (hang): the forked child's commit of the same files waited 15 s on the "
          "parent thread's in-flight claim, which nothing in the child releases (killed)")
    raise SystemExit
release.set()
th.join()
print("NO FINDING")

"""B4. A damaged/foreign entry named like a mark must only refuse. `ExpiringMarkers.read` opens
the entry with a plain read (LocalFileIO.read_bytes): a FIFO (or a symlink to one, or to
/dev/zero) named `expiring-<first>-<end>-<32 hex>` in `.maintenance/` makes the read block
forever. The lease code beside it guards against exactly that (lease.py `read`: "Not read
through a symlink, nor from a FIFO (a read that never returns)", an lstat first); the marks do
not. Shown: create_tag on a covered snapshot, and rollback_to one (which holds the
maintenance lease meanwhile), do not return within 10 s; the FIFO is then fed EOF to let them
finish (they then refuse, as for an unparsable mark)."""
import os, sys, threading, time, uuid
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.operations.tag_ops import TagOperations

root = six_snapshots()
mdir = os.path.join(root, ".maintenance")
os.makedirs(mdir, exist_ok=True)
fifo = os.path.join(mdir, f"expiring-1-5-{uuid.uuid4().hex}")
os.mkfifo(fifo)
out = {}


def call(name, fn):
    def run():
        t0 = time.time()
        try:
            fn()
            out[name] = ("returned", round(time.time() - t0, 1))
        except Exception as e:  # noqa
            out[name] = (f"{type(e).__name__}: {str(e)[:60]}", round(time.time() - t0, 1))
    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(10)
    hung = th.is_alive()
    if hung:
        lease = sorted(n for n in os.listdir(mdir) if n.startswith("lease-"))
        out[name + " hung"] = f"still running after 10 s (lease records: {lease})"
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)   # a writer appears and leaves: EOF
        os.close(fd)
        th.join(30)
    return hung


h1 = call("create_tag(3)", lambda: TagOperations(Table.open(root).store).create_tag("t3", 3))
h2 = call("rollback_to(3)", lambda: TagOperations(Table.open(root).store).rollback_to(3))
for k, v in out.items():
    print(f"{k}: {v}")
print("snapshots:", snapshot_ids(root), "| tags:", sorted(os.listdir(os.path.join(root, "tag")))
      if os.path.isdir(os.path.join(root, "tag")) else [])
print("FINDING: a FIFO named like a mark hangs " +
      " and ".join(n for n, h in (("create_tag", h1), ("rollback_to (lease held)", h2)) if h) +
      " instead of refusing" if (h1 or h2) else "OK: refused without hanging")

"""aa5: create_tag on another thread beside the other lease holders that touch tags.
(a) rollback_to(2) paused right after its checks (holding the lease, before LATEST moves);
thread B: create_tag("R", 4) and create_tag("L") (latest), default wait. Expected: both wait,
then R is refused (snapshot 4 no longer exists: read under the lease) and L lands on 2;
every tag reads. (b) delete_tag("T") of a tag on expired snapshot 1 (its data file kept by T
only) paused right before its first delete step; thread B: create_tag("T", 4) (same name).
Expected: waits, then T on 4 reads; the old T's file is gone, no marker left. (c) Batch tag
replacement (`tag.automatic-creation` = batch, `tag.batch.customized-name` = B): a one-shot
batch commit's post-commit maintenance replaces tag B;
a user thread's delete_tag("B") and create_tag("U") (latest) run while the commit's
maintenance is paused holding the lease (in `after_batch_commit`): the commit must return,
the user's call waits or is refused cleanly, and whatever tag B is left reads."""
import os
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.errors import LeaseHeldError
from paimon_commit.io import deletion as D
from paimon_commit.operations import tag_lifecycle as TL
from paimon_commit.operations.tag_ops import TagOperations

problems = []


def in_thread(fn):
    out = {}

    def run():
        t0 = time.monotonic()
        try:
            out["r"] = fn()
        except Exception as e:  # noqa
            out["r"] = f"{type(e).__name__}: {str(e)[:110]}"
        out["s"] = round(time.monotonic() - t0, 2)
    th = threading.Thread(target=run)
    th.start()
    return th, out


# (a) rollback
root = four_snapshots("a")
pause, orig = Pause(), TagOperations._check_data_present
TagOperations._check_data_present = lambda self, target, what: (orig(self, target, what),
                                                                 pause.hit())[0]
ra = in_thread(lambda: TagOperations(Table.open(root).store).rollback_to(2).snapshot_id)
pause.reached.wait(30)
TagOperations._check_data_present = orig
b1 = in_thread(lambda: Table.open(root).create_tag("R", 4).id)
b2 = in_thread(lambda: Table.open(root).create_tag("L").id)
time.sleep(0.5)
pause.go.set()
for th, _ in (ra, b1, b2):
    th.join(60)
print("(a) rollback:", ra[1], "| create_tag R on 4:", b1[1], "| create_tag L:", b2[1],
      "| tags:", all_tags_read(root))
if "R" in tag_names(root) or b2[1].get("r") != 2 or not all(
        ok for ok, _ in all_tags_read(root).values()):
    problems.append(f"(a) R {b1[1]}, L {b2[1]}, tags {all_tags_read(root)}")

# (b) delete_tag of a tag on an expired snapshot, same name re-created meanwhile
root = four_snapshots("b")
Table.open(root).create_tag("T", 1)
expirer(Table.open(root), 2).expire()
pause, orig_files = Pause(), D.Deleter.files
main = {}


def files(self, kind, paths, must_finish=False):
    if threading.current_thread() is main.get("th") and not pause.reached.is_set():
        pause.hit()
    return orig_files(self, kind, paths, must_finish=must_finish)
D.Deleter.files = files
da = in_thread(lambda: TagOperations(Table.open(root).store).delete_tag("T").deleted_files)
main["th"] = da[0]
pause.reached.wait(30)
b = in_thread(lambda: Table.open(root).create_tag("T", 4).id)
time.sleep(0.5)
pause.go.set()
da[0].join(60)
b[0].join(60)
D.Deleter.files = orig_files
pend = os.path.join(root, "tag-deletions")
print("(b) delete_tag:", da[1], "| create_tag T on 4:", b[1], "| tags:", all_tags_read(root),
      "| markers dir:", [n for d_, _, fs in os.walk(root) for n in fs if "deletion" in d_])
if b[1].get("r") != 4 or not tag_reads(root, "T")[0]:
    problems.append(f"(b) create_tag after delete_tag: {b[1]} {all_tags_read(root)}")

# (c) batch tag replacement beside a user's create_tag of the same name
root = new_table("c", {"tag.automatic-creation": "batch",
                       "tag.batch.customized-name": "B"}).store.root
write(Table.open(root), 0)        # 1, tag B on 1 (automatic)
write(Table.open(root), 10)       # 2, B replaced onto 2
print("(c) before:", all_tags_read(root))
pause, orig_abc = Pause(), TL.TagLifecycle.after_batch_commit
comm = {}


def abc(self, result=None):
    if threading.current_thread() is comm.get("th"):
        pause.hit()
    return orig_abc(self, result)
TL.TagLifecycle.after_batch_commit = abc
ca = in_thread(lambda: write(Table.open(root), 20))   # 3: its maintenance replaces B onto 3
comm["th"] = ca[0]
pause.reached.wait(30)
ub = in_thread(lambda: Table.open(root).delete_tag("B").deleted)
uc = in_thread(lambda: Table.open(root).create_tag("U").id)
time.sleep(0.5)
pause.go.set()
for th, _ in (ca, ub, uc):
    th.join(60)
TL.TagLifecycle.after_batch_commit = orig_abc
print("(c) commit:", ca[1], "| user delete_tag B:", ub[1], "| user create_tag U (latest):", uc[1],
      "| tags:", all_tags_read(root))
if ca[1].get("r") != 3:
    problems.append(f"(c) the commit: {ca[1]}")
bad = {n: w for n, (ok, w) in all_tags_read(root).items() if not ok}
if bad:
    problems.append(f"(c) tags that do not read: {bad}")
print("OK" if not problems else f"FINDING: {problems[0]}")

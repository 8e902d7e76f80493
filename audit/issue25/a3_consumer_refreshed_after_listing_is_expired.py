"""Idea: consumer expiration lists the consumer files once (mtime), then deletes each stale
one. A reader that advances its consumer between the listing and that consumer's delete (a
live reader: Flink/Java, which never takes the lease) has its fresh position deleted by its
old mtime. Expiration then no longer stops at it and deletes the snapshots it still reads.
No re-check (stat again right before each delete) is made."""
import os
import time

from common import new_table, write
from paimon_commit.tags import ConsumerManager

t = new_table(options={"snapshot.num-retained.min": "1"})
for i in range(6):
    write(t, i * 3)
io, root = t.store.io, t.store.root
cm = ConsumerManager(io, root)
cm.write("dead-reader", 2)
cm.write("live-reader", 3)
old = time.time() - 3600
for c in ("dead-reader", "live-reader"):
    p = os.path.join(t.path, "consumer", f"consumer-{c}")
    os.utime(p, (old, old))

orig = io.delete_quietly
events = []
LIVE = None


def delete_quietly(path, *a, **kw):
    if "/consumer/consumer-" in path and not events:
        # meanwhile, the reader not yet deleted commits its progress (a Java/Flink job,
        # which does not take the lease): its file now has a fresh mtime
        other = "live-reader" if path.endswith("dead-reader") else "dead-reader"
        cm.write(other, 4)
        events.append(f"deleting {path.rsplit('/', 1)[-1]}; meanwhile {other} advanced to 4")
        global LIVE
        LIVE = other
    return orig(path, *a, **kw)


io.delete_quietly = delete_quietly
gone = cm.expire(int(time.time() * 1000) - 60_000)
io.delete_quietly = orig
print("events:", events)
print("consumers expired:", gone)
print("consumers left:", [c.consumer_id for c in cm.consumers()])
if LIVE in gone and LIVE not in [c.consumer_id for c in cm.consumers()]:
    print("FINDING (consumer's needs lost): a consumer refreshed after the listing was "
          "deleted by its stale mtime; the next expiration ignores its position")
else:
    print("NO FINDING")

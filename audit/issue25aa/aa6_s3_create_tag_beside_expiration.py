"""aa6: on moto S3 (the lease's records created with the store's conditional PUT). 4
snapshots (rows 1..4, write-only table). (a) An expiration (retain 2) in thread A paused right
after its re-check; thread B: create_tag("T", 1) with lease wait 0.5 s: LeaseHeldError, no
tag key. (b) Two threads create_tag("X") (latest) at once, default wait: the second waits for
the lease; X reads (both report success: identical bytes, see aa7). (c) create_tag("T", 3)
then expiration retain 1: T reads; the last lease record is released; no waiter key left."""
import os
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
Z = z_common()
from conftest import SCHEMA as S2, make_rows, write as write2  # noqa (tests/conftest.py)
from paimon_commit.errors import LeaseHeldError
from paimon_commit.lease import lease_manager, lease_settings
from paimon_commit.operations.expire import ExpireSnapshots

problems = []
t0 = time.time()
server, client, bucket = Z.moto_bucket()
try:
    uri = f"s3://{bucket}/db.db/t"
    t = Table.create(uri, S2, ["dt", "hr"], {"snapshot.num-retained.min": "1",
                                              "write-only": "true"})
    for i in range(1, 5):
        write2(t, make_rows([i]))
    # (a)
    pause, orig = Pause(), ExpireSnapshots._unchanged
    ExpireSnapshots._unchanged = lambda self, plan: (orig(self, plan), pause.hit())[0]
    out = {}
    a = threading.Thread(target=lambda: out.setdefault(
        "e", Table.open(uri).expire_snapshots(retain_max=2).expired_ids))
    a.start()
    pause.reached.wait(60)
    ExpireSnapshots._unchanged = orig
    try:
        with lease_settings(wait_s=0.5):
            Table.open(uri).create_tag("T", 1)
        res = "created"
    except LeaseHeldError:
        res = "LeaseHeldError"
    except Exception as e:  # noqa
        res = repr(e)[:150]
    pause.go.set()
    a.join(60)
    keys = Z.s3_keys(client, bucket, "db.db/t/tag/")
    print("(a) create_tag beside the paused expiration:", res, "| expired:", out.get("e"),
          "| tag keys:", keys)
    if res != "LeaseHeldError" or keys:
        problems.append(f"(a) {res}, tag keys {keys}")
    # (b)
    outs = []

    def mk():
        try:
            outs.append(("created", Table.open(uri).create_tag("X").id))
        except Exception as e:  # noqa
            outs.append((type(e).__name__, str(e)[:60]))
    ths = [threading.Thread(target=mk) for _ in range(2)]
    [th.start() for th in ths]
    [th.join(90) for th in ths]
    xs = sorted(Table.open(uri).read_arrow(tag="X").column("id").to_pylist())
    print("(b) two create_tag X:", outs, "| X reads:", xs)
    if [o[0] for o in outs] == ["created", "created"]:
        print("(b) note: both report success (the second PUT found byte-identical bytes, "
              "counted as its own lost reply): see aa7")
    elif sorted(o[0] for o in outs) != ["ValueError", "created"]:
        problems.append(f"(b) {outs}")
    if xs != [1, 2, 3, 4]:
        problems.append(f"(b) X reads {xs}")
    # (c)
    Table.open(uri).create_tag("T", 3)
    Table.open(uri).expire_snapshots(retain_max=1)
    tr = sorted(Table.open(uri).read_arrow(tag="T").column("id").to_pylist())
    latest = lease_manager(Table.open(uri).store).latest(check=False)
    waits = [k for k in Z.s3_keys(client, bucket, "db.db/t/.maintenance/") if "/wait-" in k]
    print("(c) T reads:", tr, "| last lease record released:", latest.released,
          "| waiter keys:", waits, f"({time.time() - t0:.1f} s)")
    if tr != [1, 2, 3] or not latest.released or waits:
        problems.append(f"(c) T {tr}, released {latest.released}, waiters {waits}")
finally:
    server.stop()
print("OK" if not problems else f"FINDING: {problems[0]}")

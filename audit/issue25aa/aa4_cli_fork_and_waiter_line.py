"""aa4: create_tag's lease wait from the CLI, in a forked child, behind a waiter line.
(a) Another process holds the lease (a `maintenance_lease` block, 12 s); `paimon-commit
create-tag T --lease-wait '1 s'` must exit 75 in about the wait, writing no tag; after the
holder releases, the same command exits 0 and the tag reads.
(b) fork: the parent holds the lease (explicit block) and forks; the child's create_tag
(lease wait 1 s) must not join its parent's lease (lease.py's fork handling): LeaseHeldError,
no tag; the parent still holds its lease afterwards (its record not released by the child)
and its own create_tag inside the block joins and writes a tag that reads.
(c) A waiter record of another machine (`.maintenance/wait-<now>-<token>`, rewritten by
nobody) in front of a free lease: create_tag with wait 1 s refuses (LeaseHeldError naming the
line) in about 1 s; with WAITER_TTL_MS patched to 1.5 s and wait 10 s it creates the tag once
the record stops counting (no hang)."""
import json
import os
import subprocess
import sys
import time
import uuid
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit import lease as L
from paimon_commit.errors import LeaseHeldError

problems = []
PY = sys.executable
ENV = dict(os.environ, PYTHONPATH=ROOT)

# (a)
root = four_snapshots("a")
holder = subprocess.Popen([PY, "-c", f"""
import time, sys
from paimon_commit import Table
from paimon_commit.lease import maintenance_lease
with maintenance_lease(Table.open({root!r}).store, "audit-holder"):
    print("held", flush=True)
    time.sleep(12)
"""], stdout=subprocess.PIPE, text=True, env=ENV)
assert holder.stdout.readline().strip() == "held"
t0 = time.monotonic()
r = subprocess.run([PY, "-m", "paimon_commit", "create-tag", root, "T", "--lease-wait", "1 s"],
                   capture_output=True, text=True, env=ENV)
took = time.monotonic() - t0
print(f"(a) CLI while held: rc {r.returncode} in {took:.1f} s:", r.stderr.strip()[-160:])
if r.returncode != 75 or took > 8 or tag_names(root):
    problems.append(f"(a) CLI create-tag while held: rc {r.returncode}, {took:.1f} s, "
                    f"tags {tag_names(root)}")
holder.wait(30)
r = subprocess.run([PY, "-m", "paimon_commit", "create-tag", root, "T", "--lease-wait", "1 s",
                    "--json"], capture_output=True, text=True, env=ENV)
print("(a) CLI after release: rc", r.returncode, r.stdout.strip()[:120], "| T reads:",
      tag_reads(root, "T"))
if r.returncode != 0 or not tag_reads(root, "T")[0]:
    problems.append(f"(a) CLI create-tag after release: rc {r.returncode} {r.stderr[-200:]}")

# (b)
root = four_snapshots("b")
store = Table.open(root).store
rfd, wfd = os.pipe()
with L.maintenance_lease(store, "parent") as held:
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        try:
            with L.lease_settings(wait_s=1.0):
                Table.open(root).create_tag("child", 3)
            msg = "created"
        except LeaseHeldError as e:
            msg = "LeaseHeldError"
        except BaseException as e:  # noqa
            msg = f"{type(e).__name__}: {e}"
        os.write(wfd, msg.encode()[:500])
        os._exit(0)
    os.close(wfd)
    os.waitpid(pid, 0)
    child = os.read(rfd, 1000).decode()
    latest = L.lease_manager(store).latest(check=False)
    still = latest.token == held.token and not latest.released
    try:
        held.check()
        check = "ok"
    except BaseException as e:  # noqa
        check = f"{type(e).__name__}: {e}"[:120]
    Table.open(root).create_tag("parent", 3)   # joins the held lease
print("(b) child's create_tag:", child, "| parent still holds:", still, "| parent check:",
      check, "| tags:", all_tags_read(root))
if child != "LeaseHeldError" or not still or check != "ok" or "child" in tag_names(root) \
        or not tag_reads(root, "parent")[0]:
    problems.append(f"(b) child {child}, parent holds {still}, check {check}, "
                    f"tags {tag_names(root)}")

# (c)
root = four_snapshots("c")
d = os.path.join(root, ".maintenance")
name = f"wait-{int(time.time() * 1000)}-{uuid.uuid4().hex}"
with open(os.path.join(d, name), "w") as f:
    json.dump({"table": "x", "host": "elsewhere", "pid": 1, "machine": "other-machine",
               "operation": "expire-snapshots", "sinceMillis": int(time.time() * 1000)}, f)
t0 = time.monotonic()
try:
    with L.lease_settings(wait_s=1.0):
        Table.open(root).create_tag("W", 3)
    res = "created"
except LeaseHeldError as e:
    res = f"LeaseHeldError: {str(e)[:100]}"
took = time.monotonic() - t0
print(f"(c) behind a foreign waiter, wait 1 s: {res} in {took:.1f} s")
if not res.startswith("LeaseHeldError") or took > 5 or "W" in tag_names(root):
    problems.append(f"(c) wait 1 s: {res} in {took:.1f} s")
old = L.WAITER_TTL_MS
L.WAITER_TTL_MS = 1500
try:
    t0 = time.monotonic()
    with L.lease_settings(wait_s=10.0):
        Table.open(root).create_tag("W", 3)
    took = time.monotonic() - t0
finally:
    L.WAITER_TTL_MS = old
print(f"(c) TTL 1.5 s, wait 10 s: created in {took:.1f} s; W reads:", tag_reads(root, "W"),
      "| waiter entries:", [x for x in lease_records(root) if x.startswith("wait-")])
if took > 8 or not tag_reads(root, "W")[0]:
    problems.append(f"(c) TTL 1.5 s: {took:.1f} s")
print("OK" if not problems else f"FINDING: {problems[0]}")

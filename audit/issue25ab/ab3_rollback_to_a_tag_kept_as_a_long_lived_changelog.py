"""ab3: rollback to a tag whose snapshot expired into a long-lived changelog
(`changelog.num-retained.*` above the snapshot retention), then commits and expiration.
(a) a table written by this library; (b) the same with the snapshot files re-serialized as
Paimon Java writes them (Jackson's pretty printer: `"id" : 2`; same content, other bytes).
The rollback restores snapshot 2 from the tag (library serialization); changelog-2 holds the
original snapshot's bytes. Then: commits, expiration (which keeps the expiring snapshot 2 as a
changelog), a rerun, orphan cleanup of an aged tree; every snapshot, tag, changelog read."""
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa

OPTS = {"snapshot.num-retained.min": "100", "snapshot.num-retained.max": "1000",
        "snapshot.time-retained": "1 d", "changelog.num-retained.min": "1000",
        "changelog.num-retained.max": "1000"}
findings = []


def changelog_ids(root):
    d = os.path.join(root, "changelog")
    return sorted(int(n.split("-")[1]) for n in os.listdir(d) if n.startswith("changelog-")) \
        if os.path.isdir(d) else []


def run(label, java_bytes):
    t = new_table("cl", OPTS)
    root = t.store.root
    for k in range(4):
        write(Table.open(root), 10 * k)            # 1..4
    if java_bytes:
        sd = os.path.join(root, "snapshot")
        for n in os.listdir(sd):
            if n.startswith("snapshot-"):
                doc = json.load(open(os.path.join(sd, n)))
                with open(os.path.join(sd, n), "w") as f:
                    json.dump(doc, f, indent=2, separators=(",", " : "))   # Jackson's pretty printer
    Table.open(root).create_tag("T", 2)
    expirer(Table.open(root), 1).expire()          # 1..3 -> changelog-1..3
    before = changelog_ids(root)
    Table.open(root).rollback_to(tag="T")          # restores snapshot-2, deletes changelog-3
    after_rb = (changelog_ids(root), sorted(Table.open(root).store.snapshots.list_snapshot_ids()))
    write(Table.open(root), 50)                    # 3
    write(Table.open(root), 60)                    # 4
    errs = []
    for attempt in range(2):
        try:
            r = expirer(Table.open(root), 1).expire()
            errs.append(f"expire ok: {r.expired_snapshots if hasattr(r, 'expired_snapshots') else r}")
        except Exception as e:  # noqa
            errs.append(f"expire raised {type(e).__name__}: {str(e)[:160]}")
    snaps = sorted(Table.open(root).store.snapshots.list_snapshot_ids())
    reads = {s: ids(root, snapshot_id=s) for s in snaps}
    tread = ids(root, tag="T")
    chk = Table.open(root).check()
    print(f"{label}: changelogs before rollback {before}, after rollback {after_rb}; "
          f"expirations: {errs}; snapshots now {snaps}; changelogs {changelog_ids(root)}")
    bad = {s: v for s, v in reads.items() if isinstance(v, str)}
    want = [0, 1, 2, 10, 11, 12, 50, 51, 52, 60, 61, 62]
    if reads.get(max(snaps)) != want or bad or tread != [0, 1, 2, 10, 11, 12] or chk.problems:
        findings.append(f"{label}: loss: latest {reads.get(max(snaps))}, unreadable {bad}, T {tread}, "
                        f"check {[str(p)[:100] for p in chk.problems][:2]}")
    if any("raised" in e for e in errs):
        findings.append(f"{label}: expiration after the rollback fails on every run: "
                        f"{errs[-1]} (snapshots {snaps} never expire)")


run("a library bytes", False)
run("b java bytes", True)
print(f"FINDING: {findings}" if findings else "OK")

"""Idea w3: `_check_old_files_exist` (data files written > 20 min before the commit, by their
creation time, must exist before a publish) under faithful and skewed models.
a) faithful v3 (files written 2 h ago: creation time AND mtime 2 h back; the writer's clock
   patched while writing), orphan cleanup 61 min, then the commit: must be refused, table reads.
b) the writer's zone is east of the committer's (files written 2 h ago under TZ=Asia/Tokyo,
   creation_time = Tokyo wall clock as UTC; committed under TZ=UTC, e.g. a Flink/Spark
   executor vs a driver, or a Java writer's JVM zone): creation_time lies 7 h in the future
   by the committer's reckoning, so the file is never looked at. Orphan cleanup deletes it,
   then the commit publishes.
c) the reverse (writer west: TZ=America/Los_Angeles, committer UTC), fresh files: counts the
   committer's exists() calls: an ordinary commit of fresh files looks at every file.
d) creation_time None (a message from another writer without it): exists() calls per commit.
Rows read with ours and pypaimon."""
import os
import time
import dataclasses

from common import (fresh, write, make_rows, prepared, snapshot_ids, names, call, show, reads,
                    OPTS)
import paimon_commit.writer as wr
from paimon_commit.io.local import LocalFileIO


def set_tz(tz):
    os.environ["TZ"] = tz
    time.tzset()


def aged_write(t, ids, hours):
    real = wr.local_millis_as_utc
    wr.local_millis_as_utc = lambda: real() - int(hours * 3600_000)
    try:
        msgs = prepared(t, ids)
    finally:
        wr.local_millis_as_utc = real
    old = time.time() - hours * 3600
    for m in msgs:
        for f in m.new_files:
            for d, _, fs in os.walk(t.path):
                if f.file_name in fs:
                    os.utime(os.path.join(d, f.file_name), (old, old))
    return msgs


def counting_exists():
    n = [0]
    real = LocalFileIO.exists

    def ex(self, p):
        if "/bucket-" in p:
            n[0] += 1
        return real(self, p)
    LocalFileIO.exists = ex
    return n, lambda: setattr(LocalFileIO, "exists", real)


findings = []
for case, wtz, ctz in (("a", "UTC", "UTC"), ("b", "Asia/Tokyo", "UTC")):
    set_tz(wtz)
    path, t = fresh(OPTS)
    write(t, make_rows([10]))
    msgs = aged_write(t, [11], 2)
    ct = msgs[0].new_files[0].creation_time
    set_tz(ctz)
    r = t.remove_orphan_files(older_than_duration="61 min")
    gone = not any(names(msgs)[0] in fs for _, _, fs in os.walk(path))
    res = call(lambda: t.new_commit(commit_user="job").commit(msgs))
    rows, d, ours = reads(path)
    print(f"{case}: writer TZ {wtz}, committer TZ {ctz}: creation_time - now(utc) = "
          f"{(ct - time.time() * 1000) / 3600_000:+.1f} h; orphan cleanup deleted the file: "
          f"{gone}; commit -> {show(res)[:120]}; latest {rows}")
    if ours is None:
        findings.append(f"{case} (writer {wtz}, committer {ctz}): commit {show(res)[:30]}, "
                        f"latest unreadable")
set_tz("UTC")

for case, wtz in (("c", "America/Los_Angeles"), ("d", None)):
    set_tz(wtz or "UTC")
    path, t = fresh(OPTS)
    write(t, make_rows([10]))
    msgs = prepared(t, list(range(100, 120)), ) if False else None
    msgs = []
    for i in range(20):
        msgs += prepared(t, [100 + i])
    if case == "d":
        msgs = [dataclasses.replace(m, new_files=tuple([dataclasses.replace(f, creation_time=None)
                                                  for f in m.new_files])) for m in msgs]
    set_tz("UTC")
    n, undo = counting_exists()
    try:
        res = call(lambda: t.new_commit(commit_user="job").commit(msgs))
    finally:
        undo()
    rows, d, ours = reads(path)
    print(f"{case}: fresh files ({'writer TZ ' + wtz if wtz else 'creation_time None'}), "
          f"committer UTC: commit -> {show(res)}; exists() on data files during the commit: "
          f"{n[0]} for {len(msgs)} files")
    if n[0]:
        findings.append(f"{case}: an ordinary commit of {len(msgs)} fresh files looked at "
                        f"{n[0]} of them ({'writer zone west' if wtz else 'creation_time None'})")
print(("FINDING: " + "; ".join(findings)) if findings else "OK")

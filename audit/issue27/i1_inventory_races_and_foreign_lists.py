"""Inventory-fed orphan cleanup (file_list=, the CLI's --file-list): ideas from the brief.

A. a file listed old and unused, committed (a late commit of kept messages) after the plan
   and before the delete phase (the delete phase paused to let it in): kept?
B. a file listed as an orphan, then deleted and re-created under the same name (another size)
   after the list: kept?
C. a file used by a retained snapshot that the list shows with an old time: kept?
D. a list from a copy of the table (another root), a row through `..`, a row through a
   symlink to the root, a list time in the future, duplicate rows (same status): refused /
   harmless?
E. --file-list with --partition: the list's partitions drive manifest pruning; a used file of
   the scoped partition shown old in the list: kept?"""
import os
import shutil
import tempfile
import time

import pyarrow as pa

from common import new_table, write_rows, age_all, plant_orphan, cli_json, files, OLD_MS
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner

schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
now_ms = lambda: int(time.time() * 1000)  # noqa: E731
CUTOFF = now_ms() - 86400_000
findings, notes = [], []


def inventory(root, extra=(), drop=()):
    """A CSV list of every file under root (as it is now), plus `extra` rows."""
    lines = ["path,size,last_modified"]
    for rel in sorted(files(root)):
        if rel.startswith(".maintenance/") or rel in drop:
            continue
        st = os.stat(os.path.join(root, rel))
        lines.append(f"{os.path.join(root, rel)},{st.st_size},{st.st_mtime_ns // 1_000_000}")
    lines += list(extra)
    p = os.path.join(tempfile.mkdtemp(prefix="audit27-inv-"), "list.csv")
    with open(p, "w") as f:
        f.write("\n".join(lines) + "\n")
    return p


def table_with_history():
    t = new_table(schema=schema, partition_keys=["p"])
    write_rows(t, {"id": [1], "p": ["a"]}, schema=schema)
    write_rows(t, {"id": [2], "p": ["b"]}, schema=schema)
    return t


def used_files(t):
    return {os.path.relpath(os.path.join(t.path, e), t.path) for e in files(t.path)
            if "bucket-" in e}


def run(t, listing, pause=None, **kw):
    ctx = CleanContext(t.path, older_than_ms=CUTOFF, file_list=listing,
                       file_list_time_ms=now_ms() - 60_000, **kw)
    c = OrphanFilesCleaner(ctx)
    if pause is not None:
        orig = c.delete

        def delete(orphans, executor):
            pause()
            return orig(orphans, executor)
        c.delete = delete
    return c.clean()


# A: a late commit of an old file after the plan
t = table_with_history()
w = t.new_writer()
w.write_arrow(pa.table({"id": [3], "p": ["a"]}, schema=schema))
msgs = w.prepare_commit()
age_all(t.path)
late = sorted(used_files(t) - {f for f in files(t.path) if False})
listing = inventory(t.path)


def commit_late():
    with t.new_commit(commit_user="late") as c:
        c.commit(msgs)


r = run(t, listing, pause=commit_late)
rows = t.read_arrow().num_rows
print(f"A: deleted {r.deleted_paths}; rows {rows} (3 expected)")
if rows != 3 or any("bucket-" in p for p in r.deleted_paths):
    findings.append(f"A: a file committed after the plan was deleted: {r.deleted_paths}")

# B: re-created with the same name after the list
t = table_with_history()
stray = plant_orphan(os.path.join(t.path, "p=a", "bucket-0"))
age_all(t.path)
listing = inventory(t.path)
os.remove(stray)
with open(stray, "wb") as f:
    f.write(b"a different, newer file")
os.utime(stray, (OLD_MS / 1000, OLD_MS / 1000))
r = run(t, listing)
print(f"B: deleted {r.deleted_paths}; re-created file exists: {os.path.exists(stray)}; "
      f"changed since the list: {r.file_list_changed}")
if not os.path.exists(stray):
    findings.append("B: a file re-created under a listed name (other size) was deleted")

# C: a used file shown old
t = table_with_history()
age_all(t.path)
listing = inventory(t.path)
r = run(t, listing)
print(f"C: deleted {r.deleted_paths}; rows {t.read_arrow().num_rows}")
if any("bucket-" in p for p in r.deleted_paths):
    findings.append(f"C: used files deleted: {r.deleted_paths}")

# D: foreign and odd lists
t = table_with_history()
age_all(t.path)
copy = t.path + "-copy"
shutil.copytree(t.path, copy)
link = t.path + "-link"
os.symlink(t.path, link)
some = sorted(f for f in files(t.path) if "bucket-" in f)[0]
base_rows = open(inventory(t.path)).read().splitlines()
variants = {
    "list of a copy": inventory(copy),
    "row through ..": None, "row through a symlink": None, "duplicate rows": None,
}
dup = base_rows + [base_rows[1]]
data_row = next(x for x in base_rows if "/p=b/" in x)
dotdot = base_rows + [data_row.replace(t.path + "/p=b/", t.path + "/p=a/../p=b/", 1)]
sym = base_rows + [base_rows[1].replace(t.path, link, 1)]
for name, lines in (("row through ..", dotdot), ("row through a symlink", sym),
                    ("duplicate rows", dup)):
    p = os.path.join(tempfile.mkdtemp(prefix="audit27-inv-"), "list.csv")
    open(p, "w").write("\n".join(lines) + "\n")
    variants[name] = p
for name, p in variants.items():
    before = files(t.path)
    try:
        r = run(t, p)
        out = f"ran: deleted {r.deleted_paths}"
    except Exception as e:  # noqa: BLE001
        out = f"{type(e).__name__}: {str(e)[:150]}"
    lost = {f for f in before - files(t.path) if not f.startswith(".maintenance/")}
    print(f"D [{name}]: {out}")
    if lost:
        findings.append(f"D [{name}]: deleted {sorted(lost)}")
try:
    OrphanFilesCleaner(CleanContext(t.path, older_than_ms=CUTOFF, file_list=inventory(t.path),
                                    file_list_time_ms=now_ms() + 3600_000)).clean()
    print("D [time in the future]: accepted")
except Exception as e:  # noqa: BLE001
    print(f"D [time in the future]: {type(e).__name__}: {str(e)[:120]}")

# E: --file-list with --partition (CLI)
t = table_with_history()
stray = plant_orphan(os.path.join(t.path, "p=a", "bucket-0"))
age_all(t.path)
listing = inventory(t.path)
rc, doc, err = cli_json("remove-orphan-files", t.path, "--older-than-duration", "1 d",
                        "--file-list", listing, "--file-list-time",
                        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - 60)),
                        "--partition", "p=a")
rows = t.read_arrow().num_rows
print(f"E: rc {rc}: {doc if not isinstance(doc, dict) else doc.get('deleted_paths')}; "
      f"{err[-200:]} rows {rows}")
if rows != 2:
    findings.append(f"E: rows {rows} after a scoped inventory-fed run")

for f in findings:
    print("FINDING (data loss):", f)
if not findings:
    print("NO FINDING")

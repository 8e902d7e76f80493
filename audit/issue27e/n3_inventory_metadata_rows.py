"""N3: inventory-fed orphan cleanup (not a dry run) of a live table whose list shows every file
under the root, its metadata directories included: snapshot/ (with LATEST and EARLIEST),
manifest/, schema/, tag/, changelog/ (long-lived changelogs: changelog.num-retained above the
snapshots'), the lease directory .maintenance/, and a planted orphan in each of manifest/ and
a bucket directory. Every row is dated 3 days ago (the table's real mtimes set to that too).
The list is given as a path, as stdin with a UTF-8 BOM and CRLF line ends, and as an S3-style
epoch-millis / ISO-with-offset mix. Afterwards every retained snapshot, tag and long-lived
changelog must check healthy and read as before, and only the planted orphans may be gone."""
import os
import sys
import tempfile
import time

import pyarrow as pa

from common import new_table, write_rows, age_all, plant_orphan, files, cli_json
from paimon_commit import Table
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner

schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
findings = []
OLD = int(time.time() * 1000) - 3 * 86400_000


def build():
    t = new_table("t", schema=schema, partition_keys=["p"], options={
        "snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2",
        "snapshot.time-retained": "1 ms",
        "changelog.num-retained.min": "10", "changelog.num-retained.max": "10",
        "changelog.time-retained": "10 d"})
    for i in range(6):
        write_rows(t, {"id": [i], "p": ["a" if i % 2 else "b"]}, schema=schema)
        if i == 1:
            t.create_tag("t1")
    t.create_tag("t5")
    os.makedirs(os.path.join(t.path, ".maintenance"), exist_ok=True)
    orphans = {plant_orphan(os.path.join(t.path, "manifest"),
                            "manifest-00000000-0000-0000-0000-00000000dead-0"),
               plant_orphan(os.path.join(t.path, "p=a", "bucket-0"))}
    age_all(t.path, OLD)
    return t, orphans


def fmt(ms, style, i):
    if style == "iso-offset":
        import datetime
        tz = datetime.timezone(datetime.timedelta(hours=(i % 3) * 5 - 5, minutes=30 * (i % 2)))
        return datetime.datetime.fromtimestamp(ms / 1000, tz).isoformat(timespec="milliseconds")
    return str(ms)


def listing(t, style="ms", bom=False, crlf=False):
    eol = "\r\n" if crlf else "\n"
    lines = ["path,size,last_modified"]
    for i, rel in enumerate(sorted(files(t.path))):
        full = os.path.join(t.path, rel)
        st = os.stat(full)
        lines.append(f"{full},{st.st_size},{fmt(st.st_mtime_ns // 1_000_000, style, i)}")
    text = ("\ufeff" if bom else "") + eol.join(lines) + eol
    return text


def state(t):
    tt = Table.open(t.path)
    out = {"latest": tt.read_arrow().num_rows}
    for s in tt.snapshots():
        out[f"snapshot {s.id}"] = tt.read_arrow(snapshot_id=s.id).num_rows
    for tag in tt.tags():
        out[f"tag {tag.name}"] = tt.read_arrow(tag=tag.name).num_rows
    return out


def attempt(label, run):
    t, orphans = build()
    before_files = files(t.path)
    before = state(t)
    chk0 = Table.open(t.path).check()
    try:
        out = run(t)
    except Exception as e:  # noqa: BLE001
        out = f"{type(e).__name__}: {str(e)[:200]}"
    # (.maintenance/lease-N: the lease's own records, which every maintenance run prunes)
    gone = {os.path.join(t.path, f) for f in before_files - files(t.path)
            if not f.startswith(".maintenance/")}
    print(f"{label}: {out}; gone: {sorted(os.path.relpath(g, t.path) for g in gone)}")
    if gone - orphans:
        findings.append(f"{label}: deleted non-orphans {sorted(gone - orphans)}")
    try:
        after = state(t)
    except Exception as e:  # noqa: BLE001
        after = f"{type(e).__name__}: {str(e)[:200]}"
    chk = Table.open(t.path).check()
    if after != before or (chk0.healthy and not chk.healthy):
        findings.append(f"{label}: reads changed {before} -> {after}; check {chk.broken}")


def api(style):
    def run(t):
        p = os.path.join(tempfile.mkdtemp(prefix="audit27e-n3-"), "list.csv")
        open(p, "w", newline="").write(listing(t, style))
        r = OrphanFilesCleaner(CleanContext(t.path, older_than_ms=int(time.time() * 1000) -
                                            86400_000, file_list=p,
                                            file_list_time_ms=int(time.time() * 1000) - 60_000)
                               ).clean()
        return f"deleted {len(r.deleted_paths)}"
    return run


def stdin_bom_crlf(t):
    text = listing(t, "iso-offset", bom=True, crlf=True)
    taken = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - 60))
    rc, doc, err = cli_json("remove-orphan-files", t.path, "--older-than-duration", "1 d",
                            "--file-list", "-", "--file-list-time", taken, stdin=text)
    return f"rc={rc} " + (f"deleted {doc.get('deleted_files')}" if isinstance(doc, dict)
                          else f"{str(doc)[:100]} {err[-200:]}")


attempt("1 api, epoch ms", api("ms"))
attempt("2 api, ISO with offsets", api("iso-offset"))
attempt("3 cli stdin, BOM + CRLF + ISO offsets", stdin_bom_crlf)
for f in findings:
    print("FINDING:", f)
if findings:
    sys.exit(1)
print("NO FINDING")

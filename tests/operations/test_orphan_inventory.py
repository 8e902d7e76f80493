"""Inventory-fed orphan cleanup (`remove-orphan-files TABLE --file-list PATH`, `file_list=`):
a file list (S3 Inventory, GCS inventory, any CSV with a header or Parquet) replaces the
listing. Only files it shows are deleted, only when it is newer than the cutoff and covers the
table, and only if each one's status, read again right before the delete, is what it showed.
A malformed, foreign or stale list is refused (exit 2, the line number, nothing touched)."""
import datetime
import io
import json
import os
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import without_bill

from conftest import files_under, make_rows, write
from invariants import assert_intact

from paimon_commit import OptionError
from paimon_commit.cli import main
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
from paimon_commit.operations.orphan_inventory import FileListError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OLD = time.time() - 3 * 86400
D1, D2 = datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)
HOUR_MS = 3_600_000


def now_ms():
    return int(time.time() * 1000)


def iso(ms):
    t = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def age(path, when=OLD):
    for root, dirs, files in os.walk(str(path)):
        for n in files + dirs:
            os.utime(os.path.join(root, n), (when, when), follow_symlinks=False)


def put(root, rel, data=b"stray", when=OLD):
    p = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
    os.utime(p, (when, when))
    return rel


def entries(root):
    """(absolute path, size, mtime ms) of every file under the table, as a listing sees it."""
    out = []
    for rel in files_under(root) + [os.path.join(".maintenance", n) for n in
                                    os.listdir(os.path.join(str(root), ".maintenance"))
                                    if os.path.isfile(os.path.join(str(root), ".maintenance",
                                                                   n))] \
            if os.path.isdir(os.path.join(str(root), ".maintenance")) else files_under(root):
        p = os.path.join(str(root), rel)
        st = os.stat(p)
        out.append((p, st.st_size, st.st_mtime_ns // 1_000_000))
    return out


def csv_list(rows, header="path,size,last_modified"):
    lines = [header] if header else []
    lines += [f"{p},{size},{iso(mtime)}" for p, size, mtime in rows]
    return ("\n".join(lines) + "\n").encode()


def parquet_list(rows):
    t = pa.table({"path": [r[0] for r in rows], "size": [r[1] for r in rows],
                  "last_modified": pa.array([r[2] for r in rows], pa.timestamp("ms", "UTC"))})
    buf = io.BytesIO()
    pq.write_table(t, buf)
    return buf.getvalue()


def save(tmp_path, data, name="inventory.csv"):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


@pytest.fixture
def history(table, table_path):
    """Two partitions, a tag, an expired snapshot (its files orphans now), everything 3 days
    old; returns the table."""
    write(table, make_rows([1, 2], dt=D1))
    write(table, make_rows([3], dt=D2))
    table.create_tag("t1", 2)
    write(table, make_rows([4], dt=D1, hr=2))
    age(table_path)
    return table


def strays(root):
    """Old strays in a bucket directory, manifest/ and a partition of their own."""
    return sorted([put(root, "dt=2024-01-01/hr=1/bucket-0/data-stray-0.parquet"),
                   put(root, "manifest/manifest-stray-0"),
                   put(root, "dt=2023-12-31/hr=1/bucket-0/data-stray-1.parquet")])


def clean(path, data, tmp_path, name="inventory.csv", **kw):
    kw.setdefault("file_list_time_ms", now_ms() - HOUR_MS)
    return OrphanFilesCleaner(CleanContext(str(path), file_list=save(tmp_path, data, name),
                                           **kw)).clean()


def run(capsys, *argv, stdin=None):
    if stdin is not None:   # `--file-list -`: a real process reading its stdin
        r = subprocess.run([sys.executable, "-m", "paimon_commit", *map(str, argv)],
                           input=stdin, capture_output=True, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": ROOT})
        return r.returncode, r.stdout.decode(), r.stderr.decode()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, root, argv, line):
    """exit 2, nothing on stdout, `line` alone on stderr, nothing touched."""
    before = [(p, os.stat(p).st_mtime_ns) for p, _, _ in entries(root)]
    code, out, err = run(capsys, *argv)
    assert (code, out, err.strip().splitlines()) == (2, "", [line]), err
    assert [(p, os.stat(p).st_mtime_ns) for p, _, _ in entries(root)] == before


# --- what it deletes ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_an_inventory_deletes_only_the_strays_older_than_the_cutoff(history, table_path,
                                                                    tmp_path, fmt):
    planted = strays(table_path)
    young = put(table_path, "dt=2024-01-02/hr=1/bucket-0/data-young-0.parquet",
                when=time.time() - 60)
    listed = entries(table_path)
    data = csv_list(listed) if fmt == "csv" else parquet_list(listed)
    before = set(files_under(table_path))
    taken = now_ms() - 600_000
    r = clean(table_path, data, tmp_path, f"inv.{fmt}", file_list_time_ms=taken)
    assert r.deleted_paths == planted + sorted(
        p for p in before - set(planted) - {young}
        if p.startswith(("dt=", "manifest/")) and p not in referenced(table_path))
    assert (r.file_list_time_ms, r.to_dict()["file_list_time"]) == (taken, iso(taken))
    assert r.to_dict()["file_list_rows"] == len(listed) and r.complete
    assert set(files_under(table_path)) == before - set(r.deleted_paths)
    assert os.path.exists(table_path / young)
    assert_intact(table_path)
    again = clean(table_path, csv_list(entries(table_path)), tmp_path)
    assert again.deleted_paths == []


def referenced(root):
    from invariants import referenced_files
    from paimon_commit import Table
    return {os.path.relpath(p, str(root)) for p in referenced_files(Table.open(str(root)))}


def test_the_same_as_a_listing_deletes(history, table_path, tmp_path):
    strays(table_path)
    put(table_path, "snapshot/.snapshot-9.tmp")
    put(table_path, "tag/.tag-x.tmp")
    put(table_path, "stray-at-the-root")
    put(table_path, "unknown/dir/file")
    listing = OrphanFilesCleaner(CleanContext(str(table_path), dry_run=True)).clean()
    r = clean(table_path, csv_list(entries(table_path)), tmp_path, dry_run=True)
    assert r.deleted_paths == listing.deleted_paths and r.by_kind == listing.by_kind
    assert "stray-at-the-root" not in r.deleted_paths
    assert "unknown/dir/file" not in r.deleted_paths


def test_a_file_the_inventory_does_not_show_is_kept(history, table_path, tmp_path):
    shown, hidden = strays(table_path)[1:], "dt=2024-01-02/hr=1/bucket-0/data-hidden-0.parquet"
    put(table_path, hidden)
    listed = [e for e in entries(table_path) if not e[0].endswith("data-hidden-0.parquet")
              and not e[0].endswith("data-stray-1.parquet")]
    r = clean(table_path, csv_list(listed), tmp_path)
    assert set(shown) <= set(r.deleted_paths)
    assert os.path.exists(table_path / hidden)
    assert os.path.exists(table_path / "dt=2023-12-31/hr=1/bucket-0/data-stray-1.parquet")
    assert_intact(table_path)


def test_a_candidate_rewritten_after_the_inventory_is_kept(history, table_path, tmp_path):
    planted = strays(table_path)
    listed = entries(table_path)
    rewritten = put(table_path, planted[0], b"rewritten, same old time", when=OLD)
    touched = table_path / planted[1]
    os.utime(touched, None)   # modified now: younger than the cutoff
    os.remove(table_path / planted[2])
    r = clean(table_path, csv_list(listed), tmp_path)
    assert not set(planted) & set(r.deleted_paths)
    assert r.file_list_changed == 3
    assert (table_path / rewritten).read_bytes() == b"rewritten, same old time"
    assert touched.exists()


def test_a_file_committed_after_the_inventory_is_kept(table, table_path, tmp_path):
    """A writer's files, old and not committed when the inventory was taken (strays then),
    committed before the clean: the used set is read after the list, so they stay."""
    write(table, make_rows([1]))
    w = table.new_writer()
    w.write_arrow(make_rows([2, 3], dt=D2))
    messages = w.prepare_commit()
    age(table_path)
    listed = entries(table_path)
    with table.new_commit() as c:
        c.commit(messages)
    age(table_path)
    inventory = csv_list(listed + [e for e in entries(table_path)
                                   if e[0] not in {x[0] for x in listed}])
    r = clean(table_path, inventory, tmp_path)
    assert r.deleted_paths == []
    t = assert_intact(table_path)
    assert sorted(t.read_arrow().column("id").to_pylist()) == [1, 2, 3]


def test_a_partition_scope_deletes_only_in_its_partitions(history, table_path, tmp_path):
    planted = strays(table_path)
    r = clean(table_path, csv_list(entries(table_path)), tmp_path,
              partitions=["dt=2023-12-*"])
    assert r.deleted_paths == ["dt=2023-12-31/hr=1/bucket-0/data-stray-1.parquet"]
    assert r.partitions_listed == 1
    assert all(os.path.exists(table_path / p) for p in planted[1:])


def test_a_symlinked_partition_is_not_followed(history, table_path, tmp_path):
    outside = tmp_path / "outside" / "bucket-0"
    outside.mkdir(parents=True)
    put(outside.parent, "bucket-0/data-victim-0.parquet")
    os.symlink(outside.parent, table_path / "dt=2023-01-01")
    listed = entries(table_path) + [(str(table_path / "dt=2023-01-01/bucket-0/"
                                         "data-victim-0.parquet"), 5, int(OLD * 1000))]
    table_path_hr = table_path / "dt=2023-01-01" / "hr=1"
    assert not table_path_hr.exists()
    r = clean(table_path, csv_list(listed), tmp_path)
    assert (outside / "data-victim-0.parquet").exists()
    assert not [p for p in r.deleted_paths if "victim" in p]


# --- the CLI: time, stdin, JSON -------------------------------------------------------------

def test_cli_reads_stdin_and_states_the_lists_time(history, table_path, tmp_path, capsys):
    planted = strays(table_path)
    taken = datetime.datetime.now() - datetime.timedelta(minutes=30)
    shown = taken.strftime("%Y-%m-%d %H:%M:%S")
    code, out, err = run(capsys, "remove-orphan-files", table_path, "--file-list", "-",
                         "--file-list-time", shown, "--json",
                         stdin=csv_list(entries(table_path)))
    assert code == 0, err
    r = json.loads(out)
    assert set(planted) <= set(r["deleted_paths"])
    assert r["file_list"] == "stdin"
    assert r["file_list_time_ms"] == int(datetime.datetime.strptime(
        shown, "%Y-%m-%d %H:%M:%S").timestamp() * 1000)
    assert r["file_list_time_source"] == f"--file-list-time {shown!r}"
    code, out, err = run(capsys, "remove-orphan-files", table_path, "--file-list", "-",
                         "--file-list-time", shown, stdin=csv_list(entries(table_path)))
    assert code == 0 and without_bill(out).splitlines() == [
        f"deleted 0 file(s), 0 bytes, 0 empty dir(s) from the file list stdin taken at "
        f"{r['file_list_time']} (--file-list-time {shown!r})"], (out, err)


# --- refused: exit 2, one line, nothing touched ----------------------------------------------

def test_a_stale_inventory_is_refused(history, table_path, tmp_path, capsys):
    strays(table_path)
    inv = save(tmp_path, csv_list(entries(table_path)))
    taken = (datetime.datetime.now() - datetime.timedelta(days=2)).strftime("%Y-%m-%d %H:%M:%S")
    cutoff = now_ms() - 86_400_000
    code, out, err = run(capsys, "remove-orphan-files", table_path, "--file-list", inv,
                         "--file-list-time", taken)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: the file list was taken at ") and \
        f"(--file-list-time {taken!r}), not after the cutoff" in err and \
        "a stale list" in err and len(err.strip().splitlines()) == 1
    assert abs(int(datetime.datetime.strptime(
        err.split("the cutoff ")[1][:23], "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp() * 1000) - cutoff) < 60_000
    assert all(os.path.exists(p) for p, _, _ in entries(table_path))


def test_an_inventory_without_its_time_is_refused(history, table_path, tmp_path, capsys):
    inv = save(tmp_path, csv_list(entries(table_path)))
    refused(capsys, table_path, ["remove-orphan-files", table_path, "--file-list", inv],
            "error: --file-list needs the time the list was taken: --file-list-time "
            "'YYYY-MM-DD HH:MM:SS' (local time; in doubt, earlier), or the S3 Inventory's "
            "--file-list-manifest manifest.json (the newest last-modified time in a list is "
            "only a lower bound of it; in doubt, nothing is deleted)")
    with pytest.raises(OptionError, match="needs the time it was taken"):
        CleanContext(str(table_path), file_list=inv)


def _recent():
    return (datetime.datetime.now() - datetime.timedelta(minutes=5)).strftime(
        "%Y-%m-%d %H:%M:%S")


def test_a_path_outside_the_root_is_refused_with_its_line(history, table_path, tmp_path,
                                                          capsys):
    strays(table_path)
    rows = entries(table_path)
    other = str(table_path.parent / "other" / "bucket-0" / "data-x.parquet")
    inv = save(tmp_path, csv_list(rows[:2] + [(other, 1, int(OLD * 1000))] + rows[2:]))
    refused(capsys, table_path, ["remove-orphan-files", table_path, "--file-list", inv,
                                 "--file-list-time", _recent()],
            f"error: file list {inv}, line 4: {other!r} is not a file inside the table root "
            f"{table_path}: not a listing of this table (an inventory of a whole bucket: keep "
            f"only this table's rows); nothing was deleted")
    dotted = str(table_path) + "/dt=2024-01-01/../../other/x"
    inv = save(tmp_path, csv_list(rows[:1] + [(dotted, 1, int(OLD * 1000))]))
    refused(capsys, table_path, ["remove-orphan-files", table_path, "--file-list", inv,
                                 "--file-list-time", _recent()],
            f"error: file list {inv}, line 3: {dotted!r} is not a file inside the table root "
            f"{table_path}: not a listing of this table (an inventory of a whole bucket: keep "
            f"only this table's rows); nothing was deleted")


@pytest.mark.parametrize("body, line", [
    (None, "error: file list {inv}, line 1: not a header row (no path (or key), no size, "
           "no last-modified column); a CSV file list needs a header "
           "row naming its path (or key), size and last-modified columns; an S3 Inventory CSV "
           "has none: give its manifest.json with --file-list-manifest (file_list_manifest=)"),
    ("path,size,last_modified\n{p},12,{t}\n{p2},twelve,{t}\n",
     "error: file list {inv}, line 3: size 'twelve' is not a number of bytes"),
    ("path,size,last_modified\n{p},12,{t}\n{p2},12,2024-01-01 10:00:00\n",
     "error: file list {inv}, line 3: last-modified '2024-01-01 10:00:00' has no time zone "
     "(e.g. 2024-01-01T10:00:00.000Z)"),
    ("path,size,last_modified\n{p},12,{t}\n{p2},12\n",
     "error: file list {inv}, line 3: 2 field(s), the columns need 3"),
    ("path,size,last_modified\n{p},12,{t}\n{p},13,{t}\n",
     "error: file list {inv}, line 3: '{p}' is listed twice, with different sizes or times"),
])
def test_a_malformed_inventory_is_refused_with_its_line(history, table_path, tmp_path, capsys,
                                                       body, line):
    strays(table_path)
    rows = entries(table_path)
    p = str(table_path / "dt=2024-01-01/hr=1/bucket-0/data-stray-0.parquet")
    p2 = str(table_path / "manifest/manifest-stray-0")
    if body is None:   # an S3 Inventory CSV as it is: no header
        data = csv_list(rows, header=None)
    else:
        data = body.format(p=p, p2=p2, t=iso(int(OLD * 1000))).encode()
    inv = save(tmp_path, data)
    refused(capsys, table_path, ["remove-orphan-files", table_path, "--file-list", inv,
                                 "--file-list-time", _recent()], line.format(inv=inv, p=p))


def test_an_inventory_of_another_table_or_a_partial_one_is_refused(history, table_path,
                                                                   tmp_path, capsys):
    strays(table_path)
    rows = entries(table_path)
    data_only = [r for r in rows if "/dt=" in r[0]]
    inv = save(tmp_path, csv_list(data_only))
    refused(capsys, table_path, ["remove-orphan-files", table_path, "--file-list", inv,
                                 "--file-list-time", _recent()],
            f"error: file list {inv} is not a whole listing of {table_path}: it does not show "
            f"schema/schema-0, which the table has had since it was created (another table's "
            f"list, a partial one, or one from before the table was created); nothing was "
            f"deleted")
    no_snapshots = [r for r in rows if "/snapshot/" not in r[0]]
    inv = save(tmp_path, csv_list(no_snapshots))
    refused(capsys, table_path, ["remove-orphan-files", table_path, "--file-list", inv,
                                 "--file-list-time", _recent()],
            f"error: file list {inv} is not a whole listing of {table_path}: it shows none of "
            f"the table's 3 retained snapshot(s) (snapshot-1 .. snapshot-3); nothing was "
            f"deleted")
    t = history
    used = sorted(n for n in os.listdir(table_path / "manifest")
                  if n.startswith("manifest-") and "stray" not in n and
                  n in {os.path.basename(p) for p in referenced(table_path)} |
                  set(os.listdir(table_path / "manifest")))
    latest_list = t.snapshots()[-1].base_manifest_list
    no_list = [r for r in rows if not r[0].endswith(latest_list)]
    inv = save(tmp_path, csv_list(no_list))
    refused(capsys, table_path, ["remove-orphan-files", table_path, "--file-list", inv,
                                 "--file-list-time", _recent()],
            f"error: file list {inv} is not a whole listing of {table_path}: it shows "
            f"snapshot-3 but not {min(n for n in used if n == latest_list)}, which that "
            f"snapshot uses (1 in all): a partial list; nothing was deleted")


def test_the_python_api_refuses_before_any_io(history, table_path, tmp_path):
    inv = save(tmp_path, csv_list(entries(table_path)))
    cutoff = now_ms() - 86_400_000
    with pytest.raises(FileListError, match="a stale list"):
        CleanContext(str(table_path), file_list=inv, file_list_time_ms=cutoff - 1000)
    with pytest.raises(FileListError, match="is in the future"):
        CleanContext(str(table_path), file_list=inv, file_list_time_ms=now_ms() + 60_000)
    with pytest.raises(OptionError, match="not both"):
        CleanContext(str(table_path), file_list=inv, file_list_time_ms=now_ms(),
                     file_list_manifest=inv)


def test_a_file_list_is_refused_where_it_would_be_ignored(history, table_path, tmp_path,
                                                          capsys):
    """Distributed mode lists the table on the executors: a list would be ignored."""
    inv = save(tmp_path, csv_list(entries(table_path)))
    refused(capsys, table_path, ["remove-orphan-files", table_path, "--file-list", inv,
                                 "--file-list-time", _recent(), "--mode", "distributed"],
            "error: --file-list is not supported with --mode distributed (the executors list "
            "the table themselves)")
    from paimon_commit.spark.orphan import DistributedOrphanFilesCleaner
    with pytest.raises(OptionError, match="not supported by the distributed orphan cleanup"):
        DistributedOrphanFilesCleaner(CleanContext(str(table_path), file_list=inv,
                                                   file_list_time_ms=now_ms() - 60_000))
    refused(capsys, table_path, ["remove-orphan-files", table_path, "--file-list-time",
                                 _recent()],
            "error: --file-list-time describes a --file-list: give one")
    refused(capsys, table_path, ["remove-orphan-files", str(table_path.parent / "*"),
                                 "--file-list", inv, "--file-list-time", _recent()],
            f"error: --file-list lists one table: give its path, not the pattern "
            f"{str(table_path.parent / '*')!r}")


def test_folder_markers_are_skipped_not_refused(history, table_path, tmp_path):
    """S3 Inventory lists the zero-byte `dir/` objects a console or a tool creates (folder
    markers); they are no files: skipped, never candidates, the rest of the list used (they
    made the whole list refused: an empty path segment)."""
    planted = strays(table_path)
    listed = entries(table_path)
    markers = [(str(table_path) + "/dt=2024-01-01/", 0, now_ms() - 2 * HOUR_MS),
               (str(table_path) + "/manifest/", 0, now_ms() - 2 * HOUR_MS)]
    r = clean(table_path, csv_list(listed + markers), tmp_path, dry_run=True)
    plain = clean(table_path, csv_list(listed), tmp_path, dry_run=True)
    assert r.deleted_paths == plain.deleted_paths and set(planted) <= set(r.deleted_paths)
    assert r.to_dict()["file_list_rows"] == len(listed) + 2
    # Not a marker: a `dir/` row with bytes is refused, as before.
    with pytest.raises(FileListError, match="is not a file inside the table root"):
        clean(table_path, csv_list(listed + [(str(table_path) + "/manifest/", 5,
                                              now_ms() - 2 * HOUR_MS)]), tmp_path, dry_run=True)

"""Limits on a maintenance run (operations/limits.py): a time limit (`--max-duration`,
`max_duration=`) stops expiration between chunks and orphan cleanup between batches of
deletions; running out of memory stops them where they are; `--max-deletes` reaching its
quota with more to expire says so. Each reports what it did (`complete: False`,
`stopped_by`, `message`), exits 3 on the command line (0 for --max-deletes), leaves a table
pypaimon and we read, and a rerun finishes the job: the files left are those one unlimited
run leaves."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import files_under
from invariants import assert_intact, referenced_files
from oracle import pp_read

from benchmarks.scale_tables import build_append_table, build_overwrite_table, count_data_files
from paimon_commit import Table
from paimon_commit.cli import main
from paimon_commit.errors import OptionError
from paimon_commit.operations import expire as expire_mod
from paimon_commit.operations import orphan as orphan_mod
from paimon_commit.operations.expire import ExpireSnapshots
from paimon_commit.operations.orphan import CleanContext
from paimon_commit.store import FileStore
from paimon_commit.warehouse import maintain_warehouse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PER_SNAPSHOT = 5
SNAPSHOTS = 60
RETAIN = ("--retain-min", "3", "--retain-max", "3", "--time-retained", "0 s")
KEEP3 = dict(retain_min=3, retain_max=3, time_retained=0, max_deletes=1000)


@pytest.fixture
def overwrite_table(tmp_path):
    """60 OVERWRITE snapshots of 5 files each (only the latest 5 files are live)."""
    path = str(tmp_path / "wh" / "db.db" / "ov")
    build_overwrite_table(path, SNAPSHOTS * PER_SNAPSHOT, PER_SNAPSHOT)
    return path


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 7 snapshots, then about 40 files (the production sizes need 100+)."""
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK", 7)
    monkeypatch.setattr(expire_mod, "FIRST_CHUNK_FILES", 0)   # (a fixed first chunk)
    monkeypatch.setattr(expire_mod, "CHUNK_FILES", 40)


def rel_files(root):
    # (not the maintenance lease's records: bookkeeping, not the table)
    return {os.path.relpath(os.path.join(d, f), root)
            for d, _, fs in os.walk(root) for f in fs
            if not os.path.relpath(d, root).startswith(".maintenance")}


def expired_at_once(path, tmp_path):
    """The files a copy of `path` keeps after one unlimited expiration (the reference)."""
    ref = str(tmp_path / "ref" / "db.db" / "ov")
    shutil.copytree(path, ref)
    r = Table.open(ref).expire_snapshots(**KEEP3)
    assert r.complete and r.earliest == SNAPSHOTS - 2
    return rel_files(ref)


def strays_on_disk(path):
    return sorted(os.path.basename(p) for p in files_under(path)
                  if os.path.basename(p).startswith("data-stray-"))


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --- the time limit ------------------------------------------------------------------------

def test_expire_max_duration_stops_between_chunks_and_a_rerun_finishes(
        tmp_path, overwrite_table, small_chunks):
    reference = expired_at_once(overwrite_table, tmp_path)
    t = Table.open(overwrite_table)
    r = t.expire_snapshots(max_duration=1, **KEEP3)   # 1 ms: the first chunk, then stop
    assert (r.complete, r.stopped_by) == (False, "max-duration")
    assert r.expired_snapshots == 7 and r.earliest == 8
    assert "between two chunks" in r.message and "a rerun continues" in r.message
    assert r.to_dict()["complete"] is False and r.to_dict()["stopped_by"] == "max-duration"
    snapshots = sorted(os.listdir(os.path.join(overwrite_table, "snapshot")))
    assert "snapshot-7" not in snapshots and "snapshot-8" in snapshots
    # The chunk finished in the crash-safe order: the files of the 7 snapshots are gone.
    assert count_data_files(overwrite_table) == (SNAPSHOTS - 7) * PER_SNAPSHOT
    assert_intact(overwrite_table)
    r = Table.open(overwrite_table).expire_snapshots(**KEEP3)
    assert r.complete and r.stopped_by is None and r.earliest == SNAPSHOTS - 2
    assert rel_files(overwrite_table) == reference
    assert pp_read(overwrite_table).num_rows == PER_SNAPSHOT
    assert Table.open(overwrite_table).read_arrow().num_rows == PER_SNAPSHOT


def test_remove_orphan_files_max_duration_stops_between_batches(tmp_path, monkeypatch):
    path = str(tmp_path / "wh" / "db.db" / "ap")
    build_append_table(path, 300, snapshots=6, strays=10, manifest_entries=20)
    monkeypatch.setattr(orphan_mod, "FIRST_BATCH", 3)
    r = Table.open(path).remove_orphan_files(max_duration=1)
    assert (r.complete, r.stopped_by) == (False, "max-duration")
    assert r.deleted_files == 3 and r.remaining == 7 and r.deleted_dirs == []
    assert "deleted 3 orphan file(s)" in r.message and "7 found were not deleted yet" in \
        r.message
    assert len(strays_on_disk(path)) == 7
    assert_intact(path)
    r = Table.open(path).remove_orphan_files()
    assert r.complete and r.deleted_files == 7 and strays_on_disk(path) == []
    assert pp_read(path).num_rows == 300 == Table.open(path).read_arrow().num_rows


def test_cli_max_duration_exits_3_with_one_line_and_a_rerun_exits_0(
        capsys, tmp_path, overwrite_table, small_chunks):
    reference = expired_at_once(overwrite_table, tmp_path)
    code, out, err = run(capsys, "expire-snapshots", overwrite_table, *RETAIN,
                         "--max-deletes", 1000, "--max-duration", "1 ms")
    assert code == 3, err
    lines = out.splitlines()
    assert lines[0].startswith("expired 7 snapshot(s); deleted ")
    assert lines[-1].startswith("incomplete: stopped by the time limit (max-duration 0.001 s) "
                                "between two chunks: expired 7 snapshot(s), deleted ")
    assert lines[-1].endswith("the earliest snapshot is 8; the table is consistent, a rerun "
                              "continues")
    assert_intact(overwrite_table)
    code, out, err = run(capsys, "expire-snapshots", overwrite_table, *RETAIN,
                         "--max-deletes", 1000, "--json")
    r = json.loads(out)
    assert code == 0 and r["complete"] is True and r["stopped_by"] is None
    assert r["expired_snapshots"] == SNAPSHOTS - 3 - 7
    assert rel_files(overwrite_table) == reference


def test_cli_remove_orphan_files_max_duration_json(capsys, tmp_path, monkeypatch):
    path = str(tmp_path / "wh" / "db.db" / "ap")
    build_append_table(path, 300, snapshots=6, strays=10, manifest_entries=20)
    monkeypatch.setattr(orphan_mod, "FIRST_BATCH", 4)
    code, out, err = run(capsys, "remove-orphan-files", path, "--max-duration", "1 ms",
                         "--json")
    r = json.loads(out)
    assert code == 3, err
    assert (r["complete"], r["stopped_by"], r["deleted_files"], r["remaining"]) == \
        (False, "max-duration", 4, 6)
    assert len(strays_on_disk(path)) == 6
    code, out, err = run(capsys, "remove-orphan-files", path)
    assert code == 0 and out.startswith("deleted 6 file(s)") and "incomplete" not in out
    assert strays_on_disk(path) == []
    assert_intact(path)


def test_maintain_max_duration_stops_between_steps_and_leaves_tables_not_started(
        capsys, tmp_path):
    wh = tmp_path / "wh"
    for name in ("a", "b"):
        # 100 snapshots: reading them before the first step outlasts the limit (1 ms), which
        # a table of a few snapshots did not always do, on warm caches.
        build_append_table(str(wh / "db.db" / name), 100, snapshots=100, strays=4,
                           manifest_entries=50)
    code, out, err = run(capsys, "maintain", wh, "--orphans", "--parallelism", 1,
                         "--max-duration", "1 ms", "--json")
    r = json.loads(out)
    assert code == 3, err
    assert (r["ok"], r["failed"], r["incomplete"]) == (0, 0, 2), \
        [(t["table"], t["status"], t["reason"], t["seconds"], list(t["steps"]))
         for t in r["tables"]]
    a, b = r["tables"]
    assert (a["table"], a["status"], a["stopped_by"]) == ("db.a", "incomplete", "max-duration")
    # (after its first step, before the next: which ones depends on the table's options)
    assert a["reason"].startswith("stopped by the run's time limit after ")
    assert a["reason"].endswith("; a rerun continues") and "orphans" not in a["steps"]
    assert (b["table"], b["status"], b["stopped_by"]) == ("db.b", "incomplete", "max-duration")
    assert b["reason"].startswith("not started")
    assert len(strays_on_disk(wh)) == 8
    code, out, err = run(capsys, "maintain", wh, "--orphans", "--parallelism", 1)
    assert code == 0, out + err
    assert out.splitlines()[-1].startswith("2 table(s): 2 ok, 0 failed, 0 skipped, "
                                           "0 incomplete; deleted ")
    assert strays_on_disk(wh) == []
    for name in ("a", "b"):   # (every snapshot's files there; pypaimon reads the latest)
        t = Table.open(str(wh / "db.db" / name))
        assert all(os.path.exists(p) for p in referenced_files(t))
        assert pp_read(wh / "db.db" / name).num_rows == 100 == t.read_arrow().num_rows


def test_maintain_warehouse_max_duration_in_worker_processes(tmp_path):
    """The deadline crosses to worker processes (time.monotonic is the machine's clock); the
    tables a run starts at once always run their first step."""
    wh = tmp_path / "wh"
    for name in ("a", "b", "c"):
        build_append_table(str(wh / "db.db" / name), 100, snapshots=100, strays=2,
                           manifest_entries=50)
    results = maintain_warehouse(str(wh), orphans=True, parallelism=2, max_duration_ms=1)
    # The two tables started at once run their first step; the third is not started.
    assert [(r.table, r.status, r.stopped_by) for r in results] == \
        [("db.a", "incomplete", "max-duration"), ("db.b", "incomplete", "max-duration"),
         ("db.c", "incomplete", "max-duration")]
    assert results[2].reason.startswith("not started") and results[2].steps == {}
    for r in results[:2]:
        assert r.reason.startswith("stopped by the run's time limit after ") and r.steps
    assert len(strays_on_disk(wh)) == 6
    results = maintain_warehouse(str(wh), orphans=True, parallelism=2,
                                 max_duration_ms=600_000)
    assert [(r.table, r.status, r.orphans_deleted) for r in results] == \
        [("db.a", "ok", 2), ("db.b", "ok", 2), ("db.c", "ok", 2)]
    assert strays_on_disk(wh) == []


# --- --max-deletes -------------------------------------------------------------------------

def test_max_deletes_says_when_more_can_expire(capsys, overwrite_table):
    code, out, err = run(capsys, "expire-snapshots", overwrite_table, *RETAIN,
                         "--max-deletes", 5, "--json")
    r = json.loads(out)
    assert code == 0, err   # a per-run quota, as every commit's expiration has: exit 0
    assert (r["expired_snapshots"], r["complete"], r["stopped_by"]) == (5, False,
                                                                        "max-deletes")
    assert "more snapshots can expire, a rerun continues" in r["message"]
    # Exactly what is left: complete (nothing more could expire).
    code, out, err = run(capsys, "expire-snapshots", overwrite_table, *RETAIN,
                         "--max-deletes", SNAPSHOTS - 3 - 5, "--json")
    r = json.loads(out)
    assert code == 0 and (r["expired_snapshots"], r["complete"], r["stopped_by"]) == \
        (SNAPSHOTS - 8, True, None)
    assert_intact(overwrite_table)


# --- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("value, message", [
    ("0 s", "--max-duration '0 s' must be longer than 0"),
    ("-1 s", "--max-duration '-1 s' must not be negative"),
    ("soon", "--max-duration 'soon' is an invalid duration"),
])
@pytest.mark.parametrize("command", ["expire-snapshots", "remove-orphan-files", "expire-tags",
                                     "maintain"])
def test_bad_max_duration_exits_2_and_touches_nothing(capsys, tmp_path, command, value,
                                                      message):
    path = tmp_path / "wh" / "db.db" / "ap"
    build_append_table(str(path), 100, snapshots=12, strays=3, manifest_entries=50)
    before = files_under(tmp_path)
    target = tmp_path / "wh" if command == "maintain" else path
    code, out, err = run(capsys, command, target, "--max-duration", value)
    assert code == 2 and message in err, err
    assert files_under(tmp_path) == before


def test_max_duration_with_distributed_orphan_cleanup_is_refused(capsys, tmp_path):
    path = tmp_path / "wh" / "db.db" / "ap"
    build_append_table(str(path), 100, snapshots=2, strays=3, manifest_entries=50)
    before = files_under(tmp_path)
    code, _, err = run(capsys, "remove-orphan-files", path, "--mode", "distributed",
                       "--max-duration", "1 h")
    assert code == 2 and "--max-duration is not supported with --mode distributed" in err
    assert files_under(tmp_path) == before


def test_bad_max_duration_in_python_is_refused_before_any_io(tmp_path):
    path = str(tmp_path / "wh" / "db.db" / "ap")
    build_append_table(path, 100, snapshots=12, strays=3, manifest_entries=50)
    before = files_under(tmp_path)
    t = Table.open(path)
    cases = [
        (lambda: t.expire_snapshots(max_duration=0), "max_duration=0 must be longer than 0"),
        (lambda: t.expire_snapshots(max_duration="soon"),
         "max_duration='soon' is an invalid duration"),
        (lambda: t.remove_orphan_files(max_duration="-5 s"),
         "max_duration='-5 s' must not be negative"),
        (lambda: t.expire_tags(max_duration=True), "max_duration=True is an invalid duration"),
        (lambda: ExpireSnapshots(FileStore.open(path)).expire(max_duration_ms=0),
         "max_duration_ms=0 must be longer than 0"),
        (lambda: CleanContext(path, max_duration_ms=1.5),
         "max_duration_ms=1.5 must be an integer number of milliseconds"),
        (lambda: maintain_warehouse(str(tmp_path / "wh"), max_duration_ms=-1),
         "max_duration_ms=-1 must be longer than 0"),
    ]
    for call, message in cases:
        with pytest.raises(OptionError) as e:
            call()
        assert message in str(e.value)
    assert files_under(tmp_path) == before


# --- out of memory (a real MemoryError, under RLIMIT_AS, in a subprocess) -------------------

# The limit is set from the progress callback once the first step is done: the address space
# the process has then (plus `margin`). What runs out is whatever needs more than that next.
_OOM_SCRIPT = textwrap.dedent("""
    import json, resource, sys
    from paimon_commit import Table
    from paimon_commit.operations import expire as E

    kind, path, margin = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def address_space():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize"))

    def limit(event):
        # expire: a chunk is done (it counts the snapshots expired); orphans: listed
        first_step_done = event.phase == "reading metadata" and (event.done or
                                                                 kind == "orphans")
        if first_step_done and resource.getrlimit(resource.RLIMIT_AS)[0] == \\
                resource.RLIM_INFINITY:
            resource.setrlimit(resource.RLIMIT_AS, (address_space() + margin,
                                                    resource.RLIM_INFINITY))

    t = Table.open(path)
    if kind == "expire":
        E.FIRST_CHUNK, E.FIRST_CHUNK_FILES = 1, 0     # one snapshot, then all the rest
        E.CHUNK_SNAPSHOTS = E.CHUNK_FILES = 10 ** 9
        r = t.expire_snapshots(retain_min=3, retain_max=3, time_retained=0,
                               max_deletes=10 ** 6, progress=limit)
    else:
        r = t.remove_orphan_files(progress=limit)
    print(json.dumps(r.to_dict()))
""")


OOM_FILES = 60   # files per snapshot: the second step needs more than the first freed
ORPHAN_OOM_FILES = 5000   # what is used: more than listing them left free


def _run_out_of_memory(kind, path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-c", _OOM_SCRIPT, kind, path, "0"],
                       capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.splitlines()[-1])


def test_expire_out_of_memory_mid_run_reports_what_was_done_and_a_rerun_finishes(tmp_path):
    path = str(tmp_path / "wh" / "db.db" / "ov")
    build_overwrite_table(path, 20 * OOM_FILES, OOM_FILES)   # 20 snapshots
    ref = str(tmp_path / "ref" / "db.db" / "ov")
    shutil.copytree(path, ref)
    r = _run_out_of_memory("expire", path)
    assert (r["complete"], r["stopped_by"]) == (False, "memory")
    assert r["expired_snapshots"] >= 1 and r["earliest"] == 1 + r["expired_snapshots"]
    assert r["message"].startswith(f"ran out of memory: expired {r['expired_snapshots']} "
                                   f"snapshot(s), deleted {r['deleted_files']} file(s)")
    assert "rerun with a smaller --max-deletes (max_deletes=, option snapshot.expire.limit" \
        in r["message"]
    assert not r["skipped"]   # out of memory is not reported as unreadable manifests
    assert not os.path.exists(os.path.join(path, "snapshot", "snapshot-1"))
    # Snapshots the stopped chunk was deleting may be half gone (as after a crash there).
    assert_intact(path, min_snapshot=18)
    done = Table.open(path).expire_snapshots(retain_min=3, retain_max=3, time_retained=0,
                                             max_deletes=10 ** 6)
    assert done.complete and done.earliest == 18
    assert Table.open(ref).expire_snapshots(retain_min=3, retain_max=3, time_retained=0,
                                            max_deletes=10 ** 6).earliest == 18
    assert rel_files(path) == rel_files(ref)   # (the reference is what one run leaves)
    assert pp_read(path).num_rows == OOM_FILES


def test_orphan_cleanup_out_of_memory_deletes_nothing_more_and_a_rerun_finishes(tmp_path):
    path = str(tmp_path / "wh" / "db.db" / "ap")
    build_append_table(path, ORPHAN_OOM_FILES, snapshots=10, strays=50, manifest_entries=50)
    r = _run_out_of_memory("orphans", path)
    assert (r["complete"], r["stopped_by"], r["deleted_files"]) == (False, "memory", 0)
    assert r["message"].startswith("ran out of memory while listing the table's files and "
                                   "reading what its snapshots use: deleted 0 orphan file(s)")
    assert "give it more memory" in r["message"]
    assert len(strays_on_disk(path)) == 50
    done = Table.open(path).remove_orphan_files()
    assert done.complete and done.deleted_files == 50 and strays_on_disk(path) == []
    # Every live file is still there (reading 5000 files back would take most of a minute).
    live = Table.open(path).live_files()
    assert len(live) == ORPHAN_OOM_FILES == count_data_files(path)
    assert all(os.path.exists(f.path) for f in live)
    assert pp_read(path, snapshot_id=1).num_rows == ORPHAN_OOM_FILES // 10   # rows read back


_DECODE_SCRIPT = textwrap.dedent("""
    import resource, sys
    from paimon_commit.errors import CorruptMetadataError
    from paimon_commit.store import FileStore

    store = FileStore.open(sys.argv[1])
    snap = store.snapshots.snapshot(1)
    small, large = sorted(store.manifests.read_list(snap.delta_manifest_list),
                          key=lambda m: m.file_size)
    for read in (store.manifests.read_manifest_files, store.manifests.read_manifest):
        read(small.file_name)   # the code is loaded (and works)
    name = large.file_name
    with open("/proc/self/status") as f:
        vm = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize"))
    resource.setrlimit(resource.RLIMIT_AS, (vm, resource.RLIM_INFINITY))
    # Whole entries first: decoded after the FileRefs, they could fit in what the FileRefs'
    # decoding left free (a full suite run saw "decoded" for both).
    for read in (store.manifests.read_manifest, store.manifests.read_manifest_files):
        try:
            read(name)
            print("decoded")
        except MemoryError:
            print("MemoryError")
        except CorruptMetadataError as e:
            print("CorruptMetadataError", str(e)[:200])
""")


def test_a_manifest_decoded_out_of_memory_is_not_reported_unreadable(tmp_path):
    """A failed allocation while decoding a sound manifest is a MemoryError: reported as an
    unreadable file it made expiration keep what the manifest names and delete the snapshot
    anyway (those files left to orphan cleanup), and hid why."""
    path = str(tmp_path / "wh" / "db.db" / "ap")
    # One manifest of 19,990 entries and one of 10. (Large enough that its decoding cannot
    # fit in the heap the process has already mapped: with 4,990 entries it did once the
    # library's imports grew a little, and both decodings succeeded under the limit.)
    build_append_table(path, 20_000, snapshots=1, strays=0, manifest_entries=19_990)
    p = subprocess.run([sys.executable, "-c", _DECODE_SCRIPT, path], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    # Whole entries do not decode in the memory the process has: a MemoryError, never "not a
    # readable Avro file"; FileRefs (what maintenance reads) may.
    assert p.stdout.split("\n")[0] == "MemoryError", p.stdout
    assert p.stdout.split("\n")[1] in ("decoded", "MemoryError"), p.stdout


def test_expire_tags_max_duration_stops_between_tags(capsys, table, table_path):
    from conftest import make_rows, write
    for i in range(1, 5):
        write(table, make_rows([i]))
    for i in range(1, 4):
        table.create_tag(f"t{i}", i, time_retained="1 ms")
    import time
    time.sleep(0.01)   # every tag is past its retention
    code, out, err = run(capsys, "expire-tags", table_path, "--max-duration", "1 ms")
    assert code == 3, err
    assert out.splitlines()[0] == "expired 1 tag(s): t1"
    assert out.splitlines()[-1].startswith("incomplete: stopped by the time limit "
                                           "(max-duration 0.001 s) between two tags: expired "
                                           "1 tag(s)")
    assert [t.name for t in Table.open(str(table_path)).tags()] == ["t2", "t3"]
    assert_intact(table_path)
    code, out, err = run(capsys, "expire-tags", table_path, "--json")
    r = json.loads(out)
    assert code == 0 and r["expired_tags"] == ["t2", "t3"] and r["complete"] is True
    assert Table.open(str(table_path)).tags() == []
    assert sorted(x["id"] for x in Table.open(str(table_path)).read_arrow().to_pylist()) == \
        [1, 2, 3, 4]


def test_a_table_pattern_shares_one_time_limit(capsys, tmp_path):
    wh = tmp_path / "wh"
    for name in ("a", "b"):   # (100 snapshots: reading them outlasts the limit)
        build_append_table(str(wh / "db.db" / name), 100, snapshots=100, strays=3,
                           manifest_entries=50)
    code, out, err = run(capsys, "remove-orphan-files", f"{wh}/db.db/*", "--max-duration",
                         "1 ms")
    assert code == 3, err
    lines = out.splitlines()
    assert lines[0].startswith("db.a") and "deleted 3 file(s)" in lines[0]
    assert lines[1].startswith("db.b") and lines[1].endswith(
        " not started (--max-duration reached before this table; a rerun continues)")
    assert lines[-1] == "2 table(s), 0 failed, 1 incomplete"
    assert strays_on_disk(wh / "db.db" / "a") == [] and \
        len(strays_on_disk(wh / "db.db" / "b")) == 3
    code, out, err = run(capsys, "remove-orphan-files", f"{wh}/db.db/*")
    assert code == 0 and strays_on_disk(wh) == []

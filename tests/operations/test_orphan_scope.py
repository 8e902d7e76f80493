"""Partition-scoped orphan cleanup (`remove-orphan-files TABLE --partition 'dt=2024-01-*'`,
`partitions=[...]`): a scoped run deletes exactly what a full run deletes inside the scope,
on tables written by us and by pypaimon, and nothing outside it; it lists only the matching
partition directories, no metadata directory, and reads only the manifests whose partition
statistics can hold a listed partition."""
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from fnmatch import fnmatchcase

import pyarrow as pa
import pytest

from conftest import SCHEMA, files_under, make_rows, write
from invariants import assert_intact
from oracle import pp_create, pp_drop, pp_read, pp_write, rows

from paimon_commit import OptionError, Table
from paimon_commit.format.binary_row import deserialize_binary_row
from paimon_commit.io.local import LocalFileIO
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner

OLD = time.time() - 3 * 86400
DAYS = [datetime.date(2024, 1, 1), datetime.date(2024, 1, 2), datetime.date(2024, 2, 1)]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def age(path, when=OLD):
    for root, dirs, files in os.walk(str(path)):
        for n in files + dirs:
            os.utime(os.path.join(root, n), (when, when), follow_symlinks=False)


def clean(path, **kw):
    return OrphanFilesCleaner(CleanContext(str(path), **kw)).clean()


def history(table):
    """Three days x two hours, one commit each, a tag, an overwrite of one partition and a
    dropped one: unused data files of the overwritten / dropped partitions, expired files."""
    n = 0
    for d in DAYS:
        for hr in (1, 2):
            n += 1
            write(table, make_rows([n, n + 100], dt=d, hr=hr))
    table.create_tag("t1", 2)
    w = table.new_writer()
    w.write_arrow(make_rows([500], dt=DAYS[0], hr=2))
    with table.new_commit() as c:
        c.overwrite(w.prepare_commit(), {"dt": DAYS[0], "hr": 2})
    with table.new_commit() as c:
        c.drop_partitions([{"dt": DAYS[1], "hr": 1}])
    table.expire_snapshots(retain_max=2, retain_min=1)
    return table


def plant(path):
    """An orphan in every bucket directory and in every metadata directory; a partition
    directory holding only an orphan; returns the relative paths."""
    planted = []
    for root, dirs, _ in os.walk(str(path)):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if os.path.basename(root).startswith("bucket-"):
            rel = os.path.relpath(os.path.join(root, "data-orphan-0.parquet"), path)
            planted.append(rel)
    planted += ["dt=19800/hr=5/bucket-0/data-lonely-0.parquet",
                "manifest/manifest-orphan-0", "manifest/manifest-list-orphan-0",
                "snapshot/.snapshot-9.1.tmp"]
    for rel in planted:
        p = os.path.join(str(path), rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(b"orphan")
    return sorted(planted)


def in_scope(rel, patterns, keys, date_keys=("dt",)):
    """Whether a relative path lies in a partition the patterns match (as documented)."""
    parts = rel.split("/")
    if len(parts) <= len(keys) or not all(p.startswith(k + "=") for p, k in
                                          zip(parts, keys)):
        return False
    values = {k: p.split("=", 1)[1] for p, k in zip(parts, keys)}
    for pattern in patterns:
        terms = dict(t.split("=", 1) for t in pattern.split("/"))
        ok = True
        for k, g in terms.items():
            forms = [values[k]]
            if k in date_keys and values[k].lstrip("-").isdigit():
                forms.append((datetime.date(1970, 1, 1) +
                              datetime.timedelta(days=int(values[k]))).isoformat())
            ok = ok and any(fnmatchcase(f, g) for f in forms)
        if ok:
            return True
    return False


def dir_in_scope(d, patterns, keys):
    """Whether a partition (or bucket) directory is consistent with some pattern: every term
    on the keys its path names holds."""
    parts = [p for p in d.split("/") if not p.startswith("bucket-")]
    names = [k for k, p in zip(keys, parts) if p.startswith(k + "=")]
    filler = "/".join(parts + [f"{k}=_" for k in keys[len(names):]]) + "/f"
    relaxed = ["/".join(t for t in pat.split("/") if t.split("=")[0] in names)
               for pat in patterns]
    return any(in_scope(filler, [r], keys) if r else True for r in relaxed)


def all_reads(path):
    t = Table.open(str(path))
    out = {("s", s.id): rows(pp_read(path, snapshot_id=s.id)) for s in t.snapshots()}
    out.update({("t", x.name): rows(pp_read(path, tag=x.name)) for x in t.tags()})
    return out


PATTERNS = [["dt=2024-01-*"], ["hr=2"], ["dt=19723/hr=1", "dt=2024-02-01"],
            ["dt=2024-0[12]-0?/hr=[12]"], ["dt=1980*"], ["dt=2025-*"]]


@pytest.mark.parametrize("patterns", PATTERNS, ids=lambda p: ",".join(p))
def test_scoped_run_deletes_what_a_full_run_deletes_inside_the_scope(
        table, table_path, tmp_path, patterns):
    history(table)
    planted = plant(table_path)
    age(table_path)
    full_copy = tmp_path / "full"
    shutil.copytree(table_path, full_copy, symlinks=True)
    full = clean(full_copy)   # real run on a copy: what a full run deletes
    assert set(planted) <= set(full.deleted_paths)
    before = files_under(table_path)
    reads = all_reads(table_path)
    r = clean(table_path, partitions=patterns)
    keys = ["dt", "hr"]
    expected = sorted(p for p in full.deleted_paths if in_scope(p, patterns, keys))
    assert r.deleted_paths == expected
    assert files_under(table_path) == sorted(set(before) - set(expected))
    # nothing outside the scope: every metadata orphan is still there
    for rel in planted:
        assert os.path.exists(table_path / rel) == (rel not in expected), rel
    assert r.partitions == patterns
    assert all_reads(table_path) == reads
    assert_intact(table_path)
    # the empty directories it removed are inside the scope (with their emptied parents)
    for d in r.deleted_dirs:
        assert dir_in_scope(d, patterns, keys), d


def test_scoped_run_on_a_pypaimon_table(tmp_path):
    path = tmp_path / "wh" / "db.db" / "pp"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("region", pa.string()),
                        ("day", pa.string())])
    pp_create(path, schema, partition_keys=["region", "day"])
    for i, (region, day) in enumerate([("eu", "2024-01-01"), ("eu", "2024-01-02"),
                                       ("us", "2024-01-01"), ("us", "2024-02-01")]):
        pp_write(path, pa.table({"id": [i, i + 10], "v": ["a", "b"], "region": [region] * 2,
                                 "day": [day] * 2}, schema=schema))
    pp_write(path, pa.table({"id": [99], "v": ["o"], "region": ["eu"], "day": ["2024-01-01"]},
                            schema=schema), overwrite={"region": "eu", "day": "2024-01-01"})
    pp_drop(path, [{"region": "us", "day": "2024-02-01"}])
    planted = []
    for root, dirs, _ in os.walk(path):
        if os.path.basename(root).startswith("bucket-"):
            planted.append(os.path.relpath(os.path.join(root, "data-orphan-0.parquet"), path))
    planted.append("manifest/manifest-orphan-0")
    for rel in planted:
        (path / rel).write_bytes(b"orphan")
    age(path)
    full_copy = tmp_path / "full"
    shutil.copytree(path, full_copy)
    full = clean(full_copy)
    assert set(planted) <= set(full.deleted_paths)
    reads = rows(pp_read(path))
    before = files_under(path)
    patterns = ["region=eu/day=2024-01-*", "day=2024-02-01"]
    r = clean(path, partitions=patterns)
    expected = sorted(p for p in full.deleted_paths
                      if in_scope(p, patterns, ["region", "day"], date_keys=()))
    assert expected and r.deleted_paths == expected
    assert files_under(path) == sorted(set(before) - set(expected))
    assert (path / "manifest" / "manifest-orphan-0").exists()
    assert (path / "region=us" / "day=2024-01-01" / "bucket-0" / "data-orphan-0.parquet"
            ).exists()
    assert rows(pp_read(path)) == reads


class _Recording(LocalFileIO):
    def __init__(self, root):
        super().__init__(root)
        self.listed, self.read = [], []

    def list_files(self, directory):
        self.listed.append(directory)
        return super().list_files(directory)

    def list_status(self, directory):
        self.listed.append(directory)
        return super().list_status(directory)

    def list_names(self, directory):
        self.listed.append(directory)
        return super().list_names(directory)

    def read_bytes(self, path):
        self.read.append(path)
        return super().read_bytes(path)


def test_only_matching_partitions_are_listed_and_only_their_manifests_read(table, table_path):
    history(table)
    plant(table_path)
    age(table_path)
    io = _Recording(str(table_path))
    r = OrphanFilesCleaner(CleanContext(str(table_path), file_io=io, dry_run=True,
                                        partitions=["dt=2024-02-01"])).clean()
    assert r.deleted_paths == ["dt=19754/hr=1/bucket-0/data-orphan-0.parquet",
                               "dt=19754/hr=2/bucket-0/data-orphan-0.parquet"]
    root = str(table_path)
    rel = sorted({os.path.relpath(d, root) for d in io.listed})
    # the partition tree down to the scope and, as a full run, where the roots are (branch/,
    # snapshot/, changelog/, tag/; schema/ on opening); no other metadata directory, no
    # other partition
    assert rel == [".", "branch", "changelog", "dt=19754", "dt=19754/hr=1",
                   "dt=19754/hr=1/bucket-0", "dt=19754/hr=2", "dt=19754/hr=2/bucket-0",
                   "schema", "snapshot", "tag"]
    # manifests: every one skipped holds no entry of the scope; fewer read than named
    t = Table.open(root)
    mio = t.store.manifests
    types = t.store.schema.partition_types
    read = {os.path.basename(p) for p in io.read if "/manifest/manifest-" in p
            and not os.path.basename(p).startswith("manifest-list-")}
    assert r.manifests_skipped > 0 and r.manifests_read == len(read)
    named = set()
    for s in t.snapshots():
        for lst in s.manifest_lists():
            named.update(m.file_name for m in mio.read_list(lst))
    for x in t.tags():
        for lst in x.snapshot.manifest_lists():
            named.update(m.file_name for m in mio.read_list(lst))
    assert read < named
    for m in named - read:
        parts = {deserialize_binary_row(e.partition, types)[0] for e in mio.read_manifest(m)}
        assert DAYS[2] not in parts, m


def test_a_symlinked_partition_in_scope_is_never_followed(table, table_path, tmp_path):
    history(table)
    outside = tmp_path / "outside"
    (outside / "hr=1" / "bucket-0").mkdir(parents=True)
    (outside / "hr=1" / "bucket-0" / "data-precious-0.parquet").write_text("precious")
    os.symlink(outside, table_path / "dt=19760")
    age(table_path)
    age(outside)
    r = clean(table_path, partitions=["dt=1976*"])
    assert r.deleted_paths == [] and r.partitions_listed == 0
    assert (outside / "hr=1" / "bucket-0" / "data-precious-0.parquet").read_text() == "precious"


@pytest.mark.parametrize("partitions, message", [
    (["hour=1"], "partition pattern 'hour=1' names 'hour', which is not a partition key of "
                 "{table} (its partition keys: dt, hr)"),
    (["dt=2024-*/region=eu"], "partition pattern 'dt=2024-*/region=eu' names 'region', "
                              "which is not a partition key of {table} (its partition keys: "
                              "dt, hr)"),
])
def test_a_pattern_naming_no_partition_key_is_refused_before_listing(
        table, table_path, partitions, message):
    history(table)
    plant(table_path)
    age(table_path)
    before = files_under(table_path)
    with pytest.raises(OptionError) as e:
        clean(table_path, partitions=partitions)
    assert str(e.value) == message.format(table=table_path)
    assert files_under(table_path) == before


@pytest.mark.parametrize("partitions, message", [
    ("dt=1", "partitions must be a list of partition patterns such as ['dt=2024-01-*'], got "
             "'dt=1'"),
    ([], "partitions is empty: give at least one partition pattern such as 'dt=2024-01-*' "
         "(or none at all to clean the whole table)"),
    (["dt"], "partition pattern 'dt': 'dt' is not key=glob (several keys: "
             "'dt=2024-01-*/hr=0?')"),
    (["dt=1/"], "partition pattern 'dt=1/': '' is not key=glob (several keys: "
                "'dt=2024-01-*/hr=0?')"),
    (["dt=1/dt=2"], "partition pattern 'dt=1/dt=2' names 'dt' twice"),
])
def test_malformed_patterns_are_refused_without_io(partitions, message):
    with pytest.raises(OptionError) as e:
        CleanContext("/nonexistent/table", partitions=partitions)
    assert str(e.value) == message


def test_an_unpartitioned_table_is_refused(tmp_path):
    path = tmp_path / "wh" / "db.db" / "flat"
    t = Table.create(str(path), SCHEMA)
    write(t, make_rows([1, 2]))
    age(path)
    before = files_under(path)
    with pytest.raises(OptionError) as e:
        clean(path, partitions=["dt=2024-*"])
    assert str(e.value) == (f"{path} is not partitioned: a partition pattern (dt=2024-*) "
                            f"cannot scope its orphan cleanup; run it without one")
    assert files_under(path) == before


def cli(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run([sys.executable, "-m", "paimon_commit", *args], env=env,
                          capture_output=True, text=True, timeout=300)


def test_cli_partition_flag(table, table_path, tmp_path):
    history(table)
    planted = plant(table_path)
    age(table_path)
    before = files_under(table_path)
    p = cli("remove-orphan-files", str(table_path), "--partition", "dt=2024-01-*",
            "--partition", "dt=2024-02-01/hr=2", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    gone = sorted(set(before) - set(files_under(table_path)))
    assert out["files"] == gone and out["partitions"] == ["dt=2024-01-*", "dt=2024-02-01/hr=2"]
    assert set(gone) >= {r for r in planted if r.startswith(("dt=19723/", "dt=19724/",
                                                             "dt=19754/hr=2/"))}
    assert not [r for r in gone if not r.startswith(("dt=19723/", "dt=19724/",
                                                     "dt=19754/hr=2/"))]
    js = json.loads(cli("remove-orphan-files", str(table_path), "--partition",
                        "dt=2024-02-01", "--dry-run", "--json").stdout)
    assert js["files"] == ["dt=19754/hr=1/bucket-0/data-orphan-0.parquet"]
    assert js["manifests_read"] + js["manifests_skipped"] == len(manifests_named(table_path))
    p = cli("remove-orphan-files", str(table_path), "--partition", "dt=2024-02-01",
            "--dry-run")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == (
        f"would delete 1 file(s), 6 bytes, 0 empty dir(s) in 2 partition(s) matching "
        f"dt=2024-02-01 (read {js['manifests_read']} of "
        f"{js['manifests_read'] + js['manifests_skipped']} manifests)")
    assert_intact(table_path)


def manifests_named(path):
    t = Table.open(str(path))
    named = set()
    for s in list(t.snapshots()) + [x.snapshot for x in t.tags()]:
        for lst in s.manifest_lists():
            named.update(m.file_name for m in t.store.manifests.read_list(lst))
    return named


@pytest.mark.parametrize("args, message", [
    (["--partition", "hour=1"], "partition pattern 'hour=1' names 'hour', which is not a "
                                "partition key of {table} (its partition keys: dt, hr)"),
    (["--partition", "dt"], "partition pattern 'dt': 'dt' is not key=glob (several keys: "
                            "'dt=2024-01-*/hr=0?')"),
])
def test_cli_bad_partition_is_one_line_exit_2_nothing_touched(table, table_path, args,
                                                             message):
    history(table)
    plant(table_path)
    age(table_path)
    before = files_under(table_path)
    p = cli("remove-orphan-files", str(table_path), *args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stderr.strip().splitlines() == [f"error: {message.format(table=table_path)}"]
    assert files_under(table_path) == before


def test_cli_unpartitioned_table_is_one_line_exit_2(tmp_path):
    path = tmp_path / "wh" / "db.db" / "flat"
    t = Table.create(str(path), SCHEMA)
    write(t, make_rows([1, 2]))
    before = files_under(path)
    p = cli("remove-orphan-files", str(path), "--partition", "dt=2024-*")
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        f"error: {path} is not partitioned: a partition pattern (dt=2024-*) cannot scope its "
        f"orphan cleanup; run it without one"]
    assert files_under(path) == before


# --- entries under another writer's partition.default-name ----------------------------------
# A NULL (or, for a string column, blank) partition value lives in the directory its writer's
# `partition.default-name` named: after an ALTER of the option, or under a Paimon job's own
# default name (a dynamic option: no schema names it), that is not the table's current one.
# Statistics skip NULLs, so only the null count (and, for blanks, the range) says a manifest
# holds such an entry; a scoped run must read it (orphan_scope's module docstring).

STR_SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])
LIVE_DAY = "2024-01-01"


def _schema_files(path):
    d = os.path.join(str(path), "schema")
    return sorted(os.listdir(d), key=lambda n: int(n.split("-")[1]))


def _set_default_name(path, name, how):
    """`altered`: a new schema file with the option (Paimon's ALTER TABLE SET); `in_place`:
    the newest schema file edited (a job's dynamic option: no schema names the writer's)."""
    d = os.path.join(str(path), "schema")
    last = _schema_files(path)[-1]
    doc = json.load(open(os.path.join(d, last)))
    doc.setdefault("options", {})
    if name is None:
        doc["options"].pop("partition.default-name", None)
    else:
        doc["options"]["partition.default-name"] = name
    if how == "altered":
        doc["id"] = int(last.split("-")[1]) + 1
        last = f"schema-{doc['id']}"
    with open(os.path.join(d, last), "w") as f:
        json.dump(doc, f)


def _default_name_case(tmp_path, how, values):
    """A STRING-partitioned table whose one commit writes `values` of dt (one manifest);
    written under the default name WRITER, which the table's schema no longer says
    afterwards. Returns (path, the live data files, the rows, the writer's directory)."""
    path = tmp_path / "wh" / "db.db" / "nd"
    writer_name = "__DEFAULT_PARTITION__" if how == "altered" else "JOB_NULLS"
    opts = {} if how == "altered" else {"partition.default-name": writer_name}
    t = Table.create(str(path), STR_SCHEMA, partition_keys=["dt"], options=opts)
    data = pa.table({"id": list(range(len(values))), "dt": values}, schema=STR_SCHEMA)
    write(t, data)
    live = [f for f in files_under(path) if "/bucket-" in f]
    assert f"dt={writer_name}" in {f.split("/")[0] for f in live}
    # altered: ALTER TABLE SET 'partition.default-name' = 'NULLS' (schema-1);
    # in_place: the schema never named the job's default name
    _set_default_name(path, "NULLS" if how == "altered" else None, how)
    return path, live, rows(data), writer_name


def _restore(path, how, writer_name):
    _set_default_name(path, writer_name, how)


@pytest.mark.parametrize("how", ["altered", "in_place"])
def test_a_null_partition_written_under_another_default_name_is_kept(tmp_path, how):
    path, live, data_rows, writer = _default_name_case(tmp_path, how,
                                                       [LIVE_DAY, None, None])
    stray = f"dt={writer}/bucket-0/data-00000000-0000-0000-0000-00000000dead-0.parquet"
    outside = f"dt={LIVE_DAY}/bucket-0/data-00000000-0000-0000-0000-00000000beef-0.parquet"
    for rel in (stray, outside):
        (path / rel).write_bytes(b"orphan")
    age(path)
    r = clean(path, partitions=[f"dt={writer[:2]}*"])
    for rel in live:
        assert (path / rel).exists(), rel        # the NULL partition's live file stays
    assert r.deleted_paths == [stray]          # the real stray inside the scope goes
    assert (path / outside).exists()            # and nothing outside the scope is touched
    assert r.partitions_listed == 1 and r.manifests_skipped == 0
    _restore(path, how, writer)
    assert rows(Table.open(str(path)).read_arrow()) == data_rows
    assert rows(pp_read(path)) == data_rows


def test_a_blank_partition_written_under_another_default_name_is_kept(tmp_path):
    # '' is stored as '' (not NULL: null count 0), in the default-name directory; the
    # manifest's range '' .. '2024-01-01' excludes the string '__DEFAULT_PARTITION__'
    path, live, data_rows, writer = _default_name_case(tmp_path, "altered", [LIVE_DAY, ""])
    stray = f"dt={writer}/bucket-0/data-00000000-0000-0000-0000-00000000dead-0.parquet"
    (path / stray).write_bytes(b"orphan")
    age(path)
    r = clean(path, partitions=["dt=__*"])
    assert r.deleted_paths == [stray]
    for rel in live:
        assert (path / rel).exists(), rel
    _restore(path, "altered", writer)
    assert rows(Table.open(str(path)).read_arrow()) == data_rows


def _stats(values_lo, values_hi, nulls, types):
    from paimon_commit.format.binary_row import serialize_binary_row
    from paimon_commit.format.entry import SimpleStats
    return SimpleStats(serialize_binary_row(values_lo, types),
                       serialize_binary_row(values_hi, types), nulls)


def test_may_hold_reads_a_manifest_with_nulls_or_blanks_for_any_value():
    from paimon_commit.operations.orphan_scope import PartitionScope
    types = ["STRING", "INT"]
    scope = PartitionScope([{"dt": "*"}], ["dt", "hr"], types, "NULLS", "t")
    scope.fold_case = False   # (names kept exactly: fold_case has its own test)
    # an old default name, read as the STRING '__DEFAULT_PARTITION__'; an INT directory
    # value that another writer's default name could be ('7')
    scope.add_partition(["__DEFAULT_PARTITION__", "1"])
    scope.add_partition(["2024-06-01", "7"])
    day = "2024-01-01"
    # zero null counts, no blank in range, values outside: pruned (pruning is kept)
    assert not scope.may_hold(_stats([day, 1], [day, 1], (0, 0), types))
    assert not scope.may_hold(_stats(["2024-01-01", 2], ["2024-05-31", 6], (0, 0), types))
    # a NULL dt entry: it lives under its writer's default name, any directory value
    assert scope.may_hold(_stats([day, 1], [day, 1], (2, 0), types))
    # a NULL hr entry: any hr value ('7' may be a job's default name), dt still in range
    assert scope.may_hold(_stats(["2024-06-01", 3], ["2024-06-01", 3], (0, 1), types))
    assert not scope.may_hold(_stats([day, 3], [day, 3], (0, 1), types))
    # unknown null counts: read
    assert scope.may_hold(_stats([day, 1], [day, 1], None, types))
    assert scope.may_hold(_stats([day, 1], [day, 1], (0,), types))
    assert scope.may_hold(_stats([day, 1], [day, 1], (None, 0), types))
    # a blank (empty or whitespace-only) dt possible in range: read
    for lo, hi in [("", day), (" ", day), ("\t", "\t"), ("\x00", " "), ("\ta", "\u3000x")]:
        assert scope.may_hold(_stats([lo, 1], [hi, 1], (0, 0), types)), (lo, hi)
    # no blank in range
    for lo, hi in [("!", day), ("\ta", "\t\x7f"), ("a", "zzz")]:
        assert not scope.may_hold(_stats([lo, 1], [hi, 1], (0, 0), types)), (lo, hi)


def test_a_directory_value_not_spelled_as_paimon_escapes_it_may_hold_anything():
    """`v=a%20b` as an unescaping writer wrote the value 'a%20b' (Paimon writes `a%2520b`):
    decoded it reads 'a b', but a manifest whose range is exactly 'a%20b' must be read
    (audit issue25e e1: a scoped run skipped it and deleted the live file)."""
    from paimon_commit.operations.orphan_scope import PartitionScope
    types = ["STRING"]
    scope = PartitionScope([{"v": "a*"}], ["v"], types, "__DEFAULT_PARTITION__", "t")
    scope.fold_case = False   # (names kept exactly: fold_case has its own test)
    scope.add_partition(["a%20b"])
    assert scope.may_hold(_stats(["a%20b"], ["a%20b"], (0,), types))
    unescaped = PartitionScope([{"v": "a*"}], ["v"], types, "__DEFAULT_PARTITION__", "t")
    unescaped.fold_case = False   # (names kept exactly: fold_case has its own test)
    unescaped.add_partition(["a:b"])   # Paimon spells 'a:b' `a%3Ab`: an unescaping writer's
    assert unescaped.may_hold(_stats(["b"], ["c"], (0,), types))
    plain = PartitionScope([{"v": "a*"}], ["v"], types, "__DEFAULT_PARTITION__", "t")
    plain.fold_case = False   # (names kept exactly: fold_case has its own test)
    plain.add_partition(["a-b"])   # nothing to escape: typed exactly, pruning kept
    assert plain.may_hold(_stats(["a-b"], ["a-b"], (0,), types))
    assert not plain.may_hold(_stats(["b"], ["c"], (0,), types))


def test_a_directory_value_with_a_percent_may_hold_anything():
    """`v=a%3Ab` is how Paimon escapes 'a:b' and how an unescaping writer (pypaimon before its
    canonical paths) spells the value 'a%3Ab': a manifest whose range is exactly 'a%3Ab' must
    be read, and so must any other (audit issue27d h1: the scope typed it 'a:b', skipped the
    manifest of 'a%3Ab' and deleted its live file). Likewise Paimon's `a%2520b`."""
    from paimon_commit.operations.orphan_scope import PartitionScope
    types = ["STRING"]
    for listed, literal, decoded in [("a%3Ab", "a%3Ab", "a:b"),
                                     ("a%2520b", "a%2520b", "a%20b")]:
        scope = PartitionScope([{"v": "a*"}], ["v"], types, "__DEFAULT_PARTITION__", "t")
        scope.fold_case = False   # (names kept exactly: fold_case has its own test)
        scope.add_partition([listed])
        assert scope.may_hold(_stats([literal], [literal], (0,), types)), listed
        assert scope.may_hold(_stats([decoded], [decoded], (0,), types)), listed
        assert scope.may_hold(_stats(["b"], ["c"], (0,), types)), listed


def test_only_plain_ascii_string_values_are_pruned_on():
    """String directory values are trusted to be the value written only when printable
    ASCII without `%`, not ending in a space or dot (the families every review found one
    more of: escapes, normalization, case folding; Windows trims trailing dots and spaces):
    any other name reads every manifest. Plain ones, spaces inside included, still prune."""
    from paimon_commit.operations.orphan_scope import PartitionScope
    types = ["STRING"]
    for listed, pruned in [("a-b_c.d", True), ("New York", True), ("東京", False),
                           ("a.", False), ("a ", False), ("\u00e9", False), ("a\tb", False)]:
        scope = PartitionScope([{"v": "*"}], ["v"], types, "__DEFAULT_PARTITION__", "t")
        scope.fold_case = False
        scope.add_partition([listed])
        assert scope.may_hold(_stats([listed], [listed], (0,), types)), listed
        assert scope.may_hold(_stats(["zzzz"], ["zzzzz"], (0,), types)) is not pruned, listed


def test_a_literal_percent_partition_of_an_unescaping_writer_is_kept(tmp_path):
    """End to end (audit issue27d h1): the value 'a%3Ab' in `v=a%3Ab/` (an unescaping
    writer's layout), a stray beside it; a scoped run deletes the stray only, as a full run
    does, and the table reads as written."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    path = tmp_path / "wh" / "db.db" / "pct"
    t = Table.create(str(path), schema, partition_keys=["v"])
    data = pa.table({"id": [1, 2], "v": ["a%3Ab", "a%3Ab"]}, schema=schema)
    write(t, data)
    os.rename(path / "v=a%253Ab", path / "v=a%3Ab")
    live = [f for f in files_under(path) if "/bucket-" in f]
    assert live and all(f.startswith("v=a%3Ab/") for f in live), live
    stray = "v=a%3Ab/bucket-0/data-00000000-0000-0000-0000-00000000dead-0.parquet"
    (path / stray).write_bytes(b"orphan")
    age(path)
    r = clean(path, partitions=["v=a*"])
    for rel in live:
        assert (path / rel).exists(), rel
    assert r.deleted_paths == [stray]
    assert r.partitions_listed == 1 and r.manifests_skipped == 0


def test_a_directory_value_a_file_system_may_have_normalized_may_hold_anything():
    """`p=e\u0301` (é decomposed, as HFS+ lists every name) for a value written as 'é'
    (composed): the manifest whose range is exactly 'é' must be read (audit issue25f f2)."""
    from paimon_commit.operations.orphan_scope import PartitionScope
    types = ["STRING"]
    for listed in ("e\u0301", "\u00e9"):
        scope = PartitionScope([{"p": "*"}], ["p"], types, "__DEFAULT_PARTITION__", "t")
        scope.fold_case = False   # (names kept exactly: fold_case has its own test)
        scope.add_partition([listed])
        assert scope.may_hold(_stats(["\u00e9"], ["\u00e9"], (0,), types)), listed
        assert scope.may_hold(_stats(["e\u0301"], ["e\u0301"], (0,), types)), listed
    plain = PartitionScope([{"p": "*"}], ["p"], types, "__DEFAULT_PARTITION__", "t")
    plain.fold_case = False   # (names kept exactly: fold_case has its own test)
    plain.add_partition(["e"])   # nothing to normalize: pruning kept
    assert not plain.may_hold(_stats(["\u00e9"], ["\u00e9"], (0,), types))


def test_a_cased_directory_value_may_hold_anything_where_names_may_fold_case(table_path):
    """On a case-insensitive file system the values 'A' and 'a' share the directory `p=A`:
    its manifests must be read where names may fold case (audit issue27c c1), and are pruned
    where they cannot (this Linux file system: `SCHEMA` is not `schema`)."""
    from paimon_commit.operations.orphan_scope import PartitionScope
    types = ["STRING"]
    folding = PartitionScope([{"p": "A"}], ["p"], types, "__DEFAULT_PARTITION__", "t")
    assert folding.fold_case   # in doubt
    folding.add_partition(["A"])
    assert folding.may_hold(_stats(["a"], ["a"], (0,), types))
    exact = PartitionScope([{"p": "A"}], ["p"], types, "__DEFAULT_PARTITION__", "t")
    exact.fold_case = False
    exact.add_partition(["A"])
    assert not exact.may_hold(_stats(["a"], ["a"], (0,), types))
    digits = PartitionScope([{"p": "*"}], ["p"], types, "__DEFAULT_PARTITION__", "t")
    digits.add_partition(["2024-01-01"])   # no cased letter: pruning kept even so
    assert not digits.may_hold(_stats(["2024-02-01"], ["2024-02-01"], (0,), types))
    from paimon_commit import Table
    from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
    Table.create(str(table_path), pa.schema([("id", pa.int64()), ("p", pa.string())]), ["p"])
    cleaner = OrphanFilesCleaner(CleanContext(str(table_path), older_than_ms=1_700_000_000_000,
                                              partitions=["p=A"]))
    assert cleaner.folds_case() is False

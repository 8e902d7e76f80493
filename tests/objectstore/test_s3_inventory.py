"""Inventory-fed orphan cleanup on S3 (the moto server): an S3 Inventory report as S3 writes
it (a gzipped CSV without a header, URL-encoded keys, its columns, bucket and time in
manifest.json) or as Parquet replaces the listing; only strays it shows, older than the cutoff
and unchanged since, are deleted; a stale, foreign or malformed report is refused."""
import datetime
import gzip
import io
import json
import os
import time
from urllib.parse import quote_plus

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import SCHEMA, make_rows, write
from paimon_commit import Table
from paimon_commit.cli import main
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
from paimon_commit.operations.orphan_inventory import FileListError

FIELDS = "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass"


def iso(dt):
    return dt.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def objects(s3, prefix="db.db/t/"):
    out = []
    for page in s3.client.get_paginator("list_objects_v2").paginate(Bucket=s3.name,
                                                                    Prefix=prefix):
        out += [(o["Key"], o["Size"], o["LastModified"]) for o in page.get("Contents", [])]
    return out


def s3_inventory(tmp_path, bucket, rows, taken_ms, fmt="CSV"):
    """(data file, manifest.json) as S3 Inventory writes them."""
    if fmt == "CSV":
        text = "".join(f'"{bucket}","{quote_plus(k, safe="/")}","{size}","{iso(t)}",'
                       f'"etag","STANDARD"\n' for k, size, t in rows)
        data = tmp_path / "inventory.csv.gz"
        data.write_bytes(gzip.compress(text.encode()))
    else:
        t = pa.table({"bucket": [bucket] * len(rows), "key": [r[0] for r in rows],
                      "size": [r[1] for r in rows],
                      "last_modified_date": pa.array([r[2] for r in rows],
                                                     pa.timestamp("ms", "UTC"))})
        data = tmp_path / "inventory.parquet"
        pq.write_table(t, str(data))
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({
        "sourceBucket": bucket, "destinationBucket": "arn:aws:s3:::inventory",
        "version": "2016-11-30", "creationTimestamp": str(taken_ms), "fileFormat": fmt,
        "fileSchema": FIELDS if fmt == "CSV" else "message s3.inventory {}",
        "files": [{"key": "data/x", "size": 1, "MD5checksum": "x"}]}))
    return str(data), str(manifest)


@pytest.fixture
def scene(s3):
    """A table with history, old strays (one with a space and a '+' in its name: URL-encoded
    in the CSV), then the cutoff, then a young stray and the inventory's time."""
    t = Table.create(s3.table_uri(), SCHEMA, partition_keys=["dt", "hr"])
    write(t, make_rows([1, 2]))
    write(t, make_rows([3], hr=2))
    old = ["db.db/t/dt=2024-01-01/hr=1/bucket-0/data stray+1.parquet",
           "db.db/t/manifest/manifest-stray-0",
           "db.db/t/dt=2023-12-31/hr=1/bucket-0/data-stray-2.parquet"]
    for k in old:
        s3.put(k, b"stray")
    time.sleep(2.2)
    cutoff = int(time.time() * 1000)
    time.sleep(1.2)
    young = "db.db/t/dt=2024-01-01/hr=1/bucket-0/data-young-0.parquet"
    s3.put(young, b"young")
    taken = int(time.time() * 1000)
    return t, sorted(old), young, cutoff, taken


def clean(s3, cutoff, data, manifest=None, **kw):
    if manifest is None:
        kw.setdefault("file_list_time_ms", int(time.time() * 1000) - 100)
    return OrphanFilesCleaner(CleanContext(
        s3.table_uri(), older_than_ms=cutoff, allow_recent_cutoff=True, file_list=data,
        file_list_manifest=manifest, **kw)).clean()


@pytest.mark.parametrize("fmt", ["CSV", "Parquet"])
def test_an_s3_inventory_deletes_only_the_strays_older_than_the_cutoff(s3, tmp_path, scene,
                                                                       fmt):
    t, old, young, cutoff, taken = scene
    hidden = "db.db/t/dt=2024-01-02/hr=1/bucket-0/data-hidden-0.parquet"
    rows = objects(s3)
    s3.put(hidden, b"not in the inventory")
    data, manifest = s3_inventory(tmp_path, s3.name, rows, taken, fmt)
    dry = clean(s3, cutoff, data, manifest, dry_run=True)
    r = clean(s3, cutoff, data, manifest)
    rel = [k[len("db.db/t/"):] for k in old]
    assert dry.deleted_paths == r.deleted_paths == sorted(rel)
    d = r.to_dict()
    assert (d["file_list_time_ms"], d["file_list"], d["file_list_rows"]) == (
        taken, data, len(rows))
    assert d["file_list_time_source"] == f"creationTimestamp of {manifest}"
    left = {k for k, _, _ in objects(s3)}
    assert not set(old) & left and {young, hidden} <= left
    assert sorted(Table.open(s3.table_uri()).read_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert sorted(s3.pp_read().column("id").to_pylist()) == [1, 2, 3]


def test_a_stray_rewritten_after_the_inventory_is_kept(s3, tmp_path, scene):
    t, old, young, cutoff, taken = scene
    data, manifest = s3_inventory(tmp_path, s3.name, objects(s3), taken)
    s3.put(old[0], b"rewritten since")
    r = clean(s3, cutoff, data, manifest)
    assert r.deleted_paths == sorted(k[len("db.db/t/"):] for k in old[1:])
    assert r.file_list_changed == 1 and s3.get(old[0]) == b"rewritten since"


def test_a_stale_s3_inventory_is_refused(s3, tmp_path, scene):
    t, old, young, cutoff, taken = scene
    data, manifest = s3_inventory(tmp_path, s3.name, objects(s3), cutoff - 1000)
    with pytest.raises(FileListError, match="not after the cutoff .*a stale list"):
        clean(s3, cutoff, data, manifest)
    assert set(old) <= {k for k, _, _ in objects(s3)}


def test_a_foreign_or_malformed_s3_inventory_is_refused_with_its_line(s3, tmp_path, scene,
                                                                      capsys):
    t, old, young, cutoff, taken = scene
    rows = objects(s3)
    before = rows
    other = rows[:2] + [("db.db/other/bucket-0/x", 1, rows[0][2])] + rows[2:]
    data, manifest = s3_inventory(tmp_path, s3.name, other, taken)
    code = main(["remove-orphan-files", s3.table_uri(), "--older-than-duration", "1 s",
                 "--allow-recent-cutoff", "--file-list", data, "--file-list-manifest",
                 manifest])
    out, err = capsys.readouterr()
    assert (code, out, err.strip().splitlines()) == (2, "", [
        f"error: file list {data}, line 3: 'db.db/other/bucket-0/x' is not a file inside the "
        f"table root s3://{s3.name}/db.db/t: not a listing of this table (an inventory of a "
        f"whole bucket: keep only this table's rows); nothing was deleted"])
    data, elsewhere = s3_inventory(tmp_path, "elsewhere", rows, taken)
    with pytest.raises(FileListError, match=f"is an inventory of bucket 'elsewhere', but the "
                                            f"table is on bucket '{s3.name}'"):
        clean(s3, cutoff, data, elsewhere)
    (tmp_path / "ours").mkdir()
    _, manifest = s3_inventory(tmp_path / "ours", s3.name, rows, taken)
    with pytest.raises(FileListError, match=f"line 1: bucket 'elsewhere' is not the table's "
                                            f"bucket '{s3.name}'"):
        clean(s3, cutoff, data, manifest)
    headerless = tmp_path / "plain.csv"
    headerless.write_bytes(gzip.decompress(open(s3_inventory(
        tmp_path, s3.name, rows, taken)[0], "rb").read()))
    with pytest.raises(FileListError, match="line 1: not a header row"):
        clean(s3, cutoff, str(headerless))
    assert objects(s3) == before


def test_a_csv_with_a_header_from_stdin_style_object(s3, tmp_path, scene):
    """A list a user made (`aws s3 ls`-like: s3:// URIs, a header), given as a file object."""
    t, old, young, cutoff, taken = scene
    text = "path,size,last_modified\n" + "".join(
        f"s3://{s3.name}/{k},{size},{iso(m)}\n" for k, size, m in objects(s3))
    r = clean(s3, cutoff, io.BytesIO(text.encode()), file_list_time_ms=taken)
    assert r.deleted_paths == sorted(k[len("db.db/t/"):] for k in old)
    assert {young} <= {k for k, _, _ in objects(s3)}

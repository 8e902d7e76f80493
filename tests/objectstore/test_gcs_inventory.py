"""Inventory-fed orphan cleanup on GCS (fake-gcs-server): a Storage Insights inventory report
as GCS writes it (CSV with a header of the chosen metadata fields: `bucket`, `name` (the
object name, not encoded), `size`, `updated` in RFC 3339, among others) replaces the listing;
only the strays it shows, older than the cutoff and unchanged since, are deleted."""
import datetime
import json
import time
from urllib.parse import quote

import pytest

from conftest import SCHEMA, make_rows, write
from paimon_commit import Table
from paimon_commit.operations.orphan import CleanContext, OrphanFilesCleaner
from paimon_commit.operations.orphan_inventory import FileListError

# The columns of a report whose configuration chose these metadata fields (GCS writes the
# header row with the field names).
HEADER = "project,bucket,name,location,size,timeCreated,updated,storageClass,etag"


def objects(gcs, prefix="db.db/t/"):
    """(name, size, updated) of every object under prefix, from the emulator's JSON API."""
    out, token = [], None
    while True:
        q = f"prefix={quote(prefix, safe='')}" + (f"&pageToken={quote(token)}" if token else "")
        status, body = gcs._json("GET", f"/storage/v1/b/{gcs.name}/o?{q}")
        assert status == 200, (status, body[:300])
        page = json.loads(body)
        out += [(o["name"], int(o["size"]), o["updated"]) for o in page.get("items", [])]
        token = page.get("nextPageToken")
        if not token:
            return sorted(out)


def gcs_report(tmp_path, bucket, rows):
    lines = [HEADER] + [f"proj,{bucket},{name},US,{size},{updated},{updated},STANDARD,e"
                        for name, size, updated in rows]
    p = tmp_path / "inventory_report.csv"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


@pytest.fixture
def scene(gcs):
    t = Table.create(gcs.table_uri(), SCHEMA, partition_keys=["dt", "hr"])
    write(t, make_rows([1, 2]))
    write(t, make_rows([3], hr=2))
    old = ["db.db/t/dt=2024-01-01/hr=1/bucket-0/data stray+1.parquet",
           "db.db/t/manifest/manifest-stray-0",
           "db.db/t/dt=2023-12-31/hr=1/bucket-0/data-stray-2.parquet"]
    for k in old:
        gcs.put(k, b"stray")
    time.sleep(2.2)
    cutoff = int(time.time() * 1000)
    time.sleep(1.2)
    young = "db.db/t/dt=2024-01-01/hr=1/bucket-0/data-young-0.parquet"
    gcs.put(young, b"young")
    return t, sorted(old), young, cutoff


def clean(gcs, cutoff, report, **kw):
    kw.setdefault("file_list_time_ms", int(time.time() * 1000) - 100)
    return OrphanFilesCleaner(CleanContext(
        gcs.table_uri(), older_than_ms=cutoff, allow_recent_cutoff=True, file_list=report,
        **kw)).clean()


def test_a_gcs_inventory_report_deletes_only_the_strays_older_than_the_cutoff(gcs, tmp_path,
                                                                            scene):
    t, old, young, cutoff = scene
    rows = objects(gcs)
    hidden = "db.db/t/dt=2024-01-02/hr=1/bucket-0/data-hidden-0.parquet"
    gcs.put(hidden, b"not in the report")
    report = gcs_report(tmp_path, gcs.name, rows)
    dry = clean(gcs, cutoff, report, dry_run=True)
    r = clean(gcs, cutoff, report)
    assert dry.deleted_paths == r.deleted_paths == sorted(k[len("db.db/t/"):] for k in old)
    assert r.file_list_rows == len(rows)
    left = {k for k, _, _ in objects(gcs)}
    assert not set(old) & left and {young, hidden} <= left
    assert sorted(Table.open(gcs.table_uri()).read_arrow().column("id").to_pylist()) == [1, 2, 3]


def test_a_gcs_report_of_another_bucket_is_refused(gcs, tmp_path, scene):
    t, old, young, cutoff = scene
    report = gcs_report(tmp_path, "another-bucket", objects(gcs))
    with pytest.raises(FileListError, match="another-bucket"):
        clean(gcs, cutoff, report)
    assert set(old) <= {k for k, _, _ in objects(gcs)}


def test_a_gcs_report_whose_times_are_in_the_future_is_not_taken_for_old(gcs, tmp_path, scene):
    """An `updated` time the report got wrong (a day ahead) makes a stray young: kept."""
    t, old, young, cutoff = scene
    ahead = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
             ).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    rows = [(n, s, ahead if n == old[0] else u) for n, s, u in objects(gcs)]
    r = clean(gcs, cutoff, gcs_report(tmp_path, gcs.name, rows))
    assert old[0] not in [f"db.db/t/{p}" for p in r.deleted_paths]
    assert old[0] in {k for k, _, _ in objects(gcs)}

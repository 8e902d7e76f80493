"""The maintenance lease names its table by the commit record's key (lease.table_identity ==
operations/commit_record.table_identity): one table however it is spelled, s3a:// and s3n://
as s3:// (before, a lease record written through s3a:// was "another table's" to a run
through s3://, which was told to `lease --break` a live lease). tests/objectstore/
test_s3_lease.py shows it on an S3 server."""
import os

from paimon_commit.io import for_path
from paimon_commit.io.object_store import ObjectStoreFileIO
from paimon_commit.io.uri import parse_object_store_uri
from paimon_commit.lease import table_identity
from paimon_commit.operations import commit_record


def _store(uri, endpoint=""):
    # No client: the identity reads only the store's names.
    scheme, bucket, prefix, _, _ = parse_object_store_uri(uri)
    return ObjectStoreFileIO(None, scheme, bucket, prefix, "test", endpoint=endpoint)


def test_spellings_of_one_table_on_an_object_store_are_one_lease():
    key = table_identity(_store("s3://bucket/db.db/t"))
    assert key == commit_record.table_identity(_store("s3://bucket/db.db/t"))
    for uri in ("s3a://bucket/db.db/t", "s3n://bucket/db.db/t/"):
        assert table_identity(_store(uri)) == key, uri
    assert table_identity(_store("s3://bucket/db.db/u")) != key
    assert table_identity(_store("s3://bucket/db.db/t", endpoint="http://other")) != key


def test_local_spellings_of_one_table_are_one_lease(tmp_path):
    real = tmp_path / "wh" / "t"
    real.mkdir(parents=True)
    os.symlink(real, tmp_path / "link")
    key = table_identity(for_path(str(real)))
    assert key == commit_record.table_identity(for_path(str(real)))
    for spelling in (str(tmp_path / "link"), "file://" + str(real), str(real) + "/"):
        assert table_identity(for_path(spelling)) == key, spelling


def test_a_record_written_through_another_name_of_the_server_is_this_tables():
    # audit/final f2, f3: a live holder that reached the table as http://localhost:9000 (or
    # with no endpoint, or AWS's own) wrote its record under that name; a run through
    # http://127.0.0.1:9000 read it as "another table's" and was told to --break it.
    from paimon_commit.lease import _same_table
    io = _store("s3://bucket/db.db/t", endpoint="http://127.0.0.1:9000")
    mine = table_identity(io)
    for other in ("http://localhost:9000", "", "https://s3.amazonaws.com"):
        written = table_identity(_store("s3://bucket/db.db/t", endpoint=other))
        assert written != mine and _same_table(written, mine, io), other
    for other_table in ("s3://bucket/db.db/u", "s3://other/db.db/t", "gs://bucket/db.db/t"):
        written = table_identity(_store(other_table, endpoint="http://localhost:9000"))
        assert not _same_table(written, mine, io), other_table

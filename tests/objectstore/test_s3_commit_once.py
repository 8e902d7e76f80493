"""A repeat of a commit to an S3 table through another spelling of its URI (s3a://, a trailing
slash) is a no-op: the commit record keys the table by its store and key prefix, not by the
URI as written (issue 25, finding 7; the local spellings are in
tests/operations/test_commit_repeats.py)."""
from conftest import SCHEMA, make_rows
from paimon_commit import Table


def test_a_repeat_through_another_spelling_of_an_s3_table_is_a_no_op(s3):
    uri = s3.table_uri()
    t = Table.create(uri, SCHEMA, partition_keys=["dt", "hr"])
    w = t.new_writer()
    w.write_arrow(make_rows([1, 2]))
    msgs = w.prepare_commit()
    with t.new_commit(commit_user="job") as c:
        assert c.commit(msgs, 3) == 1
    for other in (uri.replace("s3://", "s3a://", 1), uri + "/"):
        with Table.open(other).new_commit(commit_user="job") as c:
            assert c.commit(msgs, 3) == 1
            assert c.last_result.already_committed
    again = Table.open(uri)
    assert again.latest_snapshot().id == 1
    assert sorted(again.read_arrow().column("id").to_pylist()) == [1, 2]


def test_a_repeat_through_another_spelling_of_the_endpoint_is_a_no_op(s3):
    # Audit issue25c c4: the record keyed the table by the endpoint as given, so the same
    # messages repeated with s3.endpoint `http://127.0.0.1:PORT/` (the environment says
    # `http://127.0.0.1:PORT`) were published a second time: every row twice.
    uri = s3.table_uri()
    t = Table.create(uri, SCHEMA, partition_keys=["dt", "hr"])
    w = t.new_writer()
    w.write_arrow(make_rows([1, 2]))
    msgs = w.prepare_commit()
    with t.new_commit(commit_user="job") as c:
        assert c.commit(msgs, 3) == 1
    for endpoint in (s3.server.url + "/", s3.server.url.upper() + "/"):
        with Table.open(uri, storage_options={"s3.endpoint": endpoint}) \
                .new_commit(commit_user="job") as c:
            assert c.commit(msgs, 3) == 1
            assert c.last_result.already_committed
    again = Table.open(uri)
    assert again.latest_snapshot().id == 1
    assert sorted(again.read_arrow().column("id").to_pylist()) == [1, 2]

"""Options are checked: a typo of a Paimon table option is a warning naming the near name; a
storage option typo is an error before any I/O; far-off unknown table options are kept."""
import logging
import warnings

import pyarrow as pa
import pytest

from paimon_commit import OptionError, Table
from paimon_commit.option_names import (CORE_OPTION_NAMES, OptionNameWarning,
                                        check_table_option_names)
from paimon_commit.options import OPTIONS

SCHEMA = pa.schema([("id", pa.int64())])


def test_the_names_include_every_option_this_library_acts_on():
    # Ours follow Paimon's names: one missing here would be a typo in options.py.
    ours = set(OPTIONS) - CORE_OPTION_NAMES
    # this library's own (README: Storage; Compaction)
    assert ours <= {"commit.single-writer", "compaction.post-commit.enabled"}
    assert {"snapshot.num-retained.min", "bucket", "changelog-producer", "tag.num-retained-max",
            "snapshot.expire.clean-empty-directories"} <= CORE_OPTION_NAMES


def test_a_typo_in_create_options_is_refused_with_the_paimon_name(tmp_path):
    # Issue 28: where the user types the options (Table.create, the Spark write that creates
    # a table, --table-conf) a near miss is an error, before anything is written.
    path = tmp_path / "t"
    with pytest.raises(OptionError) as e:
        Table.create(str(path), SCHEMA, options={"snapshot.num-retaind.min": "3"})
    assert str(e.value) == ("table option 'snapshot.num-retaind.min' is not a Paimon option: "
                            "did you mean 'snapshot.num-retained.min'?")
    assert not path.exists()


def test_options_a_table_carries_still_only_warn():
    with pytest.warns(OptionNameWarning):
        assert check_table_option_names({"snapshot.num-retaind.min": "3"}) != []


def test_a_script_and_the_cli_say_a_typo_once(tmp_path):
    import subprocess
    import sys
    path = str(tmp_path / "t")
    script = ("import sys, pyarrow as pa; from paimon_commit import Table; "
              "Table.create(sys.argv[1], pa.schema([('id', pa.int64())]), "
              "options={'snapshot.num-retaind.min': '3'})")
    p = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr.count("did you mean 'snapshot.num-retained.min'") == 1
    Table.create(path, SCHEMA)
    p = subprocess.run([sys.executable, "-m", "paimon_commit", "compact", path,
                        "--table-conf", "compaction.min.file-nm=3", "--dry-run"],
                       capture_output=True, text=True)
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr.splitlines() == [
        "error: --table-conf 'compaction.min.file-nm' is not a Paimon option: did you mean "
        "'compaction.min.file-num'?"]


def test_far_off_and_engine_options_are_accepted_silently(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Table.create(str(tmp_path / "t"), SCHEMA, options={
            "my-team.owner": "ana", "sink.parallelism": "4", "snapshot.watermark-idle-timeout":
            "1 min", "fields.id.aggregate-function": "sum", "file-index.bloom-filter.columns":
            "id", "parquet.block.size": "1"})


def test_a_typo_in_commit_options_warns(tmp_path):
    t = Table.create(str(tmp_path / "t"), SCHEMA)
    with pytest.warns(OptionNameWarning) as w:
        t.new_commit(options={"write-onyl": "true"}).close()
    assert str(w[0].message) == (
        "commit option 'write-onyl' is not a Paimon option: did you mean 'write-only'? "
        "(ignored: only Paimon's options act on a commit)")
    assert w[0].filename == __file__


def test_no_warning_for_the_right_names():
    assert check_table_option_names({"snapshot.num-retained.min": "3", "write-only": "true"}) \
        == []


@pytest.mark.parametrize("key, message", [
    ("s3.endpiont", "unknown storage option 's3.endpiont': did you mean 's3.endpoint'?"),
    ("fs.s3a.acess.key", "unknown storage option 'fs.s3a.acess.key': did you mean "
                         "'fs.s3a.access.key'?"),
    ("azure.acount-name", "did you mean 'azure.account-name'?"),
])
def test_a_storage_option_typo_is_an_error_before_any_io(tmp_path, key, message):
    for where in (str(tmp_path / "local"), "s3://bucket/wh/t"):
        with pytest.raises(OptionError) as e:
            Table.open(where, storage_options={key: "http://127.0.0.1:1"})
        assert message in str(e.value)
    with pytest.raises(OptionError, match="did you mean"):
        Table.create(str(tmp_path / "t"), SCHEMA, storage_options={key: "x"})
    assert list(tmp_path.iterdir()) == []


def test_an_obstore_key_obstore_does_not_know_names_it():
    with pytest.raises(OptionError) as e:
        Table.open("s3://bucket/t", storage_options={"aws_endpiont": "http://127.0.0.1:1"})
    assert str(e.value) == ("unknown storage option 'aws_endpiont': not a key of obstore's S3 "
                            "store (see README Storage)")


def test_unknown_far_off_storage_options_are_left_alone_in_the_api(tmp_path, caplog):
    # A Paimon catalog's s3.* settings for Hadoop: not ours, not a typo; said in the log.
    from paimon_commit.io import for_path
    with caplog.at_level(logging.WARNING):
        for_path(str(tmp_path), {"s3.connection.maximum": "10", "spark.foo": "1"})
    assert "storage option 's3.connection.maximum' is not one this library reads" in caplog.text
    assert "spark.foo" not in caplog.text


def test_hadoop_keys_near_ours_are_not_taken_for_typos_in_the_api(tmp_path):
    # fs.azure.account.auth.type is Hadoop's (OAuth), not a typo of fs.azure.account.name.
    from paimon_commit.io import for_path
    for_path(str(tmp_path), {"fs.azure.account.auth.type": "OAuth",
                             "s3.endpoint.region": "eu-west-1"})
    with pytest.raises(OptionError, match="did you mean 's3.path.style.access'"):
        for_path(str(tmp_path), {"s3.path-style-access": "true"})

"""Options that cannot act on a handle, a commit or a new table are refused before any I/O
(audit F of the dynamic table options): a branch (the handle would act on main), a changelog
producer on an append table (expiration would drop what its changelogs read), options that
move files (other readers would not find them), credentials stored in the schema, and
time-travel options the reader would ignore."""
import os

import pytest

from conftest import SCHEMA, files_under, make_rows, write
from oracle import pp_read

from paimon_commit import OptionError, Table


@pytest.fixture
def three(table, table_path):
    for i in range(3):
        write(table, make_rows([i]))
    return table


def refused(path, call, message):
    before = files_under(path) if os.path.exists(path) else None
    with pytest.raises(OptionError) as e:
        call()
    assert str(e.value) == message
    assert (files_under(path) if os.path.exists(path) else None) == before
    return e.value


# --- F3: branches --------------------------------------------------------------------------
BRANCH = ("branches are not supported: this library reads and writes the main branch only "
          "(remove the option to act on main)")


@pytest.mark.parametrize("key", ["branch", "scan.fallback-branch", "scan.primary-branch"])
def test_open_refuses_a_branch_and_main_keeps_its_snapshots(three, table_path, key):
    path = str(table_path)
    refused(path, lambda: Table.open(path, options={key: "b1"}),
            f"Table.open: option {key!r} = 'b1': {BRANCH}")
    assert sorted(os.listdir(table_path / "snapshot")) == [
        "LATEST", "snapshot-1", "snapshot-2", "snapshot-3"]
    assert pp_read(path).num_rows == 3


def test_branch_main_is_main(three, table_path):
    assert Table.open(str(table_path), options={"branch": "main"}).latest_snapshot().id == 3


def test_branch_is_refused_before_any_io(tmp_path):
    path = str(tmp_path / "t")
    refused(path, lambda: Table.open(path, options={"branch": "b1"}),
            f"Table.open: option 'branch' = 'b1': {BRANCH}")
    refused(path, lambda: Table.create(path, SCHEMA, options={"branch": "b1"}),
            f"Table.create: option 'branch' = 'b1': {BRANCH}")
    assert not os.path.exists(path)


def test_commit_refuses_a_branch(three, table_path):
    refused(str(table_path), lambda: three.new_commit("u", options={"branch": "b1"}),
            f"commit options of {table_path}: option 'branch' = 'b1': {BRANCH}")


# --- F2: changelog producer on an append table ---------------------------------------------
PRODUCER = ("option 'changelog-producer' = 'input' needs a table with primary keys: an "
            "append table has none (only 'none' is allowed)")


def test_open_refuses_a_changelog_producer_on_an_append_table(three, table_path):
    path = str(table_path)
    refused(path, lambda: Table.open(path, options={"changelog-producer": "input"}),
            f"opening {path}: {PRODUCER}")
    assert Table.open(path, options={"changelog-producer": "none"}).latest_snapshot().id == 3


def test_commit_refuses_a_changelog_producer_on_an_append_table(three, table_path):
    refused(str(table_path),
            lambda: three.new_commit("u", options={"changelog-producer": "input"}),
            f"commit options of {table_path}: {PRODUCER}")


def test_create_refuses_a_changelog_producer(tmp_path):
    path = str(tmp_path / "t")
    refused(path, lambda: Table.create(path, SCHEMA, options={"changelog-producer": "input"}),
            f"Table.create: {PRODUCER}")
    assert not os.path.exists(path)


# --- F1: options that decide where files are -----------------------------------------------
def test_open_refuses_a_partition_default_name_of_its_own(three, table_path):
    path = str(table_path)
    refused(path, lambda: Table.open(path, options={"partition.default-name": "nulls"}),
            f"table option 'partition.default-name' = 'nulls' cannot be given when opening "
            f"{path} (it is not set there): it decides the directories files are written to, "
            f"and every other reader looks for them where the table's options say")
    refused(path, lambda: Table.open(path, options={"partition.legacy-name": "false"}),
            f"table option 'partition.legacy-name' = 'false' cannot be given when opening "
            f"{path} (it is not set there): it decides the directories files are written to, "
            f"and every other reader looks for them where the table's options say")
    # The table's own value is no change.
    t = Table.open(path, options={"partition.default-name": "__DEFAULT_PARTITION__"})
    assert t.latest_snapshot().id == 3


def test_commit_refuses_a_partition_default_name_of_its_own(three, table_path):
    refused(str(table_path),
            lambda: three.new_commit("u", options={"partition.default-name": "nulls"}),
            f"commit options of {table_path}: option 'partition.default-name' = 'nulls' is "
            f"not supported: it decides where files are written, which the table's options fix")


# --- F4: credentials in the schema ---------------------------------------------------------
@pytest.mark.parametrize("key", ["s3.secret-key", "fs.s3a.bucket.b1.secret.key",
                                 "fs.azure.account.oauth2.client.secret", "fs.oss.accessKeySecret"])
def test_create_refuses_storage_options_without_echoing_them(tmp_path, key):
    path = str(tmp_path / "t")
    e = refused(path, lambda: Table.create(path, SCHEMA, options={key: "TOPSECRET"}),
                f"Table.create: {key!r} is a storage option, not a table option: give it as "
                f"storage_options={{{key!r}: ...}} (table options are stored in the table's "
                f"schema)")
    assert "TOPSECRET" not in str(e)
    assert not os.path.exists(path)


# --- F6: time travel -----------------------------------------------------------------------
@pytest.mark.parametrize("key, value", [("scan.snapshot-id", "1"), ("scan.tag-name", "t1"),
                                        ("scan.timestamp-millis", "0")])
def test_open_refuses_time_travel_options(three, table_path, key, value):
    path = str(table_path)
    refused(path, lambda: Table.open(path, options={key: value}),
            f"Table.open: option {key!r} = {value!r} is not supported as a table option (the "
            f"handle would read the latest snapshot): read a snapshot or a tag with "
            f"read_arrow(snapshot_id=...) or read_arrow(tag=...)")

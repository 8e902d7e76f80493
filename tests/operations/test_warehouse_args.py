"""A maintenance run's own arguments are checked before any I/O: a bad one is refused once,
naming it, with nothing deleted, instead of failing every table after its expiration ran.
Real warehouses on disk; the API (maintain_warehouse, maintain_table) and the CLI."""
import time

import pytest

from conftest import SCHEMA, files_under, make_rows, write

from paimon_commit import Table
from paimon_commit.cli import main
from paimon_commit.errors import OptionError
from paimon_commit.warehouse import maintain_table, maintain_warehouse

# Everything but the latest snapshot expires at once: a run that gets as far as expiration
# deletes files.
EAGER = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
         "snapshot.time-retained": "0 ms", "write-only": "true"}


@pytest.fixture
def warehouse(table_path):
    t = Table.create(str(table_path), SCHEMA, partition_keys=["dt", "hr"], options=EAGER)
    for i in range(3):
        write(t, make_rows([i]))
    return table_path.parent.parent


def _now_ms():
    return int(time.time() * 1000)


BAD = [
    (dict(orphans=True, older_than_ms="seconds"), r"^older_than_ms = \d{10} looks like "
                                                  r"seconds, not milliseconds$"),
    (dict(orphans=True, older_than_ms="future"), r"^older_than_ms = \d+ is not in the past "
                                                 r"\(now = \d+\): files of commits in "
                                                 r"progress would be deleted$"),
    (dict(orphans=True, older_than_ms="text"), r"^older_than_ms must be an integer, got "
                                               r"'1 d'$"),
    (dict(orphans="false"), r"^orphans must be True or False, got 'false'$"),
    (dict(dry_run="no"), r"^dry_run must be True or False, got 'no'$"),
    (dict(compact=1), r"^compact must be True or False, got 1$"),
]


def _args(kw):
    kw = dict(kw)
    v = kw.get("older_than_ms")
    kw["older_than_ms"] = {"seconds": int(time.time()), "future": _now_ms() + 3_600_000,
                           "text": "1 d", None: None}[v]
    return kw


@pytest.mark.parametrize("kw, message", BAD, ids=[m[:20] for _, m in BAD])
def test_maintain_warehouse_checks_its_arguments_before_deleting(warehouse, table_path, kw,
                                                                 message):
    # Regression (audit F8): a threshold in seconds expired every table's snapshots, then
    # failed each one at the orphan step ("looks like seconds").
    before = files_under(warehouse)
    with pytest.raises(OptionError, match=message):
        maintain_warehouse(str(warehouse), workers="thread", **_args(kw))
    assert files_under(warehouse) == before
    assert [s.id for s in Table.open(str(table_path)).snapshots()] == [1, 2, 3]


@pytest.mark.parametrize("kw, message", BAD[:2] + BAD[3:4], ids=["seconds", "future", "bool"])
def test_maintain_table_checks_its_arguments_before_deleting(warehouse, table_path, kw,
                                                             message):
    before = files_under(warehouse)
    with pytest.raises(OptionError, match=message):
        maintain_table(str(table_path), **_args(kw))
    assert files_under(warehouse) == before


def test_a_good_run_still_expires_and_cleans(warehouse, table_path):
    (r,) = maintain_warehouse(str(warehouse), orphans=True, older_than_ms=_now_ms() - 1000,
                              workers="thread", allow_recent_cutoff=True)
    assert r.status == "ok" and r.snapshots_expired == 2
    assert [s.id for s in Table.open(str(table_path)).snapshots()] == [3]


def test_cli_maintain_refuses_an_orphan_age_reaching_before_1970(capsys, warehouse):
    # Through the command line the threshold is an age: one so long that the cutoff lies
    # before any file could exist used to expire every table and then fail each one.
    before = files_under(warehouse)
    code = main(["maintain", str(warehouse), "--orphans", "--older-than-duration", "30000 d"])
    out, err = capsys.readouterr()
    assert (code, err.splitlines(), out) == (
        2, ["error: --older-than-duration '30000 d' reaches back before 1970: no file is that "
            "old"], "")
    assert files_under(warehouse) == before

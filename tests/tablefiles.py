"""Walking a table's files as the tests compare them: without the maintenance lease's records
(`.maintenance/`: bookkeeping of who maintains the table, written by every destructive run of
ours and unknown to Paimon Java, whose results the tests compare with ours)."""
import os

LEASE_DIR = ".maintenance"


def table_walk(path):
    """os.walk(path), never entering a `.maintenance` directory."""
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d != LEASE_DIR]
        yield root, dirs, names


def tag_as_another_engine(table, name, snapshot_id, time_retained_ms=None):
    """Create tag `name` on snapshot `snapshot_id` as Paimon Java or pypaimon do: the tag file
    only, created if absent, without this library's maintenance lease or marks. Tests of the
    re-checks by content use it for "another client": this library's own create_tag takes
    the lease, so it cannot run inside another maintenance run (audit issue25aa aa2)."""
    import datetime

    from paimon_commit.format.snapshot import Tag
    from paimon_commit.tags import tag_manager
    store = table.store
    snap = store.snapshots.snapshot(snapshot_id)
    tag = Tag(name, snap, datetime.datetime.now() if time_retained_ms else None,
              time_retained_ms)
    assert tag_manager(store).create(tag), f"tag {name} exists"
    return tag

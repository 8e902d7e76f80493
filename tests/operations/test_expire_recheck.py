"""Re-checks compare content, not names (issue 25 item 2). Right before its first delete a
run reads again what its plan kept (the first kept snapshot and every newer one, every long-
lived changelog it keeps), every tag's target snapshot and every consumer's position; any
change stops it, deleting nothing. The other process's action (a rollback through another
handle, a tag deleted and created again under the same name, a consumer file rewritten, an
expiration) runs right between the plan and the deletion, on real directories; the checks are
what a user sees: the table has its snapshots, every tag reads (pypaimon), and the result says
why nothing was deleted."""
import dataclasses
import os
import time

import pytest

from conftest import files_under, make_rows, write
from tablefiles import tag_as_another_engine
from invariants import assert_intact

from paimon_commit import OptionError, Table
from paimon_commit.format.manifest import FileKind
from paimon_commit.operations import tag_expire
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.operations.tag_ops import TagOperations
from paimon_commit.snapshots import ChangelogManager
from paimon_commit.tags import ConsumerManager

FAR_FUTURE = lambda: time.time() + 10 * 365 * 86400  # noqa: E731  everything is "old"
STOPPED = "nothing is deleted, the next run plans again"


def history(table, n, drop_every=0):
    """n commits, one row each into hr = i % 2; every `drop_every`-th drops hr=0 instead.
    Returns {snapshot id: live ids}."""
    live, expected = {}, {}
    for i in range(1, n + 1):
        if drop_every and i % drop_every == 0:
            with table.new_commit() as c:
                c.drop_partitions([{"hr": 0}])
            live = {k: v for k, v in live.items() if v != 0}
        else:
            write(table, make_rows([i], hr=i % 2))
            live[i] = i % 2
        expected[i] = list(live)
    return expected


def expire(table, **cfg):
    cfg.setdefault("time_retained_ms", 0)
    cfg.setdefault("max_deletes", 1000)
    return ExpireSnapshots(table.store, ExpireConfig(**cfg), clock=FAR_FUTURE).expire()


def before_execute(monkeypatch, action, changelogs=False):
    """Run `action` (another process) once, right before the first plan of the given kind
    (snapshots, or long-lived changelogs) is executed."""
    execute = ExpireSnapshots._execute
    done = []

    def hooked(self, plan):
        if plan.changelogs == changelogs and plan.end is not None and not done:
            done.append(True)
            action()
        return execute(self, plan)
    monkeypatch.setattr(ExpireSnapshots, "_execute", hooked)
    return done


def snapshot_ids(path):
    return sorted(int(n[len("snapshot-"):]) for n in os.listdir(path / "snapshot")
                  if n.startswith("snapshot-"))


def test_a_rollback_while_expiration_plans_stops_it(table, table_path, monkeypatch):
    """Finding 1: the plan keeps 8..10 and expires 1..7; another handle rolls back to 5
    (6..10 deleted). Deleting 1..7 now would leave a table without a snapshot."""
    expected = history(table, 10, drop_every=3)
    other = Table.open(str(table_path))
    ran = before_execute(monkeypatch, lambda: other.rollback_to(5))
    before = set(files_under(table_path))
    r = expire(table, retain_min=3, retain_max=3)
    assert ran
    assert r.expired_snapshots == 0 and r.deleted_files == 0
    assert r.skipped == [f"the table changed while planning (snapshot 8 is gone, snapshot 9 is "
                         f"gone, snapshot 10 is gone); {STOPPED}"]
    assert snapshot_ids(table_path) == [1, 2, 3, 4, 5]
    assert set(files_under(table_path)) <= before
    assert_intact(table_path, {i: expected[i] for i in range(1, 6)})
    monkeypatch.undo()
    assert expire(table, retain_min=3, retain_max=3).expired_ids == [1, 2]
    assert_intact(table_path, {i: expected[i] for i in range(3, 6)})


def test_a_kept_snapshot_recreated_with_other_content_stops_expiration(table, table_path,
                                                                       monkeypatch):
    """A rollback below the plan's end followed by new commits re-creates the kept ids with
    other content: the names are all there, the content is not what was planned."""
    history(table, 10, drop_every=3)
    other = Table.open(str(table_path))

    def rollback_and_commit():
        other.rollback_to(5)
        for i in range(6, 11):
            write(other, make_rows([100 + i], hr=0))
    before_execute(monkeypatch, rollback_and_commit)
    r = expire(table, retain_min=3, retain_max=3)
    assert r.expired_snapshots == 0 and r.deleted_files == 0
    assert r.skipped == [f"the table changed while planning (snapshot 8 was replaced, snapshot "
                         f"9 was replaced, snapshot 10 was replaced); {STOPPED}"]
    assert snapshot_ids(table_path) == list(range(1, 11))
    assert_intact(table_path)


def test_a_tag_replaced_while_expiration_plans_stops_it(table, table_path, monkeypatch):
    """Finding 2: tag x on 9; while the plan expires 1..7, another process deletes x and
    creates x on 4. Same names: only the content shows it."""
    expected = history(table, 10, drop_every=3)
    table.create_tag("x", 9)
    other = Table.open(str(table_path))

    def replace_tag():
        other.delete_tag("x")
        tag_as_another_engine(other, "x", 4)
    before_execute(monkeypatch, replace_tag)
    r = expire(table, retain_min=3, retain_max=3)
    assert r.expired_snapshots == 0 and r.deleted_files == 0
    assert r.skipped == [f"the table changed while planning (tag x now points at snapshot 4, "
                         f"was 9); {STOPPED}"]
    assert_intact(table_path, expected, {"x": expected[4]})
    monkeypatch.undo()
    assert expire(table, retain_min=3, retain_max=3).expired_ids == list(range(1, 8))
    assert_intact(table_path, {i: expected[i] for i in (8, 9, 10)}, {"x": expected[4]})


def test_a_consumer_reset_while_expiration_plans_stops_it(table, table_path, monkeypatch):
    expected = history(table, 12)
    consumers = ConsumerManager(table.store.io, table.store.root)
    consumers.write("reader-1", 11)
    before_execute(monkeypatch, lambda: consumers.write("reader-1", 3))
    r = expire(table, retain_min=1)
    assert r.expired_snapshots == 0 and r.deleted_files == 0
    assert r.skipped == [f"the table changed while planning (consumer reader-1 is at snapshot "
                         f"3, below the plan's first kept snapshot 11); {STOPPED}"]
    assert snapshot_ids(table_path) == list(range(1, 13))
    assert_intact(table_path, expected)
    monkeypatch.undo()
    assert expire(table, retain_min=1).expired_ids == [1, 2]


def test_a_consumer_moving_on_does_not_stop_expiration(table, table_path, monkeypatch):
    history(table, 12)
    consumers = ConsumerManager(table.store.io, table.store.root)
    consumers.write("reader-1", 5)
    before_execute(monkeypatch, lambda: consumers.write("reader-1", 12))
    # Not a change that stops the run: it expires up to 5, where the reader was when it
    # started (a run stops where it planned to); the next run goes on to 12.
    r = expire(table, retain_min=1)
    assert r.complete and r.expired_ids == [1, 2, 3, 4]
    assert expire(table, retain_min=1).expired_ids == list(range(5, 12))


def test_a_consumer_reset_while_changelog_expiration_plans_stops_it(table_path, monkeypatch):
    path = str(table_path)
    Table.create(path, make_rows([]).schema, partition_keys=["dt", "hr"], options={
        "snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2",
        "snapshot.time-retained": "1 ms", "changelog.num-retained.min": "4",
        "changelog.num-retained.max": "4", "changelog.time-retained": "1 ms",
        "write-only": "true"})
    t = Table.open(path)
    for i in range(10):
        write(t, make_rows([i], hr=i % 2))
    time.sleep(0.01)
    t.expire_snapshots()
    cl = table_path / "changelog"
    ids = lambda: sorted(int(n[10:]) for n in os.listdir(cl) if n.startswith("changelog-"))  # noqa
    assert ids() == [7, 8]
    for i in range(10, 12):
        write(t, make_rows([i], hr=i % 2))
    time.sleep(0.01)
    consumers = ConsumerManager(t.store.io, t.store.root)
    ran = before_execute(monkeypatch, lambda: consumers.write("reader-1", 8), changelogs=True)
    before = set(files_under(table_path)) - {"consumer/consumer-reader-1"}
    r = t.expire_snapshots()
    assert ran and r.expired_ids == [9, 10]
    assert r.expired_changelogs == []
    assert r.skipped == [f"the table changed while planning (consumer reader-1 is at snapshot "
                         f"8, below the plan's first kept snapshot 9); {STOPPED}"]
    assert ids() == [7, 8, 9, 10]
    assert not {f for f in before if f.startswith(("changelog/changelog-", "data"))} \
        - set(files_under(table_path))
    assert_intact(table_path)


def expired_tag_x(table, table_path):
    """History of 10; tag x on 4; snapshots 1..7 expired: x alone keeps 4's dropped file."""
    expected = history(table, 10, drop_every=3)
    table.create_tag("x", 4)
    assert expire(table, retain_min=3).expired_ids == list(range(1, 8))
    return expected


def test_delete_tag_stops_when_the_tag_is_replaced_meanwhile(table, table_path, monkeypatch):
    expected = expired_tag_x(table, table_path)
    other = Table.open(str(table_path))
    plan = TagOperations._only_this_tag

    def plan_then_replace(self, *a, **k):
        out = plan(self, *a, **k)
        other.store.io.delete_quietly(other.store.root + "/tag/tag-x")   # (Java's delete)
        tag_as_another_engine(other, "x", 9)
        return out
    monkeypatch.setattr(TagOperations, "_only_this_tag", plan_then_replace)
    before = set(files_under(table_path))
    r = table.delete_tag("x")
    assert r.deleted_files == 0
    assert r.skipped == ["tag x changed while its deletion was planned (it now points at "
                         "snapshot 9, was 4); nothing is deleted"]
    assert set(files_under(table_path)) == before
    assert [t.id for t in Table.open(str(table_path)).tags()] == [9]
    assert_intact(table_path, expected, {"x": expected[9]})


def test_delete_tag_stops_when_another_tag_takes_the_snapshot_meanwhile(table, table_path,
                                                                      monkeypatch):
    """While delete_tag plans, another process copies tag x under the name y (as a tag of
    the same snapshot): x's files are y's now."""
    expected = expired_tag_x(table, table_path)
    plan = TagOperations._only_this_tag

    def plan_then_copy(self, *a, **k):
        out = plan(self, *a, **k)
        (table_path / "tag" / "tag-y").write_bytes((table_path / "tag" / "tag-x").read_bytes())
        return out
    monkeypatch.setattr(TagOperations, "_only_this_tag", plan_then_copy)
    r = table.delete_tag("x")
    assert r.deleted_files == 0
    assert r.skipped == ["the tags changed while the deletion of tag x was planned (tag y "
                         "was created on snapshot 4); nothing is deleted"]
    assert sorted(t.name for t in Table.open(str(table_path)).tags()) == ["x", "y"]
    assert_intact(table_path, None, {"x": expected[4], "y": expected[4]})


def test_tag_expiration_keeps_a_tag_replaced_after_it_was_listed(table, table_path,
                                                                monkeypatch):
    expected = history(table, 5)
    table.create_tag("x", 2, time_retained=1)
    other = Table.open(str(table_path))
    delete = tag_expire.delete_tag_into

    def replace_then_delete(*a, **k):
        other.store.io.delete_quietly(other.store.root + "/tag/tag-x")
        tag_as_another_engine(other, "x", 5)   # a new tag, no retention
        return delete(*a, **k)
    monkeypatch.setattr(tag_expire, "delete_tag_into", replace_then_delete)
    r = table.expire_tags(clock=FAR_FUTURE)
    assert r.expired_tags == []
    assert r.skipped == ["tag x: tag x changed while its deletion was planned (it now points "
                         "at snapshot 5, was 2); nothing is deleted"]
    assert [(t.name, t.id) for t in Table.open(str(table_path)).tags()] == [("x", 5)]
    assert_intact(table_path, expected, {"x": expected[5]})


def test_rollback_stops_when_its_target_expires_meanwhile(table, table_path, monkeypatch):
    expected = history(table, 10, drop_every=3)
    other = Table.open(str(table_path))
    check = TagOperations._check_readable
    calls = []

    def check_then_expire(self, snap, what):
        check(self, snap, what)
        if not calls:
            calls.append(True)
            expire(other, retain_min=3)   # expires 1..7, the target 5 included
    monkeypatch.setattr(TagOperations, "_check_readable", check_then_expire)
    with pytest.raises(ValueError) as e:
        table.rollback_to(5)
    assert str(e.value) == ("cannot roll back to snapshot 5: it changed while the rollback "
                            "was prepared (it is gone); nothing was deleted")
    assert snapshot_ids(table_path) == [8, 9, 10]
    assert_intact(table_path, {i: expected[i] for i in (8, 9, 10)})


# --- finding 4: a dynamic changelog-producer ---------------------------------------------
def pk_table_with_long_lived_changelogs(table_path):
    """A primary-key table (producer none, the default) whose changelogs are kept 50 deep and
    snapshots 2 deep: long-lived changelogs 1..8 read their deltas; snapshots 9..11 (the
    last of them dropping hr=0: files the changelogs read) can expire next."""
    path = str(table_path)
    Table.create(path, make_rows([]).schema, partition_keys=["dt", "hr"], options={
        "snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2",
        "snapshot.time-retained": "1 ms", "changelog.num-retained.min": "50",
        "changelog.num-retained.max": "50", "changelog.time-retained": "1 d",
        "write-only": "true"})
    t = Table.open(path)
    for i in range(10):
        write(t, make_rows([i], hr=i % 2))
    time.sleep(0.01)
    assert t.expire_snapshots().expired_ids == list(range(1, 9))
    with t.new_commit() as c:
        c.drop_partitions([{"hr": 0}])
    write(t, make_rows([10], hr=1))
    write(t, make_rows([11], hr=1))
    time.sleep(0.01)
    # Another engine's ALTER TABLE: a primary key (this library writes no such table).
    old = t.schema
    new = dataclasses.replace(old, id=old.id + 1, primary_keys=("id", "dt", "hr"))
    (table_path / "schema" / f"schema-{new.id}").write_bytes(new.to_json())
    return path


def assert_changelogs_readable(table):
    """Every long-lived changelog's changelog list (or, without one, its delta list), its
    manifests and the files they add exist: what a streaming reader reads."""
    st = table.store
    for c in ChangelogManager(st.io, st.root).snapshots():
        for m in st.manifests.read_list(c.changelog_manifest_list or c.delta_manifest_list):
            for e in st.manifests.read_manifest(m.file_name):
                if e.kind == FileKind.ADD:
                    assert os.path.exists(st.data_file_path(e)), f"changelog {c.id}: {e}"


PK_PRODUCER = ("option 'changelog-producer' = 'input' differs from the table's 'none': the "
               "table's changelogs were written with its own producer, and expiration keeps "
               "the files they read by it (change it for the table, not for one handle)")


def test_a_dynamic_changelog_producer_is_refused_on_a_primary_key_table(table_path):
    """Finding 4: opened with changelog-producer=input, an expiration of a table whose
    changelogs were written with none deleted the delta lists and data files of every
    long-lived changelog."""
    path = pk_table_with_long_lived_changelogs(table_path)
    before = files_under(table_path)
    with pytest.raises(OptionError) as e:
        Table.open(path, options={"changelog-producer": "input"})
    assert str(e.value) == f"opening {path}: {PK_PRODUCER}"
    t = Table.open(path)
    with pytest.raises(OptionError) as e:
        t.new_commit("u", options={"changelog-producer": "input"})
    assert str(e.value) == f"commit options of {path}: {PK_PRODUCER}"
    with pytest.raises(OptionError) as e:
        ExpireSnapshots(t.store, ExpireConfig(changelog_producer="input"))
    assert str(e.value) == f"ExpireSnapshots of {path}: {PK_PRODUCER}"
    assert files_under(table_path) == before
    # The table's own value is no change; the stored handle keeps what the changelogs read.
    assert Table.open(path, options={"changelog-producer": "none"}).latest_snapshot().id == 13
    r = t.expire_snapshots()
    assert r.expired_ids == [9, 10, 11] and r.expired_changelogs == []
    assert sorted(ChangelogManager(t.store.io, t.store.root).list_snapshot_ids()) == \
        list(range(1, 12))
    assert_changelogs_readable(Table.open(path))

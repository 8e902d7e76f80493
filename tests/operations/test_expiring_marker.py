"""An expiration in progress is marked on the storage (expiring.py): a tag is never left on a
snapshot whose data files an expiration deletes, whether that expiration is running (the tag
created between its re-check of the tags and its deletes) or was stopped half-way (its
snapshot files still list readable manifests, some data files are gone). Before, `create_tag`
checked the target's lists only, and its tag did not read; docs/safety.md named it "not
covered". Real directories; what a user sees: the error, the tag files, pypaimon reads."""
import json
import os
import time

import pytest

from conftest import D1, SCHEMA, make_rows
from invariants import assert_intact

from paimon_commit import Table
from paimon_commit.expiring import MARKER_DIR, ExpiringMarkers
from paimon_commit.format.snapshot import Tag
from paimon_commit.io import deletion
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from paimon_commit.operations.tag_ops import TagOperations
from paimon_commit.tags import tag_manager

FAR_FUTURE = lambda: time.time() + 10 * 365 * 86400  # noqa: E731  everything is "old"


class Killed(BaseException):
    """The process dies here (as a kill -9 would: nothing after it runs)."""


def table_with(tmp_path, n=6):
    """n snapshots, each an overwrite of partition hr=0 (so each one's data file is dropped by
    the next: expiring a snapshot deletes its data)."""
    path = str(tmp_path / "wh" / "db.db" / "t")
    t = Table.create(path, SCHEMA, partition_keys=["dt", "hr"])
    for i in range(1, n + 1):
        w = t.new_writer()
        w.write_arrow(make_rows([i], hr=0))
        with t.new_commit() as c:
            c.overwrite(w.prepare_commit(), {"dt": D1, "hr": 0})
    return Table.open(path)


def expire(t, retain_max=2):
    return ExpireSnapshots(t.store, ExpireConfig(retain_max=retain_max, retain_min=retain_max,
                                                 time_retained_ms=0, max_deletes=1000),
                           clock=FAR_FUTURE).expire()


def markers(path):
    d = os.path.join(path, MARKER_DIR)
    return sorted(n for n in os.listdir(d) if n.startswith("expiring-")) \
        if os.path.isdir(d) else []


def tag_files(path):
    d = os.path.join(path, "tag")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def stop_after_data_step(monkeypatch):
    """The expiration dies right before it deletes its first manifest (data files gone)."""
    files = deletion.Deleter.files

    def hooked(self, kind, paths, must_finish=False):
        if kind == "manifest":
            raise Killed()
        return files(self, kind, paths, must_finish)
    monkeypatch.setattr(deletion.Deleter, "files", hooked)


def test_a_finished_expiration_leaves_no_marker(tmp_path):
    t = table_with(tmp_path)
    r = expire(t)
    assert r.expired_ids == [1, 2, 3, 4]
    assert markers(t.store.root) == []
    assert_intact(t.store.root)


def test_create_tag_on_a_snapshot_a_stopped_expiration_half_deleted_is_refused(tmp_path,
                                                                               monkeypatch):
    t = table_with(tmp_path)
    path = t.store.root
    stop_after_data_step(monkeypatch)
    with pytest.raises(Killed):
        expire(t)
    monkeypatch.undo()
    # Snapshot 3 still reads its lists; its data file is gone.
    (m,) = markers(path)
    assert m.startswith("expiring-1-5-")
    snap3 = t.store.snapshots.snapshot(3)
    assert not all(os.path.exists(f.path) for f in t.live_files(3))
    with pytest.raises(ValueError) as e:
        Table.open(path).create_tag("t3", 3)
    assert str(e.value).startswith(
        "cannot create tag 't3' on snapshot 3: an expiration of snapshots 1..4 started at ")
    assert str(e.value).endswith(
        f"has not finished (marker {MARKER_DIR}/{m}), so some of its files may already be "
        f"deleted; the mark stays until a snapshot expiration expires past snapshot 4 (if "
        f"`paimon-commit check` finds snapshot 3 intact, removing the mark by hand lifts "
        f"this). Nothing was changed")
    assert tag_files(path) == []
    # A rollback to it is refused by the marker too, before the data listing.
    with pytest.raises(ValueError, match=r"cannot roll back to snapshot 3: an expiration of "
                                         r"snapshots 1\.\.4 started at "):
        Table.open(path).rollback_to(snapshot_id=3)
    assert Table.open(path).latest_snapshot().id == 6
    # Snapshots the marker does not cover are tagged as before.
    Table.open(path).create_tag("t5", 5)
    assert tag_files(path) == ["tag-t5"]
    assert t.store.snapshots.snapshot(3) == snap3
    # The rerun finishes the range and removes the marker.
    r = expire(Table.open(path))
    assert r.expired_ids == [1, 2, 3, 4]
    assert markers(path) == []
    assert_intact(path)


def test_a_tag_created_between_the_recheck_and_the_deletes_is_taken_back(tmp_path,
                                                                        monkeypatch):
    """The window the re-check cannot close: the tags were read again (none on 3), then
    another process tags snapshot 3, then the expiration deletes 3's files. Before, the tag
    stayed and did not read."""
    t = table_with(tmp_path)
    path = t.store.root
    unchanged = ExpireSnapshots._unchanged
    errors = []

    def hooked(self, plan):
        ok = unchanged(self, plan)
        if ok and not errors:
            try:
                TagOperations(Table.open(path).store).create_tag("late", 3)
                errors.append(None)
            except ValueError as e:
                errors.append(str(e))
        return ok
    monkeypatch.setattr(ExpireSnapshots, "_unchanged", hooked)
    r = expire(t)
    assert r.expired_ids == [1, 2, 3, 4]
    # create_tag takes the maintenance lease, so no other process of ours creates a tag in
    # this window (it waits: test_create_tag_beside_an_expiration_in_its_delete_phase_...);
    # called on the expiration's own thread (a progress callback), it joined the run's
    # lease and, killed after its tag file, left the tag on deleted files (audit issue25aa
    # aa2): refused before anything is written.
    assert errors[0] == (f"cannot create tag 'late': this thread is running expire-snapshots "
                         f"on {path} under its maintenance lease; create the tag outside that "
                         f"run. Nothing was changed")
    assert tag_files(path) == []
    assert markers(path) == []
    assert_intact(path)


def test_a_tag_created_after_the_expiration_finished_on_its_snapshot_is_taken_back(
        tmp_path, monkeypatch):
    """create_tag read snapshot 3, then a whole expiration ran (marker written and removed),
    then the tag file was created: the marker is gone, the snapshot read again is gone."""
    t = table_with(tmp_path)
    path = t.store.root
    from paimon_commit.tags import TagManager
    create = TagManager.create
    ran = []

    def hooked(self, tag):
        if not ran:
            ran.append(expire(Table.open(path)))
        return create(self, tag)
    monkeypatch.setattr(TagManager, "create", hooked)
    with pytest.raises(ValueError) as e:
        Table.open(path).create_tag("late", 3)
    assert str(e.value) == ("cannot create tag 'late' on snapshot 3: it was expired meanwhile; "
                            "nothing was changed")
    assert ran[0].expired_ids == [1, 2, 3, 4]
    assert tag_files(path) == []
    assert_intact(path)


def test_an_expiration_that_sees_the_tag_deletes_nothing_and_removes_its_marker(
        tmp_path, monkeypatch):
    """The tag is created after the marker and before the re-check reads the tags, by an
    engine that knows neither the lease nor the marks (Paimon Java): the expiration's
    re-check sees the tag and stops, deleting nothing and taking its marker back: never a
    tag on deleted files. (This library's create_tag cannot run there: it waits for the
    lease, and on the expiration's own thread it is refused.)"""
    from tablefiles import tag_as_another_engine
    t = table_with(tmp_path)
    path = t.store.root
    write_marker = ExpiringMarkers.write

    def hooked(self, first, end, end_bytes):
        m = write_marker(self, first, end, end_bytes)
        tag_as_another_engine(Table.open(path), "mid", 3)
        return m
    monkeypatch.setattr(ExpiringMarkers, "write", hooked)
    r = expire(t)
    assert r.expired_snapshots == 0 and r.deleted_files == 0
    assert tag_files(path) == ["tag-mid"] and markers(path) == []
    assert_intact(path)


def test_a_refused_recheck_removes_the_marker_it_wrote(tmp_path, monkeypatch):
    """A tag created before the re-check (and before the marker): the expiration stops,
    deleting nothing, and takes back its marker (its snapshots are whole)."""
    t = table_with(tmp_path)
    path = t.store.root
    write_marker = ExpiringMarkers.write

    def hooked(self, first, end, end_bytes):
        # Another process tags 3 just before this marker is written (its own marker check,
        # earlier still, found nothing).
        store = Table.open(path).store
        assert tag_manager(store).create(Tag("early", store.snapshots.snapshot(3)))
        return write_marker(self, first, end, end_bytes)
    monkeypatch.setattr(ExpiringMarkers, "write", hooked)
    r = expire(t)
    assert r.expired_ids == []
    assert any("tag early was created on snapshot 3" in s for s in r.skipped)
    assert markers(path) == []
    assert tag_files(path) == ["tag-early"]
    assert_intact(path)


def test_a_marker_whose_first_kept_snapshot_was_replaced_is_not_in_force(tmp_path):
    """History below the marker's end was rewritten by a tool that knows no marker (its end
    snapshot's bytes differ): the marker says nothing about the new snapshots."""
    t = table_with(tmp_path)
    path = t.store.root
    ms = ExpiringMarkers(t.store.io, path)
    ms.write(1, 5, b"other bytes")
    Table.open(path).create_tag("t3", 3)
    assert tag_files(path) == ["tag-t3"]
    # The same marker naming snapshot 5 as it is: in force.
    five = open(t.store.snapshots.snapshot_path(5), "rb").read()
    ms.write(1, 5, five)
    with pytest.raises(ValueError, match="an expiration of snapshots 1..4"):
        Table.open(path).create_tag("t2", 2)
    assert tag_files(path) == ["tag-t3"]


def test_a_marker_that_does_not_parse_is_in_force(tmp_path):
    t = table_with(tmp_path)
    path = t.store.root
    os.makedirs(os.path.join(path, MARKER_DIR), exist_ok=True)
    name = "expiring-2-4-" + "0" * 32
    with open(os.path.join(path, MARKER_DIR, name), "w") as f:
        f.write("{not json")
    with pytest.raises(ValueError, match=f"an expiration of snapshots 2..3 started at an "
                                         f"unknown time and has not finished \\(marker "
                                         f"{MARKER_DIR}/{name}\\)"):
        Table.open(path).create_tag("t3", 3)
    Table.open(path).create_tag("t4", 4)
    assert tag_files(path) == ["tag-t4"]
    body = json.loads(open(os.path.join(path, MARKER_DIR,
                                        ExpiringMarkers(t.store.io, path).write(
                                            1, 2, None).name)).read())
    assert body["first"] == 1 and body["end"] == 2 and body["endSnapshotSha256"] is None


def test_a_recheck_that_fails_removes_the_marker_it_wrote(tmp_path, monkeypatch):
    """The re-check cannot read something (a storage error): nothing is deleted, and the
    marker goes too (its snapshots are whole)."""
    t = table_with(tmp_path)
    path = t.store.root

    def failing(self, plan):
        raise OSError("the storage failed")
    monkeypatch.setattr(ExpireSnapshots, "_changes", failing)
    with pytest.raises(OSError, match="the storage failed"):
        expire(t)
    assert markers(path) == []
    assert [s.id for s in Table.open(path).snapshots()] == [1, 2, 3, 4, 5, 6]
    Table.open(path).create_tag("t3", 3)
    assert_intact(path)


def _stopped_after_data_step(tmp_path, monkeypatch):
    t = table_with(tmp_path)
    stop_after_data_step(monkeypatch)
    with pytest.raises(Killed):
        expire(t)
    monkeypatch.undo()
    return t.store.root


def test_a_rerun_whose_retention_keeps_the_range_keeps_refusing_on_it(tmp_path, monkeypatch):
    """The run expiring 1..4 stopped after its data step; the next keeps 10 snapshots, so it
    keeps 1..4, whose data files are partly gone (as Paimon's own rerun would). A mark never
    makes a run delete what its retention keeps (three audits found a mark left by a run that
    deleted nothing: finishing it expired intact history); it keeps refusing tags and
    rollbacks on those snapshots until a run expires past its end, which removes it."""
    path = _stopped_after_data_step(tmp_path, monkeypatch)
    assert expire(Table.open(path), retain_max=10).expired_ids == []
    assert len(markers(path)) == 1
    with pytest.raises(ValueError, match="an expiration of snapshots 1..4"):
        Table.open(path).create_tag("t2", 2)
    with pytest.raises(ValueError, match="an expiration of snapshots 1..4"):
        Table.open(path).rollback_to(snapshot_id=4)
    assert expire(Table.open(path), retain_max=2).expired_ids == [1, 2, 3, 4]
    assert markers(path) == []
    assert_intact(path)


def test_a_mark_whose_first_kept_snapshot_was_replaced_forces_nothing(tmp_path):
    t = table_with(tmp_path)
    path = t.store.root
    ExpiringMarkers(t.store.io, path).write(1, 5, b"other bytes")
    r = expire(Table.open(path), retain_max=10)
    assert r.expired_ids == []
    assert_intact(path)


# --- audit issue25l ----------------------------------------------------------------------

def test_an_automatic_tag_is_not_created_on_a_marked_snapshot(tmp_path, monkeypatch):
    """Post-commit automatic tags (tag_lifecycle -> create_tag_into) run under the lease, so
    no expiration of ours runs meanwhile, but a stopped one's mark covers snapshots whose
    files may be gone (l1: the tag was created and did not read)."""
    import types
    from paimon_commit.operations.tag_expire import create_tag_into
    path = _stopped_after_data_step(tmp_path, monkeypatch)
    store = Table.open(path).store
    into = types.SimpleNamespace(skipped=[], errors=[])
    assert not create_tag_into(store, tag_manager(store),
                               Tag("2024-01-01", store.snapshots.snapshot(2)), into)
    assert into.skipped[0].startswith("tag 2024-01-01 not created on snapshot 2: an "
                                      "expiration of snapshots 1..4 started at ")
    assert tag_files(path) == []
    assert create_tag_into(store, tag_manager(store),
                           Tag("2024-01-02", store.snapshots.snapshot(5)), into)
    assert tag_files(path) == ["tag-2024-01-02"]


def test_rollback_to_a_tag_on_a_marked_snapshot_is_refused(tmp_path, monkeypatch):
    """A tag on a snapshot a stopped run's mark covers is no proof that the run kept its
    files (one created in create_tag's window, or by an engine that knows no marks): the
    rollback to it made a snapshot missing a file the latest and deleted the intact newer
    ones (l1b, l3); and it deleted the mark's first kept snapshot, which put the mark out of
    force (l2). Refused now, nothing changed."""
    path = _stopped_after_data_step(tmp_path, monkeypatch)
    t = Table.open(path)
    # What an engine that knows no marks (pypaimon, Java) leaves: a tag on snapshot 2.
    assert tag_manager(t.store).create(Tag("T", t.store.snapshots.snapshot(2)))
    before = sorted(os.listdir(os.path.join(path, "snapshot")))
    with pytest.raises(ValueError, match=r"^cannot roll back to tag 'T': an expiration of "
                                         r"snapshots 1\.\.4 started at "):
        Table.open(path).rollback_to(tag="T")
    assert sorted(os.listdir(os.path.join(path, "snapshot"))) == before
    assert Table.open(path).latest_snapshot().id == 6
    with pytest.raises(ValueError, match="an expiration of snapshots 1..4"):
        Table.open(path).create_tag("x", 1)


def test_marks_of_snapshot_ids_of_nineteen_digits_are_seen(tmp_path):
    """Snapshot ids are Java longs (l6: names were parsed with at most 18 digits, and a mark
    of such ids was not seen)."""
    t = table_with(tmp_path)
    big = 9223372036854775000
    ms = ExpiringMarkers(t.store.io, t.store.root)
    m = ms.write(big, big + 2, None)
    assert [(x.first, x.end) for x in ms.listed()] == [(big, big + 2)]
    assert ms.covering(big + 1, lambda sid: b"x") is not None
    assert m.name.startswith(f"expiring-{big}-{big + 2}-")


def test_a_tag_that_cannot_be_taken_back_is_named_in_the_refusal(tmp_path, monkeypatch):
    """The take-back's delete fails (a store answering 403): the refusal said "Nothing was
    changed" while the tag stayed (l7); it names the tag file and how to remove it."""
    path = _stopped_after_data_step(tmp_path, monkeypatch)
    t = Table.open(path)
    monkeypatch.setattr(t.store.io, "delete_quietly", lambda p: False)
    with pytest.raises(ValueError) as e:
        t.create_tag("x", 1)
    tag_path = os.path.join(path, "tag", "tag-x")
    assert str(e.value).startswith("cannot create tag 'x' on snapshot 1: an expiration of "
                                   "snapshots 1..4 started at ")
    assert "Nothing was changed" not in str(e.value)
    assert str(e.value).endswith(
        f"so some of its files may already be deleted; the mark stays until a snapshot "
        f"expiration expires past snapshot 4 (if `paimon-commit check` finds snapshot 1 "
        f"intact, removing the mark by hand lifts this); the tag file {tag_path} it had "
        f"written could not be taken back (its delete "
        f"failed): the tag may not read; delete_tag('x') removes it")


# --- audit issue25m ----------------------------------------------------------------------

@pytest.mark.parametrize("content", [b"", b"{}", b"{not json"])
def test_a_mark_that_cannot_be_verified_refuses_but_forces_nothing(tmp_path, content):
    """A mark without a digest that matches (empty, no digest, damaged) is in force for a
    refusal (in doubt, refuse) but never makes a run expire what its retention keeps (m1:
    a stray `{}` expired four retained snapshots)."""
    t = table_with(tmp_path)
    path = t.store.root
    os.makedirs(os.path.join(path, MARKER_DIR), exist_ok=True)
    with open(os.path.join(path, MARKER_DIR, "expiring-1-5-" + "a" * 32), "wb") as f:
        f.write(content)
    with pytest.raises(ValueError, match="an expiration of snapshots 1..4"):
        Table.open(path).create_tag("t2", 2)
    r = expire(Table.open(path), retain_max=10)
    assert r.expired_ids == []
    assert [s.id for s in Table.open(path).snapshots()] == [1, 2, 3, 4, 5, 6]


def test_a_run_stopped_before_its_first_delete_takes_its_mark_back(tmp_path, monkeypatch):
    """Ctrl-C (a stop at the next safe point) right after the re-check: nothing is deleted,
    and the mark goes too (m2: it stayed, and the next run expired the intact snapshots its
    own retention keeps)."""
    from paimon_commit.io.deletion import clear_stop, request_stop
    t = table_with(tmp_path)
    path = t.store.root
    changes = ExpireSnapshots._changes

    def then_ctrl_c(self, plan):
        out = changes(self, plan)
        request_stop("interrupted (Ctrl-C)")
        return out
    monkeypatch.setattr(ExpireSnapshots, "_changes", then_ctrl_c)
    try:
        r = expire(t)
    finally:
        clear_stop()
    monkeypatch.undo()
    assert (r.complete, r.expired_ids) == (False, [])
    assert markers(path) == []
    assert expire(Table.open(path), retain_max=10).expired_ids == []
    assert [s.id for s in Table.open(path).snapshots()] == [1, 2, 3, 4, 5, 6]


def test_an_automatic_tag_skipped_on_a_marked_snapshot_lands_on_a_later_one(tmp_path,
                                                                           monkeypatch):
    """The period's automatic tag is not lost when the first snapshot the tagger looks at is
    marked (m3: the tagger moved on to the next period, and the period had no tag)."""
    path = _stopped_after_data_step(tmp_path, monkeypatch)
    sd = os.path.join(path, "schema")
    last = os.path.join(sd, max(os.listdir(sd), key=lambda n: int(n.split("-")[1])))
    doc = json.load(open(last))
    doc.setdefault("options", {}).update({"tag.automatic-creation": "process-time",
                                          "tag.creation-period": "daily"})
    with open(last, "w") as f:
        json.dump(doc, f)
    t = Table.open(path)
    with t.new_commit() as c:   # one streaming writer: its tagger lives across commits
        for i in (7, 8):
            w = t.new_writer()
            w.write_arrow(make_rows([i], hr=1))
            c.commit(w.prepare_commit())
    tags = Table.open(path).tags()
    assert len(tags) == 1 and tags[0].snapshot.id >= 5, tags
    assert_intact(path, min_snapshot=5)   # (1..4: the stopped run's, for the next run)


@pytest.mark.parametrize("completion", [False, True])
def test_a_retried_automatic_tag_is_named_as_paimon_names_it(tmp_path, completion):
    """Hourly tags; a stopped run's mark covers snapshots 1 (09:10), 2 (10:10), 3 (10:40);
    the first the tagger may tag is 4 (11:10). It is tagged as if 1..3 were not there: hour
    10, its own previous hour, as Paimon names it, with or without tag.automatic-completion.
    Never a tag named for an hour before its data's (audit 25n n4 asked for hour 09 on
    snapshot 4: a tag of 09 holding 11:10's data)."""
    import datetime
    from paimon_commit.operations.tag_expire import local_time
    from paimon_commit.operations.tag_lifecycle import TagAutoCreation, TagLifecycleConfig
    from paimon_commit.options import validate_options
    opts = {"tag.automatic-creation": "process-time", "tag.creation-period": "hourly"}
    if completion:
        opts["tag.automatic-completion"] = "true"
    cfg = TagLifecycleConfig.from_options(validate_options(opts))
    day = datetime.datetime(2026, 1, 5)
    times = {1: (9, 10), 2: (10, 10), 3: (10, 40), 4: (11, 10), 5: (11, 20)}
    t = table_with(tmp_path, n=5)
    path = t.store.root
    for sid, (h, m) in times.items():
        p = os.path.join(path, "snapshot", f"snapshot-{sid}")
        doc = json.load(open(p))
        doc["timeMillis"] = int(day.replace(hour=h, minute=m).timestamp() * 1000)
        assert local_time(doc["timeMillis"]).hour == h
        with open(p, "w") as f:
            json.dump(doc, f)
    store = Table.open(path).store
    ExpiringMarkers(store.io, path).write(
        1, 4, open(os.path.join(path, "snapshot", "snapshot-4"), "rb").read())
    r = TagAutoCreation(Table.open(path).store, cfg).run()
    tags = {x.name: x.snapshot.id for x in Table.open(path).tags()}
    # (completion fills periods after the first tag; a fresh tagger has none yet)
    assert tags == {"2026-01-05 10": 4}, (tags, r.skipped)


# --- audit issue25o ----------------------------------------------------------------------

def _returns_within(fn, seconds, unblock):
    """fn()'s outcome ("ok" or its exception), or "hung" if it had not returned after
    `seconds` (then `unblock()` lets it finish, so that the test itself never hangs)."""
    import threading
    out = []

    def run():
        try:
            fn()
            out.append("ok")
        except Exception as e:  # noqa: BLE001 - the outcome is the test's subject
            out.append(e)
    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(seconds)
    if th.is_alive():
        unblock()
        th.join(30)
        return "hung"
    return out[0]


def test_a_fifo_named_like_a_mark_refuses_and_never_hangs(tmp_path):
    # Audit issue25o b4: a mark was read with a plain read, which a FIFO never answers; the
    # lease records beside it are lstat()ed first. Now: in doubt, a mark in force.
    import uuid
    t = table_with(tmp_path)
    d = os.path.join(t.path, MARKER_DIR)
    os.makedirs(d, exist_ok=True)
    fifo = os.path.join(d, f"expiring-1-5-{uuid.uuid4().hex}")
    os.mkfifo(fifo)

    def unblock():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    for fn in (lambda: Table.open(t.path).create_tag("t3", 3),
               lambda: Table.open(t.path).rollback_to(3)):
        outcome = _returns_within(fn, 10, unblock)
        assert isinstance(outcome, ValueError), outcome
        assert "has not finished (marker " in str(outcome) and "Nothing was changed" in \
            str(outcome)
    assert tag_files(t.path) == []
    assert [s.id for s in Table.open(t.path).snapshots()] == [1, 2, 3, 4, 5, 6]


# --- audit issue25v ----------------------------------------------------------------------

def test_a_huge_mark_is_in_force_unread_and_never_fails_a_published_commit(tmp_path, caplog):
    # v1: read whole, a sparse terabyte raised MemoryError out of create_tag, and out of an
    # automatic tag's check in a commit that had published.
    import uuid
    t = table_with(tmp_path)
    d = os.path.join(t.path, MARKER_DIR)
    os.makedirs(d, exist_ok=True)
    huge = os.path.join(d, f"expiring-1-6-{uuid.uuid4().hex}")   # snapshot 6 exists: in force
    later = os.path.join(d, f"expiring-1-8-{uuid.uuid4().hex}")  # covers 7, the commit's next
    for p in (huge, later):
        with open(p, "wb") as f:
            f.truncate(1 << 40)
    with pytest.raises(ValueError, match=r"an expiration of snapshots 1\.\.5 started at an "
                                         r"unknown time and has not finished \(marker "):
        Table.open(t.path).create_tag("t3", 3)
    assert f"{huge} is too large to be an expiring marker (1099511627776 bytes); treated as " \
           f"in force: remove it by hand once no expiration runs" in caplog.text
    # A batch commit whose automatic tag lands on snapshot 7: the mark covering it is looked
    # at (not in force: snapshot 8 does not exist), never read whole.
    t = Table.open(t.path)
    with t.new_commit(options={"tag.automatic-creation": "batch"}) as c:
        w = t.new_writer()
        w.write_arrow(make_rows([7], hr=1))
        c.commit(w.prepare_commit())
    assert [s.id for s in Table.open(t.path).snapshots()] == [1, 2, 3, 4, 5, 6, 7]
    assert len(tag_files(t.path)) == 1
    assert f"{later} is too large to be an expiring marker" in caplog.text
    assert os.path.getsize(huge) == os.path.getsize(later) == 1 << 40


def test_a_directory_named_like_a_mark_never_fails_a_published_commit(tmp_path, caplog):
    # v2: once an expiration passed its range, removing it as a stale mark raised
    # UnsafePathError ("refusing to delete directory") out of every later post-commit
    # expiration: published commits failed, and the run's own mark (listed after it) stayed.
    t = table_with(tmp_path)
    d = os.path.join(t.path, MARKER_DIR)
    os.makedirs(d, exist_ok=True)
    directory = os.path.join(d, "expiring-1-3-" + "0" * 32)
    os.mkdir(directory)
    opts = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
            "snapshot.time-retained": "1 ms"}
    for i in (7, 8):
        t = Table.open(t.path)
        with t.new_commit(options=opts) as c:
            w = t.new_writer()
            w.write_arrow(make_rows([i], hr=1))
            c.commit(w.prepare_commit())
        assert [s.id for s in Table.open(t.path).snapshots()] == [i]
    assert markers(t.path) == ["expiring-1-3-" + "0" * 32]   # the run's own mark: removed
    assert os.path.isdir(directory)
    assert f"{directory} is named like an expiring marker but is a directory: not removed; " \
           f"remove it by hand. While snapshot 3 exists it refuses tags and rollbacks on " \
           f"snapshots 1..2" in caplog.text
    r = expire(Table.open(t.path), retain_max=1)   # an explicit run: no error either
    assert markers(t.path) == ["expiring-1-3-" + "0" * 32]


def test_create_tag_beside_an_expiration_in_its_delete_phase_waits_for_the_lease(
        tmp_path, monkeypatch):
    """Audit issue25l l5: an expiration re-checked the tags (none on 3) and goes on to delete
    3's files; another process's create_tag writes its tag on 3 and is killed before it lists
    the marks (nothing takes the tag back). Before, the tag stayed on a snapshot whose files
    the expiration deleted: a tag that did not read. create_tag now takes the maintenance
    lease, so it waits for the expiration (here past its wait: refused, nothing written)."""
    import threading

    from paimon_commit.errors import LeaseHeldError
    from paimon_commit.lease import lease_settings
    t = table_with(tmp_path)
    path = t.store.root
    unchanged = ExpireSnapshots._unchanged
    rechecked, go = threading.Event(), threading.Event()

    def hooked(self, plan):
        ok = unchanged(self, plan)
        rechecked.set()
        go.wait(30)
        return ok
    monkeypatch.setattr(ExpireSnapshots, "_unchanged", hooked)

    def killed(self, snap, what):
        raise Killed()   # dies between its tag file and the marks' listing
    monkeypatch.setattr(TagOperations, "_check_not_expiring", killed)
    monkeypatch.setattr(TagOperations, "_take_back", lambda self, tag: None)
    results = []
    runner = threading.Thread(target=lambda: results.append(expire(t)))
    runner.start()
    assert rechecked.wait(30)
    try:
        with lease_settings(wait_s=0.5):
            with pytest.raises(LeaseHeldError):
                TagOperations(Table.open(path).store).create_tag("late", 3)
    finally:
        go.set()
        runner.join(60)
    assert results and results[0].expired_ids == [1, 2, 3, 4]
    assert tag_files(path) == []
    assert_intact(path)


def test_a_second_identical_create_tag_refused_by_a_mark_keeps_the_first_callers_tag(
        tmp_path, monkeypatch):
    """Audit issue25aa aa7: tag X on 3 (no retention: its bytes are the snapshot's); an
    expiration stops after its data step, its mark covering 3 (X keeps 3's files). The same
    create_tag("X", 3) again (a retried job): its create found the very bytes it would write,
    counted them as its own lost reply, was refused by the mark and took the tag back -
    deleting the first caller's tag, whose rows the next expiration then removed."""
    t = table_with(tmp_path)
    path = t.store.root
    Table.open(path).create_tag("X", 3)
    rows = sorted(Table.open(path).read_arrow(tag="X").column("id").to_pylist())
    stop_after_data_step(monkeypatch)
    with pytest.raises(Killed):
        expire(t)
    monkeypatch.undo()
    assert markers(path)
    with pytest.raises(ValueError, match=r"^tag 'X' already exists$"):
        Table.open(path).create_tag("X", 3)
    assert tag_files(path) == ["tag-X"]
    expire(Table.open(path))
    assert sorted(Table.open(path).read_arrow(tag="X").column("id").to_pylist()) == rows
    assert_intact(path)

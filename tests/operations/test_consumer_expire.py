"""Consumer expiration (issue 25 a3). A reader (Flink, Java: they never take the maintenance
lease) that advances its consumer after expiration listed the consumers is alive: its file is
looked at again (status and bytes) right before its removal and kept, and snapshot
expiration still stops at its position. A lost lease stops consumer expiration like every
other operation: its result, and the `maintain` table it is part of, say incomplete.

The reader's write runs for real (through another handle) right between the listing and the
removals; the checks are the consumer files on disk, the snapshots left and the results."""
import json
import os
import time

from conftest import SCHEMA, make_rows, write
from invariants import assert_intact

from paimon_commit import Table
from paimon_commit.io.local import LocalFileIO
from paimon_commit.lease import lease_manager
from paimon_commit.tags import ConsumerManager
from paimon_commit.warehouse import maintain_table

IDLE = 2 * 3600   # seconds a dead reader has not written its consumer
EXPIRE_NOW = {"consumer.expiration-time": "1 h", "snapshot.num-retained.min": "1",
              "snapshot.num-retained.max": "1", "snapshot.time-retained": "1 ms"}


def consumer_file(path, cid):
    return os.path.join(str(path), "consumer", f"consumer-{cid}")


def idle_consumers(table, table_path, positions):
    cm = ConsumerManager(table.store.io, table.store.root)
    idle = time.time() - IDLE
    for cid, next_snapshot in positions.items():
        cm.write(cid, next_snapshot)
        os.utime(consumer_file(table_path, cid), (idle, idle))


def on_first_consumer_delete(monkeypatch, action):
    """Run `action(cid being removed)` once, right before the first consumer file is removed
    (after expiration listed them all)."""
    delete, done = LocalFileIO.delete_quietly, []

    def hooked(self, path):
        if "/consumer/consumer-" in path and not done:
            done.append(path.rsplit("consumer-", 1)[1])
            action(done[0])
        return delete(self, path)
    monkeypatch.setattr(LocalFileIO, "delete_quietly", hooked)
    return done


def test_a_consumer_its_reader_advanced_after_the_listing_is_kept_and_caps_expiration(
        table, table_path, monkeypatch):
    for i in range(1, 7):
        write(table, make_rows([i]))
    idle_consumers(table, table_path, {"reader-a": 2, "reader-b": 2})
    reader = ConsumerManager(Table.open(str(table_path)).store.io, table.store.root)
    alive = []

    def the_other_reader_advances(removed):   # (listing order decides who goes first)
        alive.append("reader-b" if removed == "reader-a" else "reader-a")
        reader.write(alive[0], 4)
    removed = on_first_consumer_delete(monkeypatch, the_other_reader_advances)
    with table.new_commit(options=EXPIRE_NOW) as c:   # post-commit maintenance
        write(table, make_rows([7]), commit=c)
        m = c.last_maintenance
    assert m.consumers_expired == removed and m.consumers_expired.complete
    assert m.consumers_expired.kept == [
        f"consumer {alive[0]} kept: its reader wrote it again since the listing"]
    assert sorted(os.listdir(table_path / "consumer")) == [f"consumer-{alive[0]}"]
    with open(consumer_file(table_path, alive[0])) as f:
        assert json.load(f) == {"nextSnapshot": 4}
    # Snapshot expiration, the next step, stops at the surviving reader's position.
    assert [s.id for s in table.snapshots()] == [4, 5, 6, 7]
    assert_intact(table_path)


def test_a_consumer_rewritten_with_another_position_in_the_same_millisecond_is_kept(
        table, table_path, monkeypatch):
    write(table, make_rows([1]))
    idle_consumers(table, table_path, {"reader-a": 1, "reader-b": 1})
    alive = []

    def rewritten_with_its_old_time(removed):
        # A store with coarse times (or a clock behind): the status alone does not tell.
        alive.append("reader-b" if removed == "reader-a" else "reader-a")
        p = consumer_file(table_path, alive[0])
        st = os.stat(p)
        with open(p, "w") as f:
            f.write(json.dumps({"nextSnapshot": 2}))
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    removed = on_first_consumer_delete(monkeypatch, rewritten_with_its_old_time)
    r = ConsumerManager(table.store.io, table.store.root).expire(
        int((time.time() - 3600) * 1000))
    assert r == removed and r.complete
    assert r.kept == [f"consumer {alive[0]} kept: its position changed since the listing"]
    assert [c.next_snapshot for c in table.consumers()] == [2]


def test_consumer_expiration_stopped_by_a_lost_lease_is_incomplete(
        table, table_path, monkeypatch):
    write(table, make_rows([1]))
    other = Table.open(str(table_path))
    idle_consumers(table, table_path, {"reader-a": 1, "reader-b": 1, "reader-c": 1})
    removed = on_first_consumer_delete(
        monkeypatch, lambda cid: lease_manager(other.store).break_lease())
    r = ConsumerManager(table.store.io, table.store.root).expire(
        int((time.time() - 3600) * 1000), lease=lease_manager(table.store))
    assert r == removed and len(os.listdir(table_path / "consumer")) == 2
    assert not r.complete and r.stopped_by == "lease"
    assert r.message.startswith("stopped before removing a consumer: lost the maintenance "
                                "lease") and r.message.endswith(
        "; removed 1 consumer(s); a rerun continues")


def test_maintain_reports_a_consumer_expiration_the_lease_stopped_as_incomplete(
        tmp_path, monkeypatch):
    path = tmp_path / "wh" / "db.db" / "t"
    t = Table.create(str(path), SCHEMA, ["dt", "hr"], EXPIRE_NOW)
    with t.new_commit(options={"write-only": "true"}) as c:
        for i in range(1, 4):
            write(t, make_rows([i]), commit=c, identifier=i)
    idle_consumers(t, path, {"reader-a": 1, "reader-b": 1})
    other = Table.open(str(path))
    on_first_consumer_delete(monkeypatch, lambda cid: lease_manager(other.store).break_lease())
    r = maintain_table(str(path))
    assert (r.status, r.stopped_by) == ("incomplete", "lease"), r.reason
    assert r.reason.startswith("consumer expiration: stopped before removing a consumer: "
                               "lost the maintenance lease")
    assert len(r.consumers_expired) == 1 and len(os.listdir(path / "consumer")) == 1
    assert [s.id for s in t.snapshots()] == [1, 2, 3]      # nothing after the stop ran

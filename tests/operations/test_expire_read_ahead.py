"""Expiration on an object store keeps several metadata reads in flight (issue 26, item 4:
"requests in flight adapt to the store"): the snapshot files, manifest lists and manifests its
plan reads go through io/read_ahead.py, and what it expires and deletes, what it skips and how
many reads it makes are those of a serial run (read_concurrency 1, as on local storage).

Two copies of one table on in-memory object stores (obstore MemoryStore behind the S3
FileIO), one read serially, one with the store's reads in flight; each read waits a little, so
that reads made ahead overlap."""
import threading
import time

import obstore
import pyarrow as pa
import pytest
from obstore.store import MemoryStore

from paimon_commit import Table
from paimon_commit.io.object_store import ObjectStoreFileIO
from paimon_commit.operations import expire as expire_mod
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots
from tests.chunks import note_chunks

PREFIX = "db.db/t"
URI = f"s3://bucket/{PREFIX}"


class CountingIO(ObjectStoreFileIO):
    """The S3 FileIO on a memory store, counting its GETs and the most in flight at once."""

    def __init__(self, store, serial: bool = False):
        super().__init__(store, "s3", "bucket", PREFIX, "a memory store")
        if serial:
            self.read_concurrency = 1
        self._lock = threading.Lock()
        self.now = self.most = 0
        self.reads = []

    def _get_whole(self, path):
        # (every GET of a whole object, read_bytes' and read_bytes_versioned's: the reads
        # keep their ETags, as on a real store)
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.reads.append(path)
        try:
            time.sleep(0.003)
            return super()._get_whole(path)
        finally:
            with self._lock:
                self.now -= 1


def rows(i, partitions=3):
    n = partitions * 4
    return pa.table({"id": pa.array(range(i * n, (i + 1) * n), pa.int64()),
                     "p": pa.array([j % partitions for j in range(n)], pa.int32())})


def build(store):
    io = ObjectStoreFileIO(store, "s3", "bucket", PREFIX, "a memory store")
    t = Table.create(URI, rows(0).schema, ["p"], file_io=io, options={"write-only": "true"})

    def append(i):
        with t.new_commit(options={"write-only": "true"}) as c:
            w = t.new_writer()
            w.write_arrow(rows(i))
            c.commit(w.prepare_commit())
    for i in range(8):
        append(i)
    t.create_tag("early", 3)     # (its live files are protected: read through live_files)
    t.compact()                  # (DELETE entries: files the expiration deletes)
    for i in range(8, 14):
        append(i)
    return t


def keys(store):
    return sorted(o["path"] for batch in obstore.list(store) for o in batch)


def copy(src):
    dst = MemoryStore()
    for k in keys(src):
        obstore.put(dst, k, bytes(obstore.get(src, k).bytes()))
    return dst


def expire(store, serial, **config):
    io = CountingIO(store, serial)
    t = Table.open(URI, file_io=io)   # (a fresh store: nothing of the build cached)
    r = ExpireSnapshots(t.store, ExpireConfig(retain_min=3, retain_max=3, time_retained_ms=0,
                                              max_deletes=1 << 30, **config)).expire()
    return io, r


def damage_delta(store, sid):
    """Overwrite snapshot `sid`'s delta manifest list with bytes that do not decode."""
    t = Table.open(URI, file_io=ObjectStoreFileIO(store, "s3", "bucket", PREFIX, "m"))
    name = t.store.snapshots.snapshot(sid).delta_manifest_list
    obstore.put(store, f"{PREFIX}/manifest/{name}", b"not a manifest list")


# Changelogs kept longer than snapshots: the expiring snapshots become long-lived changelogs,
# those beyond their retention expire in the same run (their files read ahead too).
CHANGELOGS = dict(changelog_retain_min=3, changelog_retain_max=6, changelog_time_retained_ms=0)


@pytest.mark.parametrize("damaged,chunk,config", [
    (None, None, {}), (4, None, {}), (None, (3, 1), {}), (4, (3, 1), {}),
    (None, (3, 10 ** 6), {}), (None, (3, 40), {}), (4, (3, 40), {}),
    (None, None, CHANGELOGS)],
    ids=["whole", "unreadable-delta", "chunks", "chunks-unreadable", "first-chunk-sized-whole",
         "first-chunk-sized-part", "first-chunk-sized-unreadable", "changelogs"])
def test_expiration_reads_in_flight_and_plans_as_a_serial_run(damaged, chunk, config,
                                                              monkeypatch):
    if chunk is not None:   # (chunks: later deltas read for their DELETEs only, ReAdds)
        monkeypatch.setattr(expire_mod, "FIRST_CHUNK", chunk[0])
        monkeypatch.setattr(expire_mod, "CHUNK_FILES", chunk[1])
        # (the first chunk sized by its delta lists' counts, read ahead two at a time: a
        # list read ahead is one the serial run reads too)
        monkeypatch.setattr(expire_mod, "FIRST_LIMIT_WAVE", 2)
    serial_store = MemoryStore()
    build(serial_store)
    if damaged is not None:
        damage_delta(serial_store, damaged)
    ahead_store = copy(serial_store)
    assert keys(ahead_store) == keys(serial_store)

    chunks = note_chunks(monkeypatch)   # the snapshots each chunk expires
    serial_io, serial = expire(serial_store, serial=True, **config)
    serial_chunks, chunks[:] = list(chunks), []
    ahead_io, ahead = expire(ahead_store, serial=False, **config)
    assert chunks == serial_chunks
    if chunk == (3, 10 ** 6):
        assert chunks[0] == serial.expired_snapshots   # one chunk (not 3 snapshots first)
    elif chunk == (3, 40) and damaged is None:
        assert 3 < chunks[0] < serial.expired_snapshots

    assert serial_io.most == 1
    assert ahead_io.most > 1, "no read made ahead on an object store"
    assert serial.expired_snapshots > 5
    # The same plan and the same deletes, the same reads (none more), the same report.
    assert ahead.expired_ids == serial.expired_ids
    assert ahead.expired_changelogs == serial.expired_changelogs
    assert bool(serial.expired_changelogs) == bool(config)
    assert sorted(ahead.deleted_paths) == sorted(serial.deleted_paths)
    assert ahead.skipped == serial.skipped
    assert sorted(ahead_io.reads) == sorted(serial_io.reads)
    assert keys(ahead_store) == keys(serial_store)
    if damaged is not None:
        assert any(f"delta of snapshot {damaged} is unreadable" in s for s in serial.skipped)
    # What is left reads the same.
    for store in (serial_store, ahead_store):
        t = Table.open(URI, file_io=ObjectStoreFileIO(store, "s3", "bucket", PREFIX, "m"))
        assert t.read_arrow().num_rows == 14 * 12


def test_local_storage_stays_serial(tmp_path):
    from paimon_commit.io.local import LocalFileIO
    from paimon_commit.io import read_ahead
    from paimon_commit.reachability import Reachability
    t = Table.create(str(tmp_path / "t"), rows(0).schema, ["p"])
    assert read_ahead.concurrency_of(t.store.io) == 1
    assert isinstance(t.store.io, LocalFileIO)
    assert Reachability(t.store).reads == 1

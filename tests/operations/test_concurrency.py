"""Concurrent writers in separate processes on one table."""
import multiprocessing as mp
import os

from conftest import D1, make_rows
from oracle import pp_read, rows

from paimon_commit import Table

RETRY = {"commit.max-retries": "50", "commit.min-retry-wait": "2 ms",
         "commit.max-retry-wait": "200 ms"}


def _appender(path, proc, n, hr, out):
    t = Table.open(path)
    log = []
    with t.new_commit(commit_user=f"writer-{proc}", options=RETRY) as c:
        for i in range(n):
            ids = [proc * 1000 + i]
            w = t.new_writer()
            w.write_arrow(make_rows(ids, hr=hr))
            sid = c.commit(w.prepare_commit(), i + 1)
            log.append((sid, "append", hr, ids))
    out.put(log)


def _overwriter(path, n, hr, out):
    t = Table.open(path)
    log = []
    with t.new_commit(commit_user="overwriter", options=RETRY) as c:
        for i in range(n):
            ids = [900_000 + i * 10, 900_001 + i * 10]
            w = t.new_writer()
            w.write_arrow(make_rows(ids, hr=hr))
            sid = c.overwrite(w.prepare_commit(), commit_identifier=i + 1)
            log.append((sid, "overwrite", hr, ids))
    out.put(log)


def _run(procs, out):
    for p in procs:
        p.start()
    logs = [out.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return [e for log in logs for e in log]


def test_four_processes_commit_100_snapshots_without_loss(table, table_path):
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_appender, args=(str(table_path), p, 25, p, out))
             for p in range(4)]
    events = _run(procs, out)
    sids = sorted(e[0] for e in events)
    assert sids == list(range(1, 101))
    assert [s.id for s in table.snapshots()] == list(range(1, 101))
    got = [r["id"] for r in rows(pp_read(table_path))]
    assert got == sorted(p * 1000 + i for p in range(4) for i in range(25))
    # Every published snapshot wrote exactly two lists: lost attempts left nothing behind.
    lists = [n for n in os.listdir(table_path / "manifest") if n.startswith("manifest-list-")]
    assert len(lists) == 200


def test_overwrite_racing_appends_replaces_what_was_live_when_it_published(table, table_path):
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_appender, args=(str(table_path), 1, 15, 1, out)),
             ctx.Process(target=_appender, args=(str(table_path), 2, 15, 2, out)),
             ctx.Process(target=_overwriter, args=(str(table_path), 3, 1, out))]
    events = sorted(_run(procs, out))
    assert [e[0] for e in events] == list(range(1, 34))
    # Replay in snapshot order: an overwrite removes everything live in its partition.
    live = {}
    for sid, kind, hr, ids in events:
        if kind == "overwrite":
            live = {i: h for i, h in live.items() if h != hr}
        live.update({i: hr for i in ids})
        assert table.snapshot(sid).commit_kind == ("OVERWRITE" if kind == "overwrite"
                                                   else "APPEND")
        got = sorted(r["id"] for r in pp_read(table_path, snapshot_id=sid).to_pylist())
        assert got == sorted(live), f"snapshot {sid}"

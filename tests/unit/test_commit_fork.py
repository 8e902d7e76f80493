"""A child forked while another thread of its parent commits does not wait on that commit
(paimon_commit/operations/commit_record.py; audit issue25c c2).

A commit call claims its files (IN_FLIGHT) so that a repeat racing it in this process waits
for it. Only the forking thread survives a fork, but the claims of the parent's other threads
were copied into the child, where nothing would ever release them: the child's commit of the
same files (its own retry: another process, screened as any other process is) waited for
ever. Likewise a lock of the commit record held by another thread at the fork. What a user
notices: the child's commit returns a snapshot id instead of hanging."""
import os
import threading

import pytest
from conftest import make_rows
from forking import in_child

from paimon_commit.operations import commit as commit_mod
from paimon_commit.operations import commit_record

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _messages(table, ids):
    w = table.new_writer()
    w.write_arrow(make_rows(ids))
    return w.prepare_commit()


def _commit(table, msgs, identifier):
    with table.new_commit(commit_user="job") as c:
        return c.commit(msgs, identifier)


def test_a_child_forked_during_a_commit_of_another_thread_commits_the_same_files(
        table, monkeypatch):
    msgs = _messages(table, [1, 2])
    inside, go_on = threading.Event(), threading.Event()
    screened_run = commit_mod.FileStoreCommit._screened_run

    def paused(self, *a, **k):   # the parent's commit, holding its claim, is paused here
        if threading.current_thread().name == "parent-commit":
            inside.set()
            go_on.wait(60)
        return screened_run(self, *a, **k)
    monkeypatch.setattr(commit_mod.FileStoreCommit, "_screened_run", paused)
    parent = threading.Thread(target=lambda: _commit(table, msgs, 1), name="parent-commit",
                              daemon=True)
    parent.start()
    try:
        assert inside.wait(30)
        out = in_child(lambda: _commit(table, msgs, 1))
    finally:
        go_on.set()
        parent.join(60)
    assert out == 1, out            # the child committed (snapshot 1), not "hung"
    assert not parent.is_alive()


def test_a_child_forked_while_another_thread_updates_the_commit_record_commits(table):
    msgs = _messages(table, [1])
    held, go_on = threading.Event(), threading.Event()

    def recording():   # a thread of the parent inside the commit record at the fork
        with commit_record.RECORD._lock:
            held.set()
            go_on.wait(60)
    t = threading.Thread(target=recording, daemon=True)
    t.start()
    try:
        assert held.wait(30)
        out = in_child(lambda: _commit(table, msgs, 1))
    finally:
        go_on.set()
        t.join(60)
    assert out == 1, out

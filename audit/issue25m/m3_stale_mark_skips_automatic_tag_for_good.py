"""An automatic tag (post-commit tag.automatic-creation) is skipped on a snapshot a mark covers
(create_tag_into returns False) and the tagger moves on to the next period anyway
(tag_lifecycle._maybe_tag sets `_next_tag` whatever the outcome): the period's tag is never
created, on that snapshot or another. With the mark of a run that deleted nothing (m2: stopped
before its first delete) the snapshot was intact: the same post-commit maintenance then
force-expires it (`_doomed_end`). Control: the same table without the stopped run gets the
automatic tag on snapshot 1. (A writer that opens a new commit object per commit starts
its tagger afresh from the earliest snapshot and tags a later one; a streaming writer that
keeps its commit object does not.)"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa
from paimon_commit.io import deletion
from paimon_commit.operations import expire as expire_mod
from paimon_commit.operations.tag_ops import tag_manager


def scenario(name, stop_an_expiration):
    t = new_table(name, KEEP)
    root = t.store.root
    for i in range(4):
        write(Table.open(root), 10 * i)                 # snapshots 1..4
    if stop_an_expiration:
        orig = expire_mod.ExpireSnapshots._changes

        def changes_then_ctrl_c(self, plan):
            out = orig(self, plan)
            deletion.request_stop("interrupted (Ctrl-C)")
            return out
        expire_mod.ExpireSnapshots._changes = changes_then_ctrl_c
        try:
            expirer(Table.open(root), 2).expire()       # plans 1..2, stopped, deletes nothing
        finally:
            expire_mod.ExpireSnapshots._changes = orig
            deletion.clear_stop()
    edit_schema_options(root, **{"tag.automatic-creation": "process-time",
                                 "tag.creation-period": "daily"})
    tbl = Table.open(root)
    with tbl.new_commit(commit_user="u") as c:          # one streaming writer, two commits
        for start in (100, 110):                        # 5, 6: post-commit tags + expiration
            w = tbl.new_writer()
            w.write_arrow(pa.table({"id": [start], "v": ["x"]}, schema=SCHEMA))
            c.commit(w.prepare_commit())
    tags = {tg.name: tg.id for tg in tag_manager(Table.open(root).store).tags()}
    print(f"{name}: marks {markers(root)}; snapshots {snapshot_ids(root)}; tags {tags}")
    return tags


control = scenario("control", False)
stopped = scenario("stopped", True)
if control and not stopped:
    print(f"FINDING: after an expiration stopped before any delete, the automatic tag "
          f"{sorted(control)} is never created (skipped on intact snapshot 1, which is then "
          f"force-expired)")
else:
    print("OK: the automatic tag is created in both cases" if stopped
          else "OK?: no automatic tag in the control either (scenario does not apply)")

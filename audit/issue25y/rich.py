"""The rich table of y1/y2: a table with a changelog producer (changelog files on every
commit), decoupled changelog retention, tags, two branches (one from a tag, with its tag;
one from a snapshot), a compaction, an index manifest + statistics file and a consumer."""
import json
import os

from common import (fresh, prepared, Table, set_producer, make_branch, add_changelog,
                    add_index_and_statistics)

OPTS = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3",
        "changelog.num-retained.max": "5", "write-only": "true"}


def commit(t, ids):
    with t.new_commit(commit_user="w") as c:
        return c.commit(prepared(t, ids))


def build():
    path, t = fresh(OPTS)
    set_producer(path)
    t = Table.open(path)
    for i in (10, 20):
        sid = commit(t, [i])
        add_changelog(t, sid)
    t.create_tag("T2", 2)
    make_branch(path, "b", os.path.join(path, "tag", "tag-T2"), 2, tags_from=["T2"])
    sid = commit(t, [30])
    add_changelog(t, sid)
    t.compact()                                            # 4
    sid = commit(t, [50])                                  # 5
    add_changelog(t, sid)
    t.create_tag("T5", 5)
    make_branch(path, "c", os.path.join(path, "snapshot", "snapshot-5"), 5)
    sid = commit(t, [60])                                  # 6
    add_changelog(t, sid)
    add_index_and_statistics(t, sid, ["index-dv-6"], "stat-6")
    sid = commit(t, [70])                                  # 7
    add_changelog(t, sid)
    os.makedirs(os.path.join(path, "consumer"), exist_ok=True)
    with open(os.path.join(path, "consumer", "consumer-c1"), "w") as f:
        json.dump({"nextSnapshot": 6}, f)
    for i in (80, 90, 100):
        sid = commit(t, [i])
        add_changelog(t, sid)
    return path


if __name__ == "__main__":
    from common import state
    p = build()
    for k, v in state(p).items():
        print(k, v)

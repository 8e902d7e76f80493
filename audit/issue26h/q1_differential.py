"""Q1: does the sized first chunk (FIRST_CHUNK_FILES=None) ever expire or delete something the
fixed first chunk (FIRST_CHUNK_FILES=0, the old behaviour) does not?

Each scenario is run on three copies of one table: the parent commit's code path ("old":
`_first_limit` returning 0 unread), FIRST_CHUNK_FILES=0 (the suite's fixed first chunk) and
the new sized first chunk (FIRST_CHUNK=3,
CHUNK_FILES=60: the new first chunk is sized from the deltas, the old one is 3 snapshots),
rerun until a run expires nothing. Compared: expired ids, deleted paths, the final file set,
the error raised (if any). Also checked: the new first chunk really was larger (the feature is
exercised), every retained snapshot/tag reads (tests/invariants.assert_intact).

Prints one line per scenario; exits 1 on any difference.
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ExpireConfig, chunk_log, clone, run_until_done, sizes)  # noqa: E402

from benchmarks.scale_tables import build_overwrite_table  # noqa: E402
from conftest import make_rows, write, D1  # noqa: E402
from invariants import assert_intact  # noqa: E402
from operations.test_changelog import (add_changelog, add_index_and_statistics,  # noqa: E402
                                       rewrite_snapshot)
from paimon_commit import Table  # noqa: E402
from paimon_commit.tags import ConsumerManager  # noqa: E402

SNAPS = 60
FAR = lambda: time.time() + 10 * 365 * 86400  # noqa: E731


def overwrite_template(base, changelog=False):
    path = os.path.join(base, "tpl-ov" + ("-cl" if changelog else ""), "db.db", "t")
    build_overwrite_table(path, SNAPS * 2, 2)
    t = Table.open(path)
    for sid in range(1, SNAPS + 1):
        add_index_and_statistics(t, sid, [f"index-{sid}-a", f"index-{sid}-b"], f"stat-{sid}")
        if changelog:
            add_changelog(Table.open(path), sid)
    Table.open(path).create_tag("t30", 30)
    return path


def api_template(base):
    """Real commits: appends into two partitions, compactions (DELETEs), a partition drop,
    tags, a rollback (ids re-created), so that re-adds / tags / rollbacks all matter."""
    path = os.path.join(base, "tpl-api", "wh", "db.db", "t")
    os.makedirs(os.path.dirname(path))
    from conftest import SCHEMA
    t = Table.create(path, SCHEMA, partition_keys=["dt", "hr"],
                     options={"write-only": "true", "compaction.min.file-num": "3"})
    i = 0
    for round_ in range(6):
        for _ in range(8):
            i += 1
            write(t, make_rows([i, i + 1000], dt=D1, hr=i % 2))
        t.compact()
        if round_ == 2:
            t.create_tag("mid", t.latest_snapshot().id - 3)
        if round_ == 3:
            with t.new_commit() as c:
                c.drop_partitions([{"hr": 0}])
        if round_ == 4:
            t.rollback_to(t.latest_snapshot().id - 4)   # ids re-created by what follows
    return path


def corrupt(path, rel):
    with open(os.path.join(path, rel), "wb") as f:
        f.write(b"\x00garbage")


def delta_of(path, sid):
    return "manifest/" + Table.open(path).store.snapshots.snapshot(sid).delta_manifest_list


def base_of(path, sid):
    return "manifest/" + Table.open(path).store.snapshots.snapshot(sid).base_manifest_list


def cfg(**kw):
    kw.setdefault("retain_min", 3)
    kw.setdefault("time_retained_ms", 0)
    kw.setdefault("max_deletes", 1 << 30)
    return ExpireConfig(**kw)


def oldest_time(path, sid):
    return Table.open(path).store.snapshots.snapshot(sid).time_millis


SCENARIOS = [
    # name, template, setup(path), config(path), clock, dry_run
    ("plain", "ov", None, lambda p: cfg(), None, False),
    ("max_deletes=25 (reruns)", "ov", None, lambda p: cfg(max_deletes=25), None, False),
    ("max_deletes=7 (< FIRST_CHUNK? no: > 3)", "ov", None, lambda p: cfg(max_deletes=7),
     None, False),
    ("retain_max=20 + time holds all", "ov", None,
     lambda p: cfg(retain_max=20, time_retained_ms=10 ** 12), time.time, False),
    ("older_than = snapshot 41", "ov", None,
     lambda p: cfg(older_than_ms=oldest_time(p, 41)), None, False),
    ("consumer at 35", "ov",
     lambda p: ConsumerManager(Table.open(p).store.io, p).write("c1", 35), lambda p: cfg(),
     None, False),
    ("consumer at 2", "ov",
     lambda p: ConsumerManager(Table.open(p).store.io, p).write("c1", 2), lambda p: cfg(),
     None, False),
    ("snapshot 25 missing (gap)", "ov",
     lambda p: os.unlink(os.path.join(p, "snapshot", "snapshot-25")), lambda p: cfg(),
     None, False),
    ("snapshot 25 corrupt", "ov", lambda p: corrupt(p, "snapshot/snapshot-25"),
     lambda p: cfg(), None, False),
    ("snapshot 2 corrupt", "ov", lambda p: corrupt(p, "snapshot/snapshot-2"),
     lambda p: cfg(), None, False),
    ("delta list of 25 corrupt", "ov", lambda p: corrupt(p, delta_of(p, 25)),
     lambda p: cfg(), None, False),
    ("delta list of 25 missing", "ov",
     lambda p: os.unlink(os.path.join(p, delta_of(p, 25))), lambda p: cfg(), None, False),
    ("delta list of 1 missing", "ov",
     lambda p: os.unlink(os.path.join(p, delta_of(p, 1))), lambda p: cfg(), None, False),
    ("half-expired head 1-2 (lists gone), retention keeps all", "ov",
     lambda p: [os.unlink(os.path.join(p, x(p, s))) for s in (1, 2)
                for x in (base_of, delta_of)],
     lambda p: cfg(retain_min=100), None, False),
    ("half-expired head 1-2, retain_min 3", "ov",
     lambda p: [os.unlink(os.path.join(p, x(p, s))) for s in (1, 2)
                for x in (base_of, delta_of)],
     lambda p: cfg(), None, False),
    ("hostile delta name in 25", "ov",
     lambda p: rewrite_snapshot(Table.open(p), 25, delta_manifest_list="../../x"),
     lambda p: cfg(), None, False),
    ("delta of 10 names a data manifest", "ov",
     lambda p: rewrite_snapshot(Table.open(p), 10, delta_manifest_list=Table.open(p).store
                                .manifests.read_list_refs(Table.open(p).store.snapshots
                                                          .snapshot(SNAPS).base_manifest_list)
                                [0].file_name),
     lambda p: cfg(), None, False),
    ("dry run", "ov", None, lambda p: cfg(), None, True),
    ("changelog producer input, not decoupled", "ovcl", None,
     lambda p: cfg(changelog_producer=None), None, False),
    ("changelog decoupled (retain 3..30)", "ov", None,
     lambda p: cfg(changelog_retain_min=3, changelog_retain_max=30,
                   changelog_time_retained_ms=0), None, False),
    ("api table: compaction/tags/drop/rollback", "api", None, lambda p: cfg(), FAR, False),
    ("api table, max_deletes 9", "api", None, lambda p: cfg(max_deletes=9), FAR, False),
    ("api table, consumer at 20", "api",
     lambda p: ConsumerManager(Table.open(p).store.io, p).write("c", 20), lambda p: cfg(),
     FAR, False),
]


def main():
    import logging
    logging.disable(logging.WARNING)   # (the skips are compared by count, not printed)
    chunk_files = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    base = tempfile.mkdtemp(prefix="audit26h-q1-")
    templates = {"ov": overwrite_template(base), "api": api_template(base)}
    templates["ovcl"] = overwrite_template(base, changelog=True)
    # (the changelog-producer option, as tests/operations/test_changelog.cl_table does)
    import json
    sch = os.path.join(templates["ovcl"], "schema", "schema-0")
    obj = json.load(open(sch))
    obj["options"]["changelog-producer"] = "input"
    json.dump(obj, open(sch, "w"))
    bad = 0
    for name, tpl, setup, config, clock, dry in SCENARIOS:
        out, firsts = {}, {}
        for first_files in ("old", 0, None):
            p = clone(templates[tpl], os.path.join(base, "run", "db.db", f"t{first_files}"))
            if setup is not None:
                setup(p)
            with sizes(first_files, CHUNK_FILES=chunk_files), chunk_log() as chunks:
                out[first_files] = run_until_done(p, config(p), clock=clock, dry_run=dry)
            firsts[first_files] = chunks[0][0] if chunks else None
            if out[first_files]["error"] is None and not dry and "corrupt" not in name \
                    and "missing" not in name and "head" not in name and "names a" not in name:
                assert_intact(p)
        import re
        for r in out.values():   # (the copies' paths differ: told / t0 / tNone)
            if r["error"]:
                r["error"] = re.sub(r"/t(old|0|None)/", "/t*/", r["error"])
        n = out[None]
        same = all(out[x][k] == n[k] for x in ("old", 0)
                   for k in ("expired", "deleted", "files", "error"))
        o = out["old"] if any(out["old"][k] != n[k] for k in n) else out[0]
        note = "" if same else "  DIFF: " + "; ".join(
            f"{k}: old={sorted(o[k])[:6] if isinstance(o[k], set) else o[k]!s:.120} "
            f"new={sorted(n[k])[:6] if isinstance(n[k], set) else n[k]!s:.120}"
            for k in ("expired", "deleted", "files", "error") if o[k] != n[k])
        if not same:
            bad += 1
        print(f"{'SAME' if same else 'DIFF'} {name}: expired {len(n['expired'])}, deleted "
              f"{len(n['deleted'])}, first chunk old={firsts['old']} (FIRST_CHUNK_FILES=0: {firsts[0]}) new={firsts[None]}, runs "
              f"old={out['old']['runs']} new={n['runs']}, error={n['error']}{note}", flush=True)
    print(f"CHUNK_FILES={chunk_files}: differences: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

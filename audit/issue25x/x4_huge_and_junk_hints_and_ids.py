"""x4: odd ids. EARLIEST/LATEST hints holding huge, negative or junk values, and a stray
`snapshot-<huge>` name that is not a snapshot (an editor's copy, a partial upload): a commit,
snapshot expiration (retain 1), orphan cleanup (aged files) and rollback must not delete a
retained snapshot's files nor leave the table without a snapshot. Rows checked with our
reader and pypaimon."""
import os
import time

from common import fresh, prepared, Table, ours, pp_read

out, bad = [], []
for case in ("hint-huge", "hint-negative", "hint-junk", "stray-huge-name", "stray-long-name"):
    path, t = fresh({"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
    for i in (10, 20):
        with t.new_commit(commit_user="w") as c:
            c.commit(prepared(t, [i]))
    sd = os.path.join(path, "snapshot")
    if case == "hint-huge":
        for h in ("LATEST", "EARLIEST"):
            open(os.path.join(sd, h), "w").write("9" * 40)
    elif case == "hint-negative":
        open(os.path.join(sd, "LATEST"), "w").write("-5")
        open(os.path.join(sd, "EARLIEST"), "w").write("-9223372036854775809")
    elif case == "hint-junk":
        open(os.path.join(sd, "LATEST"), "w").write("2\x00junk")
        open(os.path.join(sd, "EARLIEST"), "w").write("١")   # an Arabic-Indic digit one
    elif case == "stray-huge-name":
        open(os.path.join(sd, "snapshot-" + "9" * 30), "w").write("{}")
    else:
        open(os.path.join(sd, "snapshot-9223372036854775808"), "w").write("not json")
    try:
        with t.new_commit(commit_user="w") as c:
            sid = c.commit(prepared(t, [30]))
        t.expire_snapshots(retain_min=1, retain_max=1)
        past = time.time() - 3 * 86400
        for root, dirs, files in os.walk(path):
            for n in files:
                if not n.startswith("snapshot-9"):
                    os.utime(os.path.join(root, n), (past, past))
        r = Table.open(path).remove_orphan_files(older_than_duration="1 d") \
            if "older_than_duration" in Table.remove_orphan_files.__code__.co_varnames \
            else Table.open(path).remove_orphan_files(older_than=(time.time() - 86400) * 1000)
        res = f"commit {sid}"
    except Exception as e:
        res = f"raised {type(e).__name__}: {str(e)[:120]}"
    try:
        rows, pp = ours(path), sorted(pp_read(path).column("id").to_pylist())
    except Exception as e:
        rows, pp = f"unreadable {type(e).__name__}: {str(e)[:100]}", None
    snaps = sorted(n for n in os.listdir(sd) if n.startswith("snapshot-"))
    out.append(f"{case}: {res}; latest reads {rows} (pypaimon {pp}); snapshot files {snaps}")
    if rows not in ([10, 20, 30], [10, 20]) or not any(n[9:].isdigit() and len(n) < 20
                                                        for n in snaps):
        bad.append(case)
    elif rows == [10, 20] and not res.startswith("raised"):
        bad.append(case + " (row 30 missing, success reported)")
print("\n".join(out))
print(f"FINDING: {bad}" if bad else "OK")

"""The late-landing matrix of u5/u6: attempt 1 of a call of user 'job' (F = row 11, on a table
with rows 10, 20 in snapshots 1, 2) sends a PUT of snapshot 3 that is late (OSError, nothing
created). At a timing point the late PUT lands (raw create-if-absent, see common.LatePut)
together with an event by other users; then the caller retries the same messages (the same
user 'job', or another user 'job2', as a new random user would). Checked: row 11 is never
read twice; a call or retry that reports success (a snapshot id) has row 11 in the latest
snapshot unless the event removed it on purpose (a rollback, overwrite or drop after the
landing); the latest snapshot is readable. Retries: the same user ('same'), another user
('new'), and filter_and_commit({7: F}) by the same user ('fac'; the call uses commit
identifier 7)."""
import contextlib

from common import (fresh, write, make_rows, prepared, snapshot_ids, LatePut, call, show,
                    try_commit, ids_read, D1, OPTS, commit_mod)


def events(t, path, late, name):
    """Run event `name` around the late landing."""
    if name == "none":
        late.land(0)
    elif name == "compact":
        late.land(0); t.compact()
    elif name == "other":
        late.land(0); write(t, make_rows([30]))
    elif name == "other-first":
        write(t, make_rows([30])); late.land(0)
    elif name == "expire":      # landed, built on, compacted, its snapshot expired
        late.land(0); write(t, make_rows([30])); t.compact()
        t.expire_snapshots(retain_min=1, retain_max=1)
    elif name == "expire-tagged":   # the same with a tag keeping the late snapshot's files
        late.land(0); t.create_tag("keep", 3); write(t, make_rows([30])); t.compact()
        t.expire_snapshots(retain_min=1, retain_max=1)
    elif name == "recreate":    # id 3 taken by others and expired, then the late PUT lands
        write(t, make_rows([30])); write(t, make_rows([40]))
        t.expire_snapshots(retain_min=1, retain_max=1); late.land(0)
    elif name == "rollback":
        late.land(0); t.rollback_to(2)
    elif name == "overwrite":
        late.land(0)
        w = t.new_writer(); w.write_arrow(make_rows([99]))
        with t.new_commit(commit_user="ow") as c:
            c.overwrite(w.prepare_commit())
    elif name == "drop":
        late.land(0)
        with t.new_commit(commit_user="dp") as c:
            c.drop_partitions([{"dt": D1, "hr": 1}])
    else:
        raise ValueError(name)
    late.log.append(f"{name}: snapshots {snapshot_ids(path)}")
    late.event_sid = t.latest_snapshot().id


EVENTS = ("none", "compact", "other", "other-first", "expire", "expire-tagged", "recreate",
          "rollback", "overwrite", "drop")
REMOVES = ("rollback", "overwrite", "drop")
IDENT = 7   # the call's commit identifier (filter_and_commit needs one)


def run(timing, event, retry_user):
    path, t = fresh(OPTS)
    write(t, make_rows([10]))
    write(t, make_rows([20]))
    F = prepared(t, [11])
    fired = []

    def fire(*_):
        if not fired:
            fired.append(1)
            events(t, path, late, event)

    plan = {1: "lost"}
    restore = []
    if timing in ("after-call", "in-retry"):
        plan = {i: "lost" for i in range(1, 30)}
    elif timing == "look-create":
        plan[2] = fire
    elif timing in ("before-settle", "settle-look"):
        real = commit_mod.resolve_uncertain

        def ru(*a, **k):
            if timing == "before-settle":
                fire()
                return real(*a, **k)
            r = real(*a, **k)
            fire()
            return r
        commit_mod.resolve_uncertain = ru
        restore.append(lambda: setattr(commit_mod, "resolve_uncertain", real))
    try:
        with LatePut("job", plan) as late:
            with t.new_commit(commit_user="job") as c:
                r1 = call(lambda: c.commit(F, commit_identifier=IDENT))
    finally:
        for f in restore:
            f()
    if timing == "after-call":
        fire()
    user = "job2" if retry_user == "new" else "job"

    def retry():
        if retry_user == "fac":
            r = try_commit(t, {IDENT: F}, user=user, how="filter_and_commit")
            return r if isinstance(r, BaseException) else (r[0] if r else
                                                           "nothing pending")
        return try_commit(t, F, user=user, ident=IDENT)
    if timing == "in-retry":
        with LatePut(user, {1: fire}):
            r2 = retry()
    else:
        r2 = retry()
    if not fired:
        r2 = f"{show(r2)} (never reached a publish: the late PUT never landed)"
    try:
        ours, theirs = ids_read(path)
    except BaseException as e:  # noqa: BLE001
        return (f"{timing}/{event}/{retry_user}: latest unreadable: {type(e).__name__} "
                f"{str(e)[:100]}; call -> {show(r1)[:50]}; retry -> {show(r2)[:50]}; "
                f"{' | '.join(late.log)}"), late.log
    n11 = max(ours.count(11), theirs.count(11))
    # filter_and_commit's "nothing pending" claims the identifier is committed
    ok_claimed = isinstance(r1, int) or isinstance(r2, int) or r2 == "nothing pending"
    tag = (f"{timing}/{event}/{retry_user}: call -> {show(r1)[:70]}; retry -> {show(r2)[:70]}; "
           f"row 11 x{n11} (ours {ours.count(11)}, pypaimon {theirs.count(11)}); "
           f"snapshots {snapshot_ids(path)}")
    if n11 > 1:
        return f"{tag}: read twice", late.log
    if n11 == 0 and ok_claimed and event not in REMOVES:
        return f"{tag}: success reported, row lost", late.log
    if n11 == 0 and event in REMOVES and any(
            isinstance(r, int) and r > getattr(late, "event_sid", 0) for r in (r1, r2)):
        # a success reported as a snapshot newer than the removal must hold F; one older
        # than an overwrite or drop was legitimately replaced by it
        return f"{tag}: success reported after the removal, row absent", late.log
    return None, tag


def main(timings):
    findings, lines = [], []
    for timing in timings:
        for event in EVENTS:
            for ru in ("same", "new", "fac"):
                bad, info = run(timing, event, ru)
                if bad:
                    findings.append(bad)
                    print("  " + bad)
                else:
                    lines.append(info)
    print(f"{len(lines)} runs held:")
    for x in lines:
        print("   " + x[:230])
    def brief(b):
        key = b.split(":", 1)[0]
        why = "latest unreadable" if "unreadable" in b else b.rsplit(": ", 1)[-1]
        return f"{key} ({why})"
    print(("FINDING: " + "; ".join(brief(b) for b in findings)) if findings else "OK")

"""Processes of the concurrency soak (tests/faults/test_soak.py).

    python soak_worker.py ROLE TABLE LOG START_AT STOP_AT SEED [INDEX] [OPTIONS_JSON]

ROLE is writer, expirer, cleaner or reader. Every process imports first, waits until START_AT
(epoch seconds) so that all of them begin together, works until STOP_AT, and exits by itself.
It appends one JSON object per event to LOG (flushed at once, so a process that is killed
leaves everything it did on record) and ends with {"summary": {...}}. Exit code 0 unless the
role itself broke (a writer's commit raising is an event, not a crash: it is logged and the
writer goes on with a fresh commit object).
"""
import datetime
import json
import os
import random
import re
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))   # tests/: oracle.py

from paimon_commit import Table  # noqa: E402
from paimon_commit.operations.expire import ExpireConfig, ExpireSnapshots  # noqa: E402
from paimon_commit.operations.orphan import (CleanContext, OrphanCleanAborted,  # noqa: E402
                                             OrphanFilesCleaner)

PARTITIONS = 4              # writers share hr = 0..3, so overwrites replace each other's rows
ID_SPACE = 10_000_000       # row ids: writer * ID_SPACE + identifier * 10 + j
DT = datetime.date(2024, 1, 1)


class Log:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def __call__(self, **event):
        event.setdefault("t", time.time())
        self.f.write(json.dumps(event, default=str) + "\n")
        self.f.flush()


def ids_digest(ids):
    """Order-insensitive fingerprint of a set of row ids: (count, sum, sum of squares mod p)."""
    ids = list(ids)
    return [len(ids), sum(ids), sum(i * i for i in ids) % 1_000_000_007]


def latest_id(path):
    """The newest snapshot id on disk right now (a fresh listing, no hint)."""
    ids = [int(n[len("snapshot-"):]) for n in os.listdir(os.path.join(path, "snapshot"))
           if re.fullmatch(r"snapshot-\d+", n)]
    return max(ids) if ids else None


def missing_path(exc, table_path):
    """The file a read failed on, if the error names one inside the table."""
    name = getattr(exc, "filename", None)
    if name:
        return os.path.abspath(str(name))
    m = re.search(re.escape(os.path.abspath(table_path)) + r"/[^\s'\"),]+", str(exc))
    if m:
        return m.group(0)
    m = re.search(r"Snapshot id '(\d+)' doesn't exist", str(exc))   # pypaimon
    if m:
        return os.path.join(os.path.abspath(table_path), "snapshot", f"snapshot-{m.group(1)}")
    return None


def is_missing(exc):
    """A missing file (ours: FileNotFoundError; pypaimon: also "Snapshot id 'N' doesn't
    exist" when the snapshot file itself is gone)."""
    text = f"{type(exc).__name__}: {exc}"
    return isinstance(exc, FileNotFoundError) or "No such file" in text \
        or bool(re.search(r"Snapshot id '\d+' doesn't exist", text))


# --- roles -------------------------------------------------------------------------------

def writer(path, log, stop_at, seed, index, options):
    import pyarrow as pa
    rng = random.Random(seed * 1000 + index)
    user = f"writer-{index}"
    t = Table.open(path)
    schema = t.arrow_schema()
    # commit.timeout below the cleaner's age threshold: a commit that cannot publish soon
    # gives up (its files become orphans) instead of publishing files the cleaner may already
    # have judged old and unused -- the rule that makes a short threshold safe.
    opts = {"write-only": "true", "commit.max-retries": "1000", "commit.min-retry-wait": "2 ms",
            "commit.max-retry-wait": "100 ms", "commit.timeout": "1 s"}
    pause = float(options.pop("pause", 0.15))
    abandon = float(options.pop("abandon", 0.1))
    opts.update(options)
    commits = overwrites = errors = abandoned = 0
    max_latency = 0.0
    ident = 0
    c = t.new_commit(commit_user=user, options=opts)
    try:
        while time.time() < stop_at:
            time.sleep(rng.uniform(0, 2 * pause))
            ident += 1
            hr = rng.randrange(PARTITIONS)
            ids = [index * ID_SPACE + ident * 10 + j for j in range(rng.randint(1, 3))]
            kind = "overwrite" if rng.random() < 0.25 else "append"
            t0 = time.time()
            w = t.new_writer()
            w.write_arrow(pa.Table.from_pylist(
                [{"id": i, "name": f"{user}-{ident}", "dt": DT, "hr": hr} for i in ids],
                schema=schema))
            msgs = w.prepare_commit()
            files = [f.file_name for m in msgs for f in m.new_files]
            if rng.random() < abandon:   # a task that died after writing: orphans to clean
                abandoned += 1
                log(event="abandoned", user=user, ident=ident, files=files, written_at=t0)
                continue
            try:
                if kind == "overwrite":
                    sid = c.overwrite(msgs, commit_identifier=ident)
                else:
                    sid = c.commit(msgs, ident)
            except Exception as e:
                errors += 1
                log(event="commit_error", user=user, ident=ident, kind=kind, hr=hr, ids=ids,
                    files=files, written_at=t0,
                    error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc(),
                    latest_after=latest_id(path))
                c.close()
                c = t.new_commit(commit_user=user, options=opts)
                continue
            latency = time.time() - t0
            max_latency = max(max_latency, latency)
            commits += 1
            overwrites += kind == "overwrite"
            log(event="commit", sid=sid, kind=kind, hr=hr, ids=ids, user=user, ident=ident,
                files=files, written_at=t0, latency=latency,
                attempts=c.last_result.attempts)
    finally:
        c.close()
    log(summary={"role": "writer", "user": user, "commits": commits, "overwrites": overwrites,
                 "abandoned": abandoned, "errors": errors, "max_latency": max_latency})


def expirer(path, log, stop_at, seed, index, options):
    cfg = ExpireConfig(retain_min=2, time_retained_ms=0, max_deletes=1000)
    runs = expired = deleted = errors = 0
    while time.time() < stop_at:
        try:
            r = ExpireSnapshots(Table.open(path).store, cfg).expire()
        except Exception as e:
            errors += 1
            log(event="expire_error", error=f"{type(e).__name__}: {e}",
                traceback=traceback.format_exc())
        else:
            runs += 1
            expired += r.expired_snapshots
            deleted += r.deleted_files
            if r.deleted_paths or r.skipped:
                log(event="expire", latest=r.latest, expired=r.expired_ids,
                    deleted=r.deleted_paths, skipped=r.skipped)
        time.sleep(0.05)
    log(summary={"role": "expirer", "runs": runs, "expired_snapshots": expired,
                 "deleted_files": deleted, "errors": errors})


def cleaner(path, log, stop_at, seed, index, options):
    threshold_ms = int(options.get("older_than_ms", 2000))
    runs = aborted = deleted = errors = 0
    while time.time() < stop_at:
        started = time.time()
        try:
            ctx = CleanContext(path, older_than_ms=int(started * 1000) - threshold_ms,
                               allow_recent_cutoff=True)
            r = OrphanFilesCleaner(ctx).clean()
        except OrphanCleanAborted as e:
            aborted += 1
            log(event="clean_aborted", reason=str(e)[:300])
        except Exception as e:
            errors += 1
            log(event="clean_error", error=f"{type(e).__name__}: {e}",
                traceback=traceback.format_exc())
        else:
            runs += 1
            deleted += r.deleted_files
            if r.deleted_paths or r.deleted_dirs:
                log(event="clean", started=started, older_than_ms=r.older_than_ms,
                    deleted=[os.path.join(path, p) for p in r.deleted_paths],
                    dirs=r.deleted_dirs)
        time.sleep(0.2)
    log(summary={"role": "cleaner", "runs": runs, "aborted": aborted, "deleted_files": deleted,
                 "errors": errors})


def reader(path, log, stop_at, seed, index, options):
    """Resolve the latest snapshot with a fresh Table, read it with our reader (and every
    `pp_every`-th time with pypaimon, pinned to the same snapshot); record what was read or
    why it failed, with the newest snapshot id on disk right after the failure."""
    pp_every = int(options.get("pp_every", 4))
    reads = pp_reads = failures = 0
    n = 0
    while time.time() < stop_at:
        n += 1
        sid = None
        try:
            t = Table.open(path)
            s = t.latest_snapshot()
            if s is None:
                time.sleep(0.01)
                continue
            sid = s.id
            got = [r for r in t.read_arrow(snapshot_id=sid).column("id").to_pylist()]
            reads += 1
            log(event="read", reader="ours", sid=sid, digest=ids_digest(got),
                total=s.total_record_count)
        except Exception as e:
            failures += 1
            log(event="read_failed", reader="ours", sid=sid, latest_after=latest_id(path),
                missing=missing_path(e, path), is_missing=is_missing(e),
                error=f"{type(e).__name__}: {e}"[:500], traceback=traceback.format_exc())
            continue
        if n % pp_every:
            continue
        try:
            from oracle import pp_read
            got = pp_read(path, snapshot_id=sid).column("id").to_pylist()
            pp_reads += 1
            log(event="read", reader="pypaimon", sid=sid, digest=ids_digest(got))
        except Exception as e:
            failures += 1
            log(event="read_failed", reader="pypaimon", sid=sid, latest_after=latest_id(path),
                missing=missing_path(e, path), is_missing=is_missing(e),
                error=f"{type(e).__name__}: {e}"[:500], traceback=traceback.format_exc())
    log(summary={"role": "reader", "reads": reads, "pp_reads": pp_reads,
                 "failures": failures})


ROLES = {"writer": writer, "expirer": expirer, "cleaner": cleaner, "reader": reader}


def main() -> int:
    role, path, log_path = sys.argv[1], sys.argv[2], sys.argv[3]
    start_at, stop_at, seed = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
    index = int(sys.argv[7]) if len(sys.argv) > 7 else 0
    options = json.loads(sys.argv[8]) if len(sys.argv) > 8 else {}
    if role == "reader":
        import oracle  # noqa: F401  (pypaimon import paid before the start)
    log = Log(log_path)
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)
    log(event="start", role=role, index=index, pid=os.getpid())
    try:
        ROLES[role](path, log, stop_at, seed, index, options)
    except Exception as e:
        log(event="crash", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc())
        return 1
    finally:
        log.f.close()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is on record; skip interpreter teardown: with pypaimon's and pyarrow's
    # native threads still around it sometimes aborts ("terminate called without an active
    # exception", SIGABRT) after the work is done.
    os._exit(code)

"""Randomized properties of `LeaseManager.prune_below` on real directories under tmp_path
(written by the outside audit of the count rule: young superseded records past the newest
KEEP_RECENT are pruned too).

Every case builds a real `.maintenance/` directory (lease records with random storage times,
old / young / in the future, out of order; waiter records; other files), a listing that may be
stale (records deleted since, low names created again since, entries >= `number`, gaps), and
optionally a second pruner running concurrently on its own thread. The only hook is around
`io._unlink` (as tests/unit/test_lease_pruning.py's flaky_unlink): under one lock it checks
the directory's real state just before each delete, performs the real unlink, or answers a
failed delete (False, as `_unlink` does for an I/O error).

Properties checked at every delete of record r by a pruner with own number p and listing L:
  A. r < p and r is in L (only superseded records it listed; nothing else: not a waiter
     record, not another file, not a file outside `.maintenance/`).
  B. prefix: no record x < r of the original directory (not created again since) still
     exists -- a record is deleted only once every lower one is gone.
  C. r is not the highest record in the directory.
After each single-pruner case (fresh listing, no failures):
  D. every young superseded record among the newest KEEP_RECENT of the listing is kept;
  E. at most max(KEEP_RECENT, PRUNE_AT - 1 + KEEP_RECENT...) superseded records are left:
     the count rule actually bounds the listing (S >= KEEP_RECENT + PRUNE_AT -> <= 32 left).
"""
import os
import random
import threading
import time

from paimon_commit.lease import KEEP_RECENT, PRUNE_AGE_MS, PRUNE_AT, LeaseManager

OLD_S = PRUNE_AGE_MS / 1000 + 3600


def _lease_numbers(d):
    return sorted(int(n.split("-")[1]) for n in os.listdir(d)
                  if n.startswith("lease-") and n[6:].isdigit())


class Harness:
    def __init__(self, table, rng):
        self.io = table.store.io
        self.m = LeaseManager(self.io, table.store.path)
        self.dir = self.m.lease_dir
        self.rng = rng
        self.lock = threading.Lock()
        self.violations = []
        self.deleted = []          # (pruner, number)
        self.fail = set()
        self.original = set()
        self.listed = {}
        self.own = {}
        self.jitter = False
        real = self.io._unlink
        me = self

        def unlink(norm):
            if me.jitter:
                time.sleep(me.rng.random() * 0.002)
            with me.lock:
                who = threading.current_thread().name
                name = os.path.basename(norm)
                if os.path.dirname(norm) != me.dir.rstrip("/") or not name.startswith("lease-"):
                    me.violations.append(f"{who}: deleted a non-record {norm}")
                    return real(norm)
                r = int(name.split("-")[1])
                p, L = me.own[who], me.listed[who]
                if not (r < p and r in L):
                    me.violations.append(f"A {who}: deleted {r} (own {p}, in listing "
                                         f"{r in L})")
                present = _lease_numbers(me.dir)
                lower = [x for x in present if x < r and x in me.original]
                if lower and r in present:
                    me.violations.append(f"B {who}: deleting {r} while lower original "
                                         f"{lower[:5]} exist")
                if present and r == present[-1]:
                    me.violations.append(f"C {who}: deleting the highest record {r}")
                if r in me.fail:
                    return False
                ok = real(norm)
                if ok:
                    me.deleted.append((who, r))
                return ok
        self.io._unlink = unlink

    def reset(self):
        for n in os.listdir(self.dir) if os.path.isdir(self.dir) else []:
            os.unlink(os.path.join(self.dir, n))
        os.makedirs(self.dir, exist_ok=True)
        self.deleted.clear()
        self.fail.clear()
        self.listed.clear()
        self.own.clear()

    def put(self, n, age_s):
        path = os.path.join(self.dir, f"lease-{n}")
        with open(path, "w") as f:
            f.write("{}")
        t = time.time() - age_s
        os.utime(path, (t, t))


def _random_dir(h, rng):
    """Records with gaps, random storage times (old, young, future), waiter and other files."""
    n_records = rng.randint(0, 120)
    start = rng.randint(1, 50)
    numbers = []
    x = start
    for _ in range(n_records):
        numbers.append(x)
        x += 1 if rng.random() < 0.85 else rng.randint(2, 10)   # gaps
    for n in numbers:
        kind = rng.random()
        age = OLD_S if kind < 0.3 else (-3600 if kind < 0.4 else rng.random() * 60)
        h.put(n, age)
    # waiter and other entries: never to be deleted
    for name in (f"wait-{int(time.time() * 1000)}-{'a' * 32}", "expiring-1-2-x",
                 ".lease-3.tmp", "lease-notanumber"):
        with open(os.path.join(h.dir, name), "w") as f:
            f.write("{}")
    h.original = set(numbers)
    return numbers


def test_prune_below_single_pruner_properties(table, tmp_path):
    rng = random.Random(5)
    h = Harness(table, rng)
    saved = threading.current_thread().name
    threading.current_thread().name = "P"
    try:
        _single(h, rng)
    finally:
        threading.current_thread().name = saved


def _single(h, rng):
    checked_d = checked_e = 0
    for case in range(400):
        h.reset()
        numbers = _random_dir(h, rng)
        listing = h.m.listing()
        stale = False
        if numbers and rng.random() < 0.3:
            # stale: some listed records deleted since (from the lowest up, as pruning does)
            k = rng.randint(1, max(1, len(numbers) // 2))
            for n in numbers[:k]:
                os.unlink(os.path.join(h.dir, f"lease-{n}"))
            stale = True
        if numbers and rng.random() < 0.2:
            # a paused release / take created a pruned low name again since the listing
            low = rng.randint(1, numbers[0])
            if low not in numbers:
                h.put(low, 0)
        if numbers and rng.random() < 0.2:
            h.fail.add(rng.choice(numbers))
        # own number: normally the highest listed; sometimes lower (listing holds >= number)
        number = (listing[-1][0] if listing else 1)
        if listing and rng.random() < 0.2:
            number = rng.choice(listing)[0]
        h.own["P"], h.listed["P"] = number, {n for n, _ in listing}
        h.m.prune_below(number, listing)
        assert not h.violations, (case, h.violations)
        deleted = [r for _, r in h.deleted]
        assert deleted == sorted(deleted)
        sup = [(n, mt) for n, mt in listing if n < number]
        assert deleted == [n for n, _ in sup[:len(deleted)]], (case, deleted)   # a prefix
        if not stale and not h.fail:
            cutoff = h.m.clock() - PRUNE_AGE_MS
            newest = sup[-KEEP_RECENT:] if KEEP_RECENT else []
            young_kept = [n for n, mt in newest if mt >= cutoff]
            # D: young records among the newest KEEP_RECENT survive, unless an older record
            # ... no: the prefix stops at the first kept young record, so all young newest kept
            assert not set(young_kept) & set(deleted), (case, young_kept, deleted)
            checked_d += 1
            if len(sup) >= KEEP_RECENT + PRUNE_AT:
                assert len(sup) - len(deleted) <= KEEP_RECENT, (case, len(sup), deleted)
                checked_e += 1
    assert checked_d > 100 and checked_e > 20, (checked_d, checked_e)


def test_prune_below_two_concurrent_pruners_keep_the_prefix(table, tmp_path):
    rng = random.Random(55)
    h = Harness(table, rng)
    h.jitter = True
    for case in range(150):
        h.reset()
        numbers = _random_dir(h, rng)
        if len(numbers) < 3:
            continue
        # P's take listed first (its own record some way down), Q's later (its own higher).
        i = rng.randint(len(numbers) // 2, len(numbers) - 1)
        p_listing = [(n, mt) for n, mt in h.m.listing() if n <= numbers[i]]
        q_listing = h.m.listing()
        if rng.random() < 0.3:
            h.fail.add(rng.choice(numbers))
        h.own.update(P=numbers[i], Q=numbers[-1])
        h.listed.update(P={n for n, _ in p_listing}, Q={n for n, _ in q_listing})
        errors = []

        def run(name, number, listing):
            threading.current_thread().name = name
            try:
                h.m.prune_below(number, listing)
            except BaseException as e:   # noqa: BLE001
                errors.append(e)
        ts = [threading.Thread(target=run, args=("P", numbers[i], p_listing)),
              threading.Thread(target=run, args=("Q", numbers[-1], q_listing))]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        assert not errors and not h.violations, (case, errors, h.violations)
        gone = sorted(set(numbers) - set(_lease_numbers(h.dir)))
        assert gone == numbers[:len(gone)], (case, gone)   # what went is a prefix

"""Idea (doc mismatch): docs/commit.md says a repeat whose snapshot "was rolled back ...: they
are published again, once, if their data files are still on disk". docs/safety.md §3b and
commit_record.RepeatScreen (after audit a5) refuse such a repeat with CommitConflictError.
Which one holds?"""
import os

from common import new_table, write

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
t = new_table(options={"snapshot.num-retained.min": "10"})
write(t, 0)
sid, msgs = write(t, 10, commit_user="job", ident=7)
t.rollback_to(snapshot_id=sid - 1)
try:
    with t.new_commit(commit_user="job") as c:
        outcome = f"published again as snapshot {c.commit(msgs, commit_identifier=7)}"
except Exception as e:  # noqa
    outcome = f"{type(e).__name__}: {str(e)[:160]}"
print("repeat after rollback:", outcome)
doc = open(os.path.join(ROOT, "docs", "commit.md")).read()
says = "they\n    are published again, once," in doc or "are published again, once" in \
    " ".join(doc.split())
print("docs/commit.md says 'published again, once':", says)
if says and not outcome.startswith("published"):
    print("FINDING (doc mismatch): docs/commit.md says a rolled-back repeat is published "
          "again; the code (and safety.md §3b) refuse it")
else:
    print("NO FINDING")

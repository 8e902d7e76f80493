"""What each chunk of an expiration did, noted from ExpireSnapshots._execute (the one call per
chunk that plans something to delete): the tests that check how a run is cut into chunks."""
from typing import Any, Callable, List

from paimon_commit.operations.expire import ExpireSnapshots


def note_chunks(monkeypatch, note: Callable[[Any, Any], Any] = lambda run, plan:
                len(plan.expiring), after: bool = False, planned_only: bool = False
                ) -> List[Any]:
    """A list that gets `note(run, plan)` for each chunk executed: before it executes, or
    with `after`, once it has (what it deleted); with `planned_only`, only chunks whose
    plan expires something (plan.end set). The list fills while the monkeypatch holds."""
    noted: List[Any] = []
    execute = ExpireSnapshots._execute

    def noting(self, plan):
        wanted = not planned_only or plan.end is not None
        if wanted and not after:
            noted.append(note(self, plan))
        done = execute(self, plan)
        if wanted and after:
            noted.append(note(self, plan))
        return done
    monkeypatch.setattr(ExpireSnapshots, "_execute", noting)
    return noted


def deleted(plan) -> int:
    """Files a chunk's plan deletes, all kinds."""
    return sum(len(v) for v in plan.deleted.values())


__all__ = ["note_chunks", "deleted"]

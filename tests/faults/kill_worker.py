"""Subprocess for the SIGKILL trials (tests/faults/test_kill.py).

    python kill_worker.py RESULT_FILE

Imports the command line first and prints `ready`; then reads one line from stdin,
{"argv": [...], "kill_at_deletion": N or null}, prints `started`, runs
`paimon_commit.cli.main(argv)` -- exactly what `python -m paimon_commit ARGV` runs -- and
writes {"rc", "seconds", "deletions", "stdout"} to RESULT_FILE. Paying the interpreter start-up before the arguments arrive lets
the parent start the next worker while it checks the previous trial, and draw kill times over
the operation itself rather than over `import pyarrow`.

What the deletion gate calls for each file (`_unlink`) is wrapped to count calls; with
`kill_at_deletion` = N the process SIGKILLs itself when the N-th call starts (other deleting
threads die with it, wherever they are). Nothing else is changed.
"""
import contextlib
import io
import json
import os
import signal
import sys
import threading
import time

_calls = [0]


def _count_deletions(kill_at) -> None:
    from paimon_commit.io.base import FileIO
    from paimon_commit.io.local import LocalFileIO  # noqa: F401 - registers the subclass
    lock = threading.Lock()

    def wrap(original):
        def _unlink(self, path):
            with lock:
                _calls[0] += 1
                n = _calls[0]
            if kill_at is not None and n >= kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return original(self, path)
        return _unlink

    for cls in (FileIO, *FileIO.__subclasses__()):
        if "_unlink" in vars(cls):
            cls._unlink = wrap(vars(cls)["_unlink"])


def main() -> int:
    result_file = sys.argv[1]
    from paimon_commit import cli
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line.strip():
        return 3   # the parent did not need this worker
    job = json.loads(line)
    _count_deletions(job.get("kill_at_deletion"))
    sys.stdout.write("started\n")   # the parent's kill delay counts from here
    sys.stdout.flush()
    t0 = time.perf_counter()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli.main(job["argv"])
    seconds = time.perf_counter() - t0
    tmp = result_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"rc": rc, "seconds": seconds, "deletions": _calls[0],
                   "stdout": out.getvalue()}, f)
    os.replace(tmp, result_file)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)   # the result is on disk; no interpreter teardown (thread pools, pyarrow)

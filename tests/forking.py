"""Running a piece of a test in a child forked at that moment (tests of what a fork inherits:
the maintenance lease, the commit record's in-flight claims)."""
import json
import os
import signal
import time


def in_child(body, timeout_s=20.0):
    """Run `body()` in a child forked now; what it returned (JSON-able), the error it raised
    as text, or "hung" when it had not finished after `timeout_s` (then it is killed)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child
        try:
            os.close(r)
            try:
                out = body()
            except BaseException as e:  # noqa: BLE001 - reported to the parent
                out = f"{type(e).__name__}: {e}"
            os.write(w, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if os.waitpid(pid, os.WNOHANG)[0]:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
        return "hung"
    with os.fdopen(r, "rb") as f:
        return json.loads(f.read() or b'"no answer"')

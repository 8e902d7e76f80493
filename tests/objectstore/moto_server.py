"""A real S3-protocol server for the tests: moto's server mode on a free loopback port, plus an
optional HTTP proxy in front of it that can drop `If-None-Match` (a store that ignores
conditional writes) or fail chosen requests with 500/503 (faults on the store).

Requests are counted by parsing the server's log (`"METHOD /path HTTP/1.1" STATUS` per line)."""
from __future__ import annotations

import os
import re
import sys
from typing import Callable, List, Optional

from tests.objectstore.servers import (HttpFront, LoggedRequests, Request, ServerProcess,
                                       forward, free_port, passed_on, wait_for_port)

__all__ = ["ACCESS_KEY", "SECRET_KEY", "aws_env", "MotoServer", "Proxy", "free_port",
           "wait_for_port"]

ACCESS_KEY = "AKIDTESTOBJECTSTORE"
SECRET_KEY = "s3cr3t-never-shown-anywhere"


def aws_env(url: str) -> dict:
    return {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": "us-east-1"}


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LINE = re.compile(r'"([A-Z]+) (\S+) HTTP/1\.[01]" (\d{3})')


class MotoServer(ServerProcess, LoggedRequests):
    def __init__(self, log_path: str, extra_env: Optional[dict] = None):
        super().__init__(log_path)
        self.log_path = self.request_log = log_path
        exe = os.path.join(os.path.dirname(sys.executable), "moto_server")
        cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "moto.server"]
        self.start(cmd + ["-H", "127.0.0.1", "-p", str(self.port)],
                   env=dict(os.environ, **(extra_env or {})))

    def parse_requests(self, text: str) -> List[Request]:
        """(method, path, status) of every request logged."""
        out = []
        for line in text.splitlines():
            m = _LINE.search(_ANSI.sub("", line))
            if m:
                out.append((m.group(1), m.group(2), int(m.group(3))))
        return out


# --- a proxy that misbehaves on purpose ---------------------------------------------------

Policy = Callable[[str, str, dict], Optional[str]]
"""(method, path, headers) -> None (forward), 'drop-condition' (forward without If-None-Match),
'drop' (forward, then close the connection without a reply: a timeout after the server applied
the request) or an HTTP status such as '503' to answer instead of forwarding."""


class Proxy(HttpFront):
    def __init__(self, upstream_port: int, policy: Policy):
        self.policy = policy
        self.upstream_port = upstream_port
        super().__init__()

    def answer(self, method, path, headers, body):
        action = self.policy(method, path, headers)
        if action and action.isdigit():
            return int(action), [], b"<Error><Code>InternalError</Code></Error>"
        if action == "drop-condition":
            headers = {k: v for k, v in headers.items() if k.lower() != "if-none-match"}
        status, resp_headers, data = forward(self.upstream_port, method, path, headers, body)
        if action == "drop":   # the server applied it, the client never hears back
            return None
        return status, passed_on(resp_headers), data

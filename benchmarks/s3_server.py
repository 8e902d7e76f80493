"""A small in-memory S3 server for benchmarks (stdlib only): the requests the benchmark's
clients make (obstore and delta-rs, both the Rust `object_store` crate, and boto3), answered
in a fraction of moto's time, in a process of its own.

Why: bench_latency puts a latency proxy in front of an S3 server to play a store 30-100 ms
away. moto serves one request at a time at ~2-3 ms each (a Python server under one
interpreter lock, most of the time spent in its request parsing and response templates), so
an operation of R requests queued for R x that on the server whatever the latency: 218
requests of a Paimon orphan cleanup (every retained snapshot, manifest list and manifest: the
format's floor) spent ~0.6 s in moto's queue, where a real store serves them in parallel.
This server answers a small GET in ~0.2-0.3 ms (measured by bench_latency's
`server_cost_ms`), which brings the server's share of a run down to what a store's is.

What it serves (path-style requests, `/bucket/key`; signatures are not checked):
  * PUT bucket; PUT object (`If-None-Match: *` and `If-Match: <etag>` honoured atomically:
    412 PreconditionFailed; `x-amz-copy-source`: a copy); GET object (`Range` -> 206,
    `If-Match` / `If-None-Match`); HEAD object; DELETE object; POST `?delete` (multi-object
    delete); GET bucket `?list-type=2` (prefix, delimiter, max-keys, continuation-token,
    start-after, encoding-type=url); multipart uploads (`?uploads`, `?partNumber&uploadId`,
    complete, abort).
  * Anything else: 501 NotImplemented with the request in the message (a benchmark that
    needs more fails loudly, it does not get a wrong answer).

Objects live in memory (bytes, ETag = the MD5 of the body, last-modified at the write) and
keys in one sorted list per bucket; every write and every conditional check runs under one
lock, so a conditional create is atomic as on S3.

    server = S3ServerProcess()        # .url, .port, .stop()
    python benchmarks/s3_server.py --port 9000
"""
from __future__ import annotations

import argparse
import bisect
import email.utils
import hashlib
import os
import socket
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Dict, List, Optional, Tuple
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from latency_proxy import serve_http, start_process, stop_process  # noqa: E402

__all__ = ["S3Server", "S3ServerProcess"]

_XML = b'<?xml version="1.0" encoding="UTF-8"?>\n'


class _Object:
    __slots__ = ("data", "etag", "mtime")

    def __init__(self, data: bytes, etag: Optional[str] = None):
        self.data = data
        self.etag = etag or f'"{hashlib.md5(data).hexdigest()}"'
        self.mtime = time.time()


class _Bucket:
    def __init__(self) -> None:
        self.objects: Dict[str, _Object] = {}
        self.keys: List[str] = []   # sorted

    def put(self, key: str, obj: _Object) -> None:
        if key not in self.objects:
            bisect.insort(self.keys, key)
        self.objects[key] = obj

    def delete(self, key: str) -> None:
        if self.objects.pop(key, None) is not None:
            del self.keys[bisect.bisect_left(self.keys, key)]


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def _successor(prefix: str) -> str:
    """The least string above every string that starts with `prefix`."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _error(code: str, message: str) -> bytes:
    return _XML + (f"<Error><Code>{code}</Code><Message>{escape(message)}</Message>"
                   f"</Error>").encode()


def _text(elem, name: str) -> List[str]:
    """The texts of every <name> under an element (namespaces ignored)."""
    return [(e.text or "") for e in elem.iter() if e.tag.rsplit("}", 1)[-1] == name]


class S3Server:
    """A threaded in-memory S3 server on 127.0.0.1:`port` (a free one when None)."""

    def __init__(self, port: Optional[int] = None):
        self._lock = threading.Lock()
        self._buckets: Dict[str, _Bucket] = {}
        self._uploads: Dict[str, Tuple[str, str, Dict[int, bytes]]] = {}
        self.http, self._thread = serve_http(port or 0, self._serve, "s3-server")
        self.port = self.http.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()

    # --- one request -------------------------------------------------------------------
    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        parsed = urllib.parse.urlsplit(h.path)
        query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        path = urllib.parse.unquote(parsed.path)
        bucket, _, key = path.lstrip("/").partition("/")
        try:
            status, headers, data = self._answer(h.command, bucket, key, query, h.headers, body)
        except Exception as e:   # a bug here: an error the client sees, not a hang
            status, headers, data = 500, {}, _error("InternalError", repr(e))
        h.send_response(status)
        headers.setdefault("Content-Length", str(len(data)))
        if data and "Content-Type" not in headers:
            headers["Content-Type"] = "application/xml"
        headers["x-amz-request-id"] = "0"
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        if h.command != "HEAD" and data:
            h.wfile.write(data)

    def _answer(self, method: str, bucket: str, key: str, q: Dict[str, str], hdr,
                body: bytes) -> Tuple[int, Dict[str, str], bytes]:
        if not bucket:
            return 501, {}, _error("NotImplemented", f"{method} / (list buckets)")
        if not key:
            if method == "PUT":
                with self._lock:
                    self._buckets.setdefault(bucket, _Bucket())
                return 200, {}, b""
            b = self._buckets.get(bucket)
            if b is None:
                return 404, {}, _error("NoSuchBucket", bucket)
            if method == "GET" and q.get("list-type") == "2":
                return self._list(bucket, b, q)
            if method == "POST" and "delete" in q:
                return self._delete_many(b, body)
            if method == "HEAD":
                return 200, {}, b""
            return 501, {}, _error("NotImplemented", f"{method} bucket ?{q}")
        b = self._buckets.get(bucket)
        if b is None:
            return 404, {}, _error("NoSuchBucket", bucket)
        if "uploadId" in q or "uploads" in q:
            return self._multipart(method, bucket, b, key, q, body)
        if method == "PUT":
            return self._put(b, key, hdr, body)
        if method in ("GET", "HEAD"):
            return self._get(method, b, key, hdr)
        if method == "DELETE":
            with self._lock:
                b.delete(key)
            return 204, {}, b""
        return 501, {}, _error("NotImplemented", f"{method} object ?{q}")

    def _put(self, b: _Bucket, key: str, hdr, body: bytes):
        source = hdr.get("x-amz-copy-source")
        with self._lock:
            cur = b.objects.get(key)
            none_match, match = hdr.get("If-None-Match"), hdr.get("If-Match")
            if none_match == "*" and cur is not None:
                return 412, {}, _error("PreconditionFailed", "At least one of the "
                                       "pre-conditions you specified did not hold")
            if match is not None and (cur is None or match.strip() not in (cur.etag, "*")):
                code = 404 if cur is None else 412
                return code, {}, _error("NoSuchKey" if cur is None else "PreconditionFailed",
                                        key)
            if source is not None:
                sb, _, sk = urllib.parse.unquote(source).lstrip("/").partition("/")
                src = self._buckets.get(sb)
                obj = src.objects.get(sk) if src is not None else None
                if obj is None:
                    return 404, {}, _error("NoSuchKey", sk)
                new = _Object(obj.data, obj.etag)
                b.put(key, new)
                return 200, {}, _XML + (f"<CopyObjectResult><LastModified>{_iso(new.mtime)}"
                                        f"</LastModified><ETag>{escape(new.etag)}</ETag>"
                                        f"</CopyObjectResult>").encode()
            new = _Object(body)
            b.put(key, new)
        return 200, {"ETag": new.etag}, b""

    def _get(self, method: str, b: _Bucket, key: str, hdr):
        obj = b.objects.get(key)
        if obj is None:
            return 404, {}, (b"" if method == "HEAD" else _error("NoSuchKey", key))
        match, none_match = hdr.get("If-Match"), hdr.get("If-None-Match")
        if match is not None and match.strip() not in (obj.etag, "*"):
            return 412, {}, b"" if method == "HEAD" else _error("PreconditionFailed", key)
        if none_match is not None and none_match.strip() in (obj.etag, "*"):
            return 304, {"ETag": obj.etag}, b""
        headers = {"ETag": obj.etag, "Last-Modified": email.utils.formatdate(obj.mtime,
                                                                             usegmt=True),
                   "Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
        data, size = obj.data, len(obj.data)
        rng = hdr.get("Range")
        if rng and rng.startswith("bytes="):
            first, _, last = rng[6:].partition("-")
            if first == "":
                start, end = max(0, size - int(last)), size - 1
            else:
                start = int(first)
                end = min(size - 1, int(last)) if last else size - 1
            if start >= size or start > end:
                return 416, {}, b"" if method == "HEAD" else _error("InvalidRange", rng)
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
            headers["Content-Length"] = str(end - start + 1)
            return 206, headers, data[start:end + 1] if method == "GET" else b""
        headers["Content-Length"] = str(size)
        return 200, headers, data if method == "GET" else b""

    def _list(self, name: str, b: _Bucket, q: Dict[str, str]):
        prefix, delim = q.get("prefix", ""), q.get("delimiter", "")
        max_keys = int(q.get("max-keys") or 1000)
        after = q.get("continuation-token") or q.get("start-after") or ""
        url = q.get("encoding-type") == "url"
        enc = (lambda s: urllib.parse.quote(s, safe="/")) if url else escape
        contents, prefixes = [], []
        seen_prefixes = set()
        truncated, last = False, None
        with self._lock:
            keys = b.keys
            i = bisect.bisect_left(keys, prefix)
            if after:
                i = max(i, bisect.bisect_right(keys, after))
                if delim and after.endswith(delim):   # a common prefix: past its keys
                    i = max(i, bisect.bisect_left(keys, _successor(after)))
            while i < len(keys):
                k = keys[i]
                if not k.startswith(prefix):
                    break
                if len(contents) + len(prefixes) >= max_keys:
                    truncated = True
                    break
                if delim:
                    j = k.find(delim, len(prefix))
                    if j >= 0:
                        cp = k[:j + len(delim)]
                        if cp not in seen_prefixes:
                            seen_prefixes.add(cp)
                            prefixes.append(cp)
                        last = cp
                        # past every key under this common prefix
                        i = bisect.bisect_left(keys, _successor(cp))
                        continue
                o = b.objects[k]
                contents.append((k, o))
                last = k
                i += 1
        parts = [f'<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                 f"<Name>{escape(name)}</Name><Prefix>{enc(prefix)}</Prefix>"
                 f"<KeyCount>{len(contents) + len(prefixes)}</KeyCount>"
                 f"<MaxKeys>{max_keys}</MaxKeys>"
                 + (f"<Delimiter>{enc(delim)}</Delimiter>" if delim else "")
                 + (f"<EncodingType>url</EncodingType>" if url else "")
                 + f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>"]
        if truncated and last is not None:
            parts.append(f"<NextContinuationToken>{escape(last)}</NextContinuationToken>")
        for k, o in contents:
            parts.append(f"<Contents><Key>{enc(k)}</Key><LastModified>{_iso(o.mtime)}"
                         f"</LastModified><ETag>{escape(o.etag)}</ETag><Size>{len(o.data)}"
                         f"</Size><StorageClass>STANDARD</StorageClass></Contents>")
        for p in prefixes:
            parts.append(f"<CommonPrefixes><Prefix>{enc(p)}</Prefix></CommonPrefixes>")
        parts.append("</ListBucketResult>")
        return 200, {}, _XML + "".join(parts).encode()

    def _delete_many(self, b: _Bucket, body: bytes):
        import xml.etree.ElementTree as ET
        root = ET.fromstring(body)
        keys = [k for obj in root.iter() if obj.tag.rsplit("}", 1)[-1] == "Object"
                for k in _text(obj, "Key")]
        quiet = [t.strip().lower() for t in _text(root, "Quiet")] == ["true"]
        with self._lock:
            for k in keys:
                b.delete(k)
        out = "" if quiet else "".join(f"<Deleted><Key>{escape(k)}</Key></Deleted>"
                                       for k in keys)
        return 200, {}, _XML + (f'<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                                f"{out}</DeleteResult>").encode()

    def _multipart(self, method: str, bucket: str, b: _Bucket, key: str, q, body: bytes):
        if method == "POST" and "uploads" in q:
            uid = uuid.uuid4().hex
            with self._lock:
                self._uploads[uid] = (bucket, key, {})
            return 200, {}, _XML + (f"<InitiateMultipartUploadResult><Bucket>{escape(bucket)}"
                                    f"</Bucket><Key>{escape(key)}</Key><UploadId>{uid}"
                                    f"</UploadId></InitiateMultipartUploadResult>").encode()
        uid = q.get("uploadId", "")
        up = self._uploads.get(uid)
        if up is None:
            return 404, {}, _error("NoSuchUpload", uid)
        if method == "PUT":
            part = int(q["partNumber"])
            with self._lock:
                up[2][part] = body
            return 200, {"ETag": f'"{hashlib.md5(body).hexdigest()}"'}, b""
        if method == "DELETE":
            with self._lock:
                self._uploads.pop(uid, None)
            return 204, {}, b""
        if method == "POST":
            import xml.etree.ElementTree as ET
            numbers = [int(n) for n in _text(ET.fromstring(body), "PartNumber")] if body \
                else sorted(up[2])
            with self._lock:
                data = b"".join(up[2][n] for n in numbers)
                digest = hashlib.md5(b"".join(hashlib.md5(up[2][n]).digest()
                                              for n in numbers)).hexdigest()
                obj = _Object(data, f'"{digest}-{len(numbers)}"')
                b.put(key, obj)
                self._uploads.pop(uid, None)
            return 200, {}, _XML + (f"<CompleteMultipartUploadResult><Bucket>{escape(bucket)}"
                                    f"</Bucket><Key>{escape(key)}</Key><ETag>"
                                    f"{escape(obj.etag)}</ETag>"
                                    f"</CompleteMultipartUploadResult>").encode()
        return 501, {}, _error("NotImplemented", f"{method} multipart ?{q}")


class S3ServerProcess:
    """An S3Server in a process of its own (`python s3_server.py --port P`): its threads never
    wait for the interpreter lock of the process measured. Same `url`, `port`, `stop()`."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = start_process([sys.executable, os.path.abspath(__file__),
                                   "--port", str(self.port)], self.port, "the S3 server")

    def stop(self) -> None:
        stop_process(self.proc)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="a small in-memory S3 server")
    ap.add_argument("--port", type=int, required=True)
    a = ap.parse_args(argv)
    server = S3Server(a.port)
    try:
        server._thread.join()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

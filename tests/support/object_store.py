#!/usr/bin/env python3
"""Local object stores for ringfeed's tests, on 127.0.0.1, free ports, bounded in time.

* ``S3rver``: the npm package s3rver (real S3 REST: ListObjectsV2 with
  continuation tokens, Range GET, HEAD, S3 error bodies; not If-Match: see
  FaultProxy). It checks
  that a SigV4 request names its access key (``S3RVER``, secret ``S3RVER``)
  but does not verify the signature itself: tests/sigv4_tests.cpp checks the
  signer against AWS's published vectors. Installed by ``./bootstrap.sh deps``
  into ``~/.cache/ringfeed/node`` (or ``$RINGFEED_NODE_PREFIX``);
  ``$RINGFEED_S3RVER`` names another executable.
* ``HttpsServer``: a static file server over TLS with a self-signed
  certificate made here (``openssl`` CLI) for 127.0.0.1 and localhost; serves
  Range (206, 416), HEAD, ETag and If-Match (412). Clients trust it through
  ``ca_file`` (curl: CURLOPT_CAINFO, ``CURL_CA_BUNDLE``, ``SSL_CERT_FILE``).
* ``FaultProxy``: an HTTP (or HTTPS) reverse proxy in front of either, with
  faults injected per request: ``status`` (any status, 503 by default),
  ``slowdown`` (503 + S3's SlowDown XML + x-amz-request-id),
  ``internal_error`` (500 + InternalError XML), ``forbidden`` (403
  AccessDenied), ``reset`` (headers and ``after_bytes`` of the body, then a
  TCP reset), ``truncate`` (the same, then a clean close: a short read),
  ``slow_first_byte`` (``delay_s`` before anything, then the real answer),
  ``stall`` (headers and ``after_bytes``, then nothing for ``delay_s``, then
  close), ``list_extra`` (a ListObjectsV2 answer gains a ``<Contents>`` for
  each of ``keys``, objects s3rver cannot hold: it folds "." and ".." key
  segments). Each fault applies to the next ``count`` requests matching
  ``method`` and the ``path`` regex (path with query); then requests pass.
  The proxy also answers S3's 412 PreconditionFailed when If-Match does not
  name the object's ETag, which s3rver itself does not check.

Python (pytest)::

    with S3rver(tmp, buckets=["data"]) as s3, FaultProxy(s3.endpoint) as proxy:
        s3.put("data", "train/a.jpg", b"...")
        proxy.add_fault("slowdown", count=3)
        ... point the client at proxy.url ...

C++ tests (no Python API): ``RINGFEED_OBJECT_STORE`` names this script (CTest
sets it); start ::

    python3 object_store.py serve --s3 BUCKET [--s3 BUCKET2] [--https DIR]
        [--proxy s3|https] [--proxy-tls] [--populate BUCKET=DIR] --ready-file F [--lifetime 300]

It writes one JSON object to F once everything listens::

    {"s3": {"endpoint": "http://127.0.0.1:P", "access_key_id": "S3RVER", "secret_access_key": "S3RVER",
            "region": "us-east-1", "directory": ...},
     "https": {"url": "https://127.0.0.1:P", "ca_file": ".../cert.pem", "root": DIR},
     "proxy": {"url": "http://127.0.0.1:P", "control": "http://127.0.0.1:P/__proxy", "upstream": ...}}

and serves until its standard input reaches end of file (the parent closed
the pipe or died), SIGTERM/SIGINT, or ``--lifetime`` seconds. It exits 77,
printing why, when s3rver is not installed. Faults are set over HTTP on the
proxy's own port: ``POST /__proxy/faults`` with a JSON body
``{"kind": "slowdown", "count": 3, "path": "regex", "method": "GET",
"status": 503, "delay_s": 1.0, "after_bytes": 100}``, ``DELETE
/__proxy/faults`` (clears faults and the log), ``GET /__proxy/log`` (JSON list
of ``{"method", "path", "range", "fault", "status"}``, one per request).
"""
from __future__ import annotations

import argparse
import ctypes
import email.utils
import hashlib
import http.client
import http.server
import json
import os
import pathlib
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from typing import Optional

SKIP_EXIT_CODE = 77
S3RVER_KEY = "S3RVER"  # s3rver's built-in account: access key id and secret
DEFAULT_LIFETIME_S = 600.0
START_TIMEOUT_S = 30.0



def _reply(handler, status: int, body: bytes, headers=()) -> None:
    """A whole response from a BaseHTTPRequestHandler: status, headers,
    Content-Length, and the body unless the request was a HEAD."""
    handler.send_response(status)
    for k, v in headers:
        handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)

class Unavailable(RuntimeError):
    """A server this machine cannot run (the message says what to install)."""


# --- s3rver ---------------------------------------------------------------------

def s3rver_executable() -> str:
    explicit = os.environ.get("RINGFEED_S3RVER")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise Unavailable(f"RINGFEED_S3RVER={explicit!r} is not an executable file")
        return explicit
    prefix = os.environ.get("RINGFEED_NODE_PREFIX") or os.path.expanduser("~/.cache/ringfeed/node")
    candidate = os.path.join(prefix, "node_modules", ".bin", "s3rver")
    if os.access(candidate, os.X_OK) and shutil.which("node"):
        return candidate
    raise Unavailable(f"s3rver is not installed (looked for {candidate} and node on PATH): "
                      "run ./bootstrap.sh deps, or set RINGFEED_S3RVER")


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the process that started it dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class S3rver:
    """s3rver on 127.0.0.1 and a free port, serving ``directory``; ``buckets`` exist at start."""

    def __init__(self, directory, buckets=(), lifetime_s: float = DEFAULT_LIFETIME_S):
        self.directory = pathlib.Path(directory)
        self.buckets = list(buckets)
        self.lifetime_s = lifetime_s
        self.endpoint = ""
        self.port = 0
        self.region = "us-east-1"
        self.access_key_id = S3RVER_KEY
        self.secret_access_key = S3RVER_KEY
        self._proc: Optional[subprocess.Popen] = None
        self._timer: Optional[threading.Timer] = None
        self._client = None

    def start(self) -> "S3rver":
        exe = s3rver_executable()
        self.directory.mkdir(parents=True, exist_ok=True)
        args = [exe, "-d", str(self.directory), "-a", "127.0.0.1", "-p", "0", "--silent"]
        for b in self.buckets:
            args += ["--configure-bucket", b]
        env = dict(os.environ)
        # s3rver's ListObjectsV2 continuation tokens use DES, which Node 17+
        # has only through OpenSSL 3's legacy provider.
        env["NODE_OPTIONS"] = (env.get("NODE_OPTIONS", "") + " --openssl-legacy-provider").strip()
        self._proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, env=env, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + START_TIMEOUT_S
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        seen = b""
        # Raw reads from the descriptor: a buffered readline() could pull the
        # "listening" line into Python's buffer, where select() never sees it.
        while time.monotonic() < deadline and not self.port:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                seen += chunk
                m = re.search(rb"S3rver listening on [^:\s]+:(\d+)\r?\n", seen)
                if m:
                    self.port = int(m.group(1))
            elif self._proc.poll() is not None:
                break
        if not self.port:
            self.stop()
            raise RuntimeError(f"s3rver ({exe}) did not start within {START_TIMEOUT_S:.0f} s: "
                               f"{seen.decode(errors='replace')[-2000:]}")
        # Keep draining its output so a chatty server never blocks on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._timer = threading.Timer(self.lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def _drain(self) -> None:
        proc = self._proc
        if proc is not None and proc.stdout is not None:
            for _ in iter(proc.stdout.readline, b""):
                pass

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self) -> "S3rver":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def client(self, endpoint: Optional[str] = None):
        """A boto3 S3 client for this server (path-style), or for ``endpoint`` (a proxy in front)."""
        import boto3  # python3-boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=endpoint or self.endpoint, region_name=self.region,
                            aws_access_key_id=self.access_key_id, aws_secret_access_key=self.secret_access_key,
                            config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}))

    def put(self, bucket: str, key: str, data: bytes) -> str:
        """Stores an object; returns its ETag (quotes included)."""
        if self._client is None:
            self._client = self.client()
        return self._client.put_object(Bucket=bucket, Key=key, Body=data)["ETag"]

    def populate(self, bucket: str, root, prefix: str = "") -> int:
        """Uploads every file under ``root`` as ``prefix + relative path``; returns the count."""
        root = pathlib.Path(root)
        n = 0
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            self.put(bucket, prefix + path.relative_to(root).as_posix(), path.read_bytes())
            n += 1
        return n


# --- HTTPS static server ----------------------------------------------------------

def make_self_signed_cert(directory) -> tuple[str, str]:
    """(cert.pem, key.pem) for CN=127.0.0.1 with IP:127.0.0.1 and DNS:localhost, valid 2 days."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "cert.pem", directory / "key.pem"
    openssl = shutil.which("openssl")
    if openssl is None:
        raise Unavailable("the openssl command is not installed (Debian: openssl)")
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return str(cert), str(key)


def _etag(st: os.stat_result) -> str:
    return '"' + hashlib.sha1(f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}".encode()).hexdigest() + '"'


def parse_range(header: str, size: int):
    """(start, end inclusive) of a single ``bytes=`` range; None: whole body; 'bad': unsatisfiable."""
    m = re.fullmatch(r"\s*bytes=(\d*)-(\d*)\s*", header or "")
    if not m or (not m.group(1) and not m.group(2)):
        return None
    if m.group(1):
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) else size - 1
    else:
        n = int(m.group(2))
        if n == 0:
            return "bad"
        start, end = max(0, size - n), size - 1
    if start >= size or end < start:
        return "bad"
    return start, min(end, size - 1)


class _Quiet:
    def log_message(self, fmt, *args):  # noqa: D401 - tests want quiet servers
        pass


class _StaticHandler(_Quiet, http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    root: pathlib.Path = pathlib.Path(".")

    def _send(self, status: int, body: bytes, headers=()) -> None:
        _reply(self, status, body, headers)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        rel = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
        path = (self.root / rel).resolve()
        if self.root not in path.parents and path != self.root or not path.is_file():
            self._send(404, b"not found\n", [("Content-Type", "text/plain")])
            return
        st = path.stat()
        etag = _etag(st)
        common = [("ETag", etag), ("Accept-Ranges", "bytes"),
                  ("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))]
        if_match = self.headers.get("If-Match")
        if if_match and if_match.strip() != "*" and etag not in [t.strip() for t in if_match.split(",")]:
            self._send(412, b"precondition failed\n", [("Content-Type", "text/plain")])
            return
        data = path.read_bytes()
        rng = parse_range(self.headers.get("Range", ""), len(data))
        if rng == "bad":
            self._send(416, b"", [("Content-Range", f"bytes */{len(data)}")])
        elif rng is None:
            self._send(200, data, common + [("Content-Type", "application/octet-stream")])
        else:
            start, end = rng
            self._send(206, data[start:end + 1],
                       common + [("Content-Range", f"bytes {start}-{end}/{len(data)}"),
                                 ("Content-Type", "application/octet-stream")])


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default listen backlog is 5: a client opening many
    # connections at once (libcurl, one per request in flight) overflowed
    # it while the accept thread waited for the GIL, and the dropped SYNs
    # were retried by the kernel after 1, 3, 7 s: reads timed out with 0 bytes.
    request_queue_size = 256

    def finish_request(self, request, client_address):
        # TLS handshakes here, in the connection's own thread: done in
        # accept() (do_handshake_on_connect), one slow or abandoned client
        # held up every other connection, and reads timed out with 0 bytes.
        if isinstance(request, ssl.SSLSocket):
            request.settimeout(30)
            try:
                request.do_handshake()
            except (OSError, ssl.SSLError):
                return
        super().finish_request(request, client_address)


class _ThreadedServer:
    """An HTTP(S) server on 127.0.0.1:0 in a background thread, stopped after ``lifetime_s``."""

    scheme = "http"

    def __init__(self, handler, tls: Optional[tuple[str, str]] = None, lifetime_s: float = DEFAULT_LIFETIME_S):
        self._handler = handler
        self._tls = tls
        self.lifetime_s = lifetime_s
        self._server: Optional[_Server] = None
        self._timer: Optional[threading.Timer] = None
        self.port = 0
        self.url = ""

    def start(self):
        server = _Server(("127.0.0.1", 0), self._handler)
        if self._tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*self._tls)
            server.socket = ctx.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
        self._server = server
        self.port = server.server_address[1]
        self.url = f"{'https' if self._tls else 'http'}://127.0.0.1:{self.port}"
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        self._timer = threading.Timer(self.lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class HttpsServer(_ThreadedServer):
    """Static files under ``root`` over TLS; ``ca_file`` is the certificate to trust."""

    def __init__(self, root, cert_dir, lifetime_s: float = DEFAULT_LIFETIME_S):
        self.root = pathlib.Path(root).resolve()
        self.ca_file, key = make_self_signed_cert(cert_dir)
        self.key_file = key
        handler = type("StaticHandler", (_StaticHandler,), {"root": self.root})
        super().__init__(handler, tls=(self.ca_file, key), lifetime_s=lifetime_s)


# --- fault-injecting proxy ---------------------------------------------------------

FAULT_KINDS = ("status", "slowdown", "internal_error", "forbidden", "reset", "truncate", "slow_first_byte", "stall",
               "list_extra")
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
              "transfer-encoding", "upgrade", "content-length"}


def s3_error_xml(code: str, message: str, request_id: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
            f"<RequestId>{request_id}</RequestId><HostId>ringfeed-fault-proxy</HostId></Error>").encode()


class _ProxyState:
    def __init__(self, upstream: str, ca_file: Optional[str], enforce_if_match: bool, token_check=None):
        self.enforce_if_match = enforce_if_match
        self.token_check = token_check  # x-amz-security-token (or None) -> None, or why S3 would refuse it
        u = urllib.parse.urlsplit(upstream)
        self.upstream_tls = u.scheme == "https"
        self.upstream_host = u.hostname or "127.0.0.1"
        self.upstream_port = u.port or (443 if self.upstream_tls else 80)
        self.ca_file = ca_file
        self.lock = threading.Lock()
        self.faults: list[dict] = []
        self.log: list[dict] = []
        self.counter = 0
        self.delaying = 0  # requests now in a slow_first_byte delay
        self.stopping = threading.Event()

    def take_fault(self, method: str, path: str) -> Optional[dict]:
        with self.lock:
            for f in self.faults:
                if f["count"] > 0 and (not f.get("method") or f["method"] == method) and \
                        re.search(f.get("path") or "", path):
                    f["count"] -= 1
                    self.counter += 1
                    return dict(f, request_id=f"ringfeed-fault-{self.counter}")
        return None


class _ProxyHandler(_Quiet, http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: _ProxyState

    # control --------------------------------------------------------------
    def _control(self) -> None:
        st = self.state
        body = b""
        if self.command == "POST" and self.path == "/__proxy/faults":
            n = int(self.headers.get("Content-Length") or 0)
            try:
                spec = json.loads(self.rfile.read(n) or b"{}")
                FaultProxy.check_fault(spec)
            except (ValueError, TypeError) as e:
                self._reply(400, str(e).encode(), [("Content-Type", "text/plain")])
                return
            with st.lock:
                st.faults.append(spec)
            status = 200
        elif self.command == "DELETE" and self.path == "/__proxy/faults":
            with st.lock:
                st.faults.clear()
                st.log.clear()
            status = 200
        elif self.command == "GET" and self.path == "/__proxy/log":
            with st.lock:
                body = json.dumps(st.log).encode()
            status = 200
        else:
            status, body = 404, b"unknown control request\n"
        self._reply(status, body, [("Content-Type", "application/json")])

    def _reply(self, status: int, body: bytes, headers=()) -> None:
        _reply(self, status, body, headers)

    # proxying -------------------------------------------------------------
    def _forward(self) -> tuple[int, list[tuple[str, str]], bytes]:
        st = self.state
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        if st.upstream_tls:
            ctx = ssl.create_default_context(cafile=st.ca_file) if st.ca_file else ssl._create_unverified_context()
            conn = http.client.HTTPSConnection(st.upstream_host, st.upstream_port, context=ctx, timeout=30)
        else:
            conn = http.client.HTTPConnection(st.upstream_host, st.upstream_port, timeout=30)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP], data
        finally:
            conn.close()

    def _handle(self) -> None:
        if self.path.startswith("/__proxy/"):
            self._control()
            return
        st = self.state
        fault = st.take_fault(self.command, self.path)
        kind = fault["kind"] if fault else None
        token = self.headers.get("x-amz-security-token")
        refused = st.token_check(token) if st.token_check else None
        entry = {"method": self.command, "path": self.path, "range": self.headers.get("Range"), "fault": kind}
        with st.lock:
            # Others held in their first-byte delay as this one arrives: a
            # client that waits for each answer before the next request
            # always sees 0 (the delay ends before the answer is sent).
            entry["overlapping"] = st.delaying
            if kind == "slow_first_byte" and not refused:
                st.delaying += 1  # counted from the moment it is logged; ended after the delay
            entry["token"] = token
            st.log.append(entry)
        rid = fault["request_id"] if fault else ""
        if refused:  # S3's answer to a request signed with expired credentials
            n = int(self.headers.get("Content-Length") or 0)
            if n:
                self.rfile.read(n)
            entry["status"] = 400
            self._reply(400, s3_error_xml("ExpiredToken", refused, "ringfeed-proxy-token"),
                        [("Content-Type", "application/xml")])
            return
        if kind in ("status", "slowdown", "internal_error", "forbidden"):
            n = int(self.headers.get("Content-Length") or 0)
            if n:
                self.rfile.read(n)
            if kind == "status":
                status, body = int(fault.get("status", 503)), fault.get("body", "").encode()
                ctype = "text/plain"
            else:
                status, code, msg = {"slowdown": (503, "SlowDown", "Please reduce your request rate."),
                                     "internal_error": (500, "InternalError", "We encountered an internal error."),
                                     "forbidden": (403, "AccessDenied", "Access Denied")}[kind]
                body, ctype = s3_error_xml(code, msg, rid), "application/xml"
            entry["status"] = status
            self._reply(status, body, [("Content-Type", ctype), ("x-amz-request-id", rid)])
            return
        if kind == "slow_first_byte":
            try:
                st.stopping.wait(float(fault.get("delay_s", 1.0)))
            finally:
                with st.lock:
                    st.delaying -= 1
        status, headers, data = self._forward()
        if_match = self.headers.get("If-Match")
        etag = next((v for k, v in headers if k.lower() == "etag"), None)
        if st.enforce_if_match and if_match and if_match.strip() != "*" and status in (200, 206) and \
                etag not in [t.strip() for t in if_match.split(",")]:
            # s3rver ignores If-Match on GET; S3 answers 412 PreconditionFailed.
            entry["status"] = 412
            self._reply(412, s3_error_xml("PreconditionFailed", "At least one of the pre-conditions you "
                                          "specified did not hold", rid or "ringfeed-proxy-if-match"),
                        [("Content-Type", "application/xml")])
            return
        entry["status"] = status
        if kind == "list_extra" and status == 200:
            extra = "".join(f"<Contents><Key>{urllib.parse.quote(k, safe='/')}</Key><Size>5</Size>"
                            f'<ETag>"extra"</ETag></Contents>' for k in fault.get("keys", []))
            data = data.replace(b"</ListBucketResult>", extra.encode() + b"</ListBucketResult>")
        if kind in ("reset", "truncate", "stall"):
            cut = min(int(fault.get("after_bytes", len(data) // 2)), len(data))
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:cut])
            self.wfile.flush()
            if kind == "stall":
                st.stopping.wait(float(fault.get("delay_s", 30.0)))
            elif kind == "reset":
                # SO_LINGER 0: close() sends RST instead of FIN. Closed here,
                # before the server's shutdown(SHUT_WR) could send a FIN first.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                self.wfile.close()
                self.rfile.close()
                self.connection.close()
            self.close_connection = True
            return
        self._reply(status, data, headers)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _handle


class FaultProxy(_ThreadedServer):
    """A reverse proxy in front of ``upstream`` (http or https URL) with per-request faults.

    With ``enforce_if_match`` (default) a GET or HEAD whose If-Match does not
    name the upstream answer's ETag gets S3's 412 PreconditionFailed: s3rver
    itself ignores If-Match, so tests of a replaced object go through a proxy.
    ``token_check(token)`` (the request's x-amz-security-token, or None)
    returning a reason answers S3's 400 ExpiredToken with it: s3rver checks
    no credentials at all."""

    def __init__(self, upstream: str, tls: Optional[tuple[str, str]] = None, upstream_ca_file: Optional[str] = None,
                 lifetime_s: float = DEFAULT_LIFETIME_S, enforce_if_match: bool = True, token_check=None):
        self.upstream = upstream
        self.state = _ProxyState(upstream, upstream_ca_file, enforce_if_match, token_check)
        handler = type("ProxyHandler", (_ProxyHandler,), {"state": self.state})
        super().__init__(handler, tls=tls, lifetime_s=lifetime_s)

    @property
    def control(self) -> str:
        return self.url + "/__proxy"

    @staticmethod
    def check_fault(spec: dict) -> None:
        if not isinstance(spec, dict) or spec.get("kind") not in FAULT_KINDS:
            raise ValueError(f"fault kind must be one of {', '.join(FAULT_KINDS)}: got {spec!r}")
        spec.setdefault("count", 1)
        if not isinstance(spec["count"], int) or spec["count"] < 0:
            raise ValueError(f"fault count must be a non-negative integer: got {spec['count']!r}")
        re.compile(spec.get("path") or "")

    def add_fault(self, kind: str, count: int = 1, path: str = "", method: str = "", **params) -> None:
        """The next ``count`` requests whose method is ``method`` (any if empty) and whose path
        (with query) matches the regex ``path`` get fault ``kind``; params: status, body, delay_s, after_bytes."""
        spec = dict(params, kind=kind, count=count, path=path, method=method)
        self.check_fault(spec)
        with self.state.lock:
            self.state.faults.append(spec)

    def clear(self) -> None:
        with self.state.lock:
            self.state.faults.clear()
            self.state.log.clear()

    def log(self) -> list[dict]:
        with self.state.lock:
            return [dict(e) for e in self.state.log]

    def stop(self) -> None:
        self.state.stopping.set()  # stalled and slow answers end now
        super().stop()


# --- CLI ---------------------------------------------------------------------------

def serve(args) -> int:
    own_work = args.work_dir is None
    work = pathlib.Path(args.work_dir or tempfile.mkdtemp(prefix="ringfeed-object-store-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        return _serve(args, work)
    finally:
        if own_work:
            shutil.rmtree(work, ignore_errors=True)


def _serve(args, work: pathlib.Path) -> int:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    running = []
    info: dict = {}
    try:
        s3 = None
        if args.s3:
            s3 = S3rver(work / "s3", buckets=args.s3, lifetime_s=args.lifetime).start()
            running.append(s3)
            for spec in args.populate or []:
                bucket, _, root = spec.partition("=")
                s3.populate(bucket, root)
            info["s3"] = {"endpoint": s3.endpoint, "access_key_id": s3.access_key_id,
                          "secret_access_key": s3.secret_access_key, "region": s3.region,
                          "directory": str(s3.directory)}
        https = None
        if args.https:
            https = HttpsServer(args.https, work / "tls", lifetime_s=args.lifetime).start()
            running.append(https)
            info["https"] = {"url": https.url, "ca_file": https.ca_file, "root": str(https.root)}
        if args.proxy:
            target = {"s3": s3, "https": https}[args.proxy]
            if target is None:
                print(f"--proxy {args.proxy} needs --{args.proxy}", file=sys.stderr)
                return 2
            tls = None
            if args.proxy_tls:
                tls = (https.ca_file, https.key_file) if https else make_self_signed_cert(work / "proxy-tls")
            proxy = FaultProxy(target.url if target is https else target.endpoint, tls=tls,
                               upstream_ca_file=https.ca_file if target is https else None,
                               lifetime_s=args.lifetime).start()
            running.append(proxy)
            info["proxy"] = {"url": proxy.url, "control": proxy.control, "upstream": proxy.upstream}
            if tls:
                info["proxy"]["ca_file"] = tls[0]
    except Unavailable as e:
        print(f"SKIPPED: {e}", flush=True)
        for s in reversed(running):
            s.stop()
        return SKIP_EXIT_CODE
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"ERROR: {e}", file=sys.stderr, flush=True)
        for s in reversed(running):
            s.stop()
        return 1
    tmp = pathlib.Path(str(args.ready_file) + ".tmp")
    tmp.write_text(json.dumps(info))
    os.replace(tmp, args.ready_file)  # readers never see half a file
    print(json.dumps(info), flush=True)

    def watch_stdin() -> None:
        try:
            while sys.stdin.buffer.read1(4096):
                pass
        except (OSError, ValueError):
            pass
        stop.set()

    if not args.ignore_stdin:
        threading.Thread(target=watch_stdin, daemon=True).start()
    stop.wait(args.lifetime)
    for s in reversed(running):
        s.stop()
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="start servers, write their addresses as JSON, serve until stdin closes")
    s.add_argument("--s3", action="append", metavar="BUCKET", help="run s3rver with this bucket (repeatable)")
    s.add_argument("--populate", action="append", metavar="BUCKET=DIR", help="upload DIR's files into BUCKET")
    s.add_argument("--https", metavar="DIR", help="serve DIR over HTTPS")
    s.add_argument("--proxy", choices=("s3", "https"), help="a fault proxy in front of that server")
    s.add_argument("--proxy-tls", action="store_true", help="the proxy itself speaks TLS")
    s.add_argument("--ready-file", required=True, type=pathlib.Path)
    s.add_argument("--work-dir", type=pathlib.Path, help="s3rver data and certificates (default: a new temp dir)")
    s.add_argument("--lifetime", type=float, default=DEFAULT_LIFETIME_S, help="exit after this many seconds")
    s.add_argument("--ignore-stdin", action="store_true", help="do not stop when stdin closes")
    args = p.parse_args(argv)
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())

"""The object-store harness's servers, on 127.0.0.1, free ports, bounded in
time: ``S3rver`` (the npm package s3rver), ``HttpsServer`` (static files
over TLS with a self-signed certificate made here) and ``_ThreadedServer``,
what HttpsServer and the fault proxy (object_store_proxy.py) run on. What
each serves, and how the tests start them, is said in object_store.py, the
harness's entry point and CLI.
"""
from __future__ import annotations

import ctypes
import email.utils
import hashlib
import http.server
import os
import pathlib
import re
import select
import shutil
import signal
import ssl
import subprocess
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

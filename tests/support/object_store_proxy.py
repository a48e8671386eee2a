"""The object-store harness's fault-injecting proxy (see object_store.py, the
entry point and its CLI): ``FaultProxy``, an HTTP (or HTTPS) reverse proxy
in front of s3rver or the HTTPS server, with faults injected per request
(the kinds are listed in object_store.py's docstring), and S3's 412
PreconditionFailed when If-Match does not name the object's ETag, which
s3rver itself does not check.
"""
from __future__ import annotations

import http.client
import http.server
import json
import re
import socket
import ssl
import threading
import urllib.parse
from typing import Optional

from object_store_servers import DEFAULT_LIFETIME_S, _Quiet, _reply, _ThreadedServer


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

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
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

# The servers and the proxy live in two modules beside this one; their
# public names are this module's API (``import object_store``).
from object_store_proxy import FAULT_KINDS, FaultProxy, s3_error_xml  # noqa: F401
from object_store_servers import (DEFAULT_LIFETIME_S, S3RVER_KEY, SKIP_EXIT_CODE, START_TIMEOUT_S,  # noqa: F401
                                  HttpsServer, S3rver, Unavailable, make_self_signed_cert, parse_range,
                                  s3rver_executable)


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

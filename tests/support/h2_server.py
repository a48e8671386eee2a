"""An HTTPS server that speaks HTTP/2, for tests that the client uses it.

``Http2Server(root, cert_dir)`` runs ``h2_server.js`` (Node's built-in
http2 module; Node comes with the s3rver install, ``./bootstrap.sh deps``)
on 127.0.0.1 and a free port with a self-signed certificate
(``object_store_servers.make_self_signed_cert``): ``url``, ``ca_file``, and
``log()``, the requests so far with the HTTP version each came in
("2.0" or "1.1"). Raises ``object_store_servers.Unavailable`` where node is missing.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import ssl
import subprocess
import time
import urllib.request

import object_store_servers

HERE = pathlib.Path(__file__).resolve().parent
START_TIMEOUT_S = 30


class Http2Server:
    def __init__(self, root, cert_dir):
        self.root = pathlib.Path(root)
        self.cert_dir = pathlib.Path(cert_dir)
        self.url = ""
        self.ca_file = ""
        self._proc = None

    def start(self) -> "Http2Server":
        node = shutil.which("node")
        if node is None:
            raise object_store_servers.Unavailable("node is not installed (./bootstrap.sh deps installs it)")
        self.ca_file, key = object_store_servers.make_self_signed_cert(self.cert_dir)
        ready = self.cert_dir / "h2-ready.json"
        self._proc = subprocess.Popen([node, str(HERE / "h2_server.js"), str(self.root), self.ca_file, key, str(ready)],
                                      stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready.exists():  # polling for the file the server writes, with a deadline
            if self._proc.poll() is not None:
                raise RuntimeError(f"h2_server.js exited ({self._proc.returncode}): {self._proc.stderr.read()!r}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"h2_server.js did not start within {START_TIMEOUT_S} s")
            time.sleep(0.02)
        self.url = f"https://127.0.0.1:{json.loads(ready.read_text())['port']}"
        return self

    def log(self) -> list[dict]:
        ctx = ssl.create_default_context(cafile=self.ca_file)
        with urllib.request.urlopen(self.url + "/__log", context=ctx, timeout=10) as r:  # HTTP/1.1
            return json.load(r)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.stdin.close()  # the server exits when its stdin ends
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

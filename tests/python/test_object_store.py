"""The object-store harness works: each server, each fault, the CLI.

Run (ctest: object_store_tests):
    /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python/test_object_store.py
Skips (naming why) when s3rver is not installed; the HTTPS and proxy tests
need only Python and openssl.
"""
from __future__ import annotations

import http.client
import json
import os
import pathlib
import socket
import ssl
import subprocess
import sys
import time
import urllib.request

import pytest

SUPPORT = pathlib.Path(__file__).resolve().parent.parent / "support"  # the harness under test
sys.path.insert(0, str(SUPPORT))
import object_store as store  # noqa: E402

STEP_TIMEOUT_S = 10  # no single request in these tests may take longer


def s3rver_or_skip() -> None:
    try:
        store.s3rver_executable()
    except store.Unavailable as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    s3rver_or_skip()
    with store.S3rver(tmp_path_factory.mktemp("s3rver"), buckets=["data"], lifetime_s=300) as server:
        yield server


@pytest.fixture(scope="module")
def www(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    (root / "shards").mkdir()
    (root / "shards" / "shard-000000.tar").write_bytes(bytes(range(256)) * 40)  # 10240 bytes
    with store.HttpsServer(root, tmp_path_factory.mktemp("tls"), lifetime_s=300) as server:
        yield server


def https_get(server, path, headers=None, method="GET"):
    ctx = ssl.create_default_context(cafile=server.ca_file)
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=ctx, timeout=STEP_TIMEOUT_S)
    conn.request(method, path, headers=headers or {})
    r = conn.getresponse()
    return r.status, dict(r.getheaders()), r.read()


# --- s3rver ---------------------------------------------------------------------

def test_s3rver_lists_pages_with_continuation_tokens(s3):
    c = s3.client()
    for i in range(5):
        s3.put("data", f"list/k{i}.bin", b"x" * i)
    keys, token, pages = [], None, 0
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = c.list_objects_v2(Bucket="data", Prefix="list/", MaxKeys=2, **kw)
        pages += 1
        keys += [(o["Key"], o["Size"]) for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    assert pages == 3  # needs NODE_OPTIONS=--openssl-legacy-provider on Node 17+
    assert keys == [(f"list/k{i}.bin", i) for i in range(5)]


def test_s3rver_range_head_etag_and_errors(s3):
    c = s3.client()
    etag = s3.put("data", "obj/a b+c.bin", bytes(range(100)))
    assert c.get_object(Bucket="data", Key="obj/a b+c.bin", Range="bytes=10-19")["Body"].read() == bytes(range(10, 20))
    head = c.head_object(Bucket="data", Key="obj/a b+c.bin")
    assert head["ContentLength"] == 100 and head["ETag"] == etag
    with pytest.raises(c.exceptions.NoSuchKey):
        c.get_object(Bucket="data", Key="obj/missing")
    # s3rver ignores If-Match (the proxy enforces it: test_proxy_enforces_if_match_for_s3rver).
    assert c.get_object(Bucket="data", Key="obj/a b+c.bin", IfMatch='"0000"')["ContentLength"] == 100


def test_s3rver_populate_uploads_a_tree(s3, tmp_path):
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "1.jpg").write_bytes(b"one")
    (tmp_path / "dog.jpg").write_bytes(b"two")
    assert s3.populate("data", tmp_path, prefix="tree/") == 2
    r = s3.client().list_objects_v2(Bucket="data", Prefix="tree/")
    assert [o["Key"] for o in r["Contents"]] == ["tree/cat/1.jpg", "tree/dog.jpg"]


def fake_s3rver(tmp_path, monkeypatch, script: str) -> None:
    exe = tmp_path / "fake-s3rver"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)
    monkeypatch.setenv("RINGFEED_S3RVER", str(exe))


def test_s3rver_start_sees_a_line_written_with_the_one_before(monkeypatch, tmp_path):
    # s3rver prints an empty line and the "listening" line, sometimes in one
    # write: a buffered readline() kept the second in Python's buffer, where
    # select() never saw it, and start() waited out its 30 s (a flaky test).
    fake_s3rver(tmp_path, monkeypatch, "printf '\\nS3rver listening on 127.0.0.1:4321\\n'\nexec sleep 30\n")
    t = time.monotonic()
    server = store.S3rver(tmp_path / "d").start()
    try:
        assert server.port == 4321
        assert time.monotonic() - t < 5
    finally:
        server.stop()


def test_s3rver_start_reads_a_port_split_across_writes(monkeypatch, tmp_path):
    fake_s3rver(tmp_path, monkeypatch,
                "printf 'S3rver listening on 127.0.0.1:43'\nsleep 0.3\nprintf '21\\n'\nexec sleep 30\n")
    server = store.S3rver(tmp_path / "d").start()
    try:
        assert server.port == 4321
    finally:
        server.stop()


def test_s3rver_missing_is_a_skip_with_the_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("RINGFEED_S3RVER", str(tmp_path / "nope"))
    with pytest.raises(store.Unavailable, match="RINGFEED_S3RVER"):
        store.s3rver_executable()


# --- HTTPS ------------------------------------------------------------------------

def test_https_verifies_with_the_ca_file_and_serves_ranges(www):
    status, headers, body = https_get(www, "/shards/shard-000000.tar")
    assert status == 200 and len(body) == 10240
    status, headers, body = https_get(www, "/shards/shard-000000.tar", {"Range": "bytes=256-511"})
    assert status == 206 and body == bytes(range(256)) and headers["Content-Range"] == "bytes 256-511/10240"
    status, _, body = https_get(www, "/shards/shard-000000.tar", {"Range": "bytes=-10"})
    assert status == 206 and body == bytes(range(246, 256))
    status, headers, _ = https_get(www, "/shards/shard-000000.tar", {"Range": "bytes=20000-"})
    assert status == 416 and headers["Content-Range"] == "bytes */10240"
    status, headers, body = https_get(www, "/shards/shard-000000.tar", method="HEAD")
    assert status == 200 and headers["Content-Length"] == "10240" and body == b""


def test_https_etag_if_match_and_missing(www):
    _, headers, _ = https_get(www, "/shards/shard-000000.tar", method="HEAD")
    etag = headers["ETag"]
    assert https_get(www, "/shards/shard-000000.tar", {"If-Match": etag})[0] == 200
    assert https_get(www, "/shards/shard-000000.tar", {"If-Match": '"other"'})[0] == 412
    assert https_get(www, "/nope.tar")[0] == 404
    assert https_get(www, "/../../etc/passwd")[0] == 404


def test_https_is_refused_without_trusting_the_certificate(www):
    ctx = ssl.create_default_context()  # the system store does not hold our certificate
    conn = http.client.HTTPSConnection("127.0.0.1", www.port, context=ctx, timeout=STEP_TIMEOUT_S)
    with pytest.raises(ssl.SSLCertVerificationError):
        conn.request("GET", "/shards/shard-000000.tar")


# --- fault proxy ----------------------------------------------------------------

@pytest.fixture
def proxy(www):
    with store.FaultProxy(www.url, upstream_ca_file=www.ca_file, lifetime_s=120) as p:
        yield p


def proxy_get(p, path="/shards/shard-000000.tar", headers=None, timeout=STEP_TIMEOUT_S):
    conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=timeout)
    conn.request("GET", path, headers=headers or {})
    return conn.getresponse()


def test_proxy_passes_requests_through(proxy):
    r = proxy_get(proxy, headers={"Range": "bytes=0-9"})
    assert r.status == 206 and r.read() == bytes(range(10))
    assert proxy.log() == [{"method": "GET", "path": "/shards/shard-000000.tar", "range": "bytes=0-9",
                            "fault": None, "overlapping": 0, "token": None, "status": 206}]


def test_proxy_token_check_answers_expired_token(www):
    refuse = {"stale": "The provided token has expired"}
    with store.FaultProxy(www.url, upstream_ca_file=www.ca_file, lifetime_s=120, token_check=refuse.get) as p:
        r = proxy_get(p, headers={"x-amz-security-token": "stale"})
        body = r.read().decode()
        assert r.status == 400 and "<Code>ExpiredToken</Code>" in body, body
        assert proxy_get(p, headers={"x-amz-security-token": "fresh"}).status == 200
        assert [(e["token"], e["status"]) for e in p.log()] == [("stale", 400), ("fresh", 200)]


def test_proxy_counts_requests_overlapping_a_delay(proxy):
    # Two requests, the second sent while the first waits out its delay.
    import threading
    proxy.add_fault("slow_first_byte", count=1, delay_s=1.0)
    first = threading.Thread(target=lambda: proxy_get(proxy).read())
    first.start()
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while not proxy.log():  # polling until the first request is in its delay, with a deadline
        assert time.monotonic() < deadline
        time.sleep(0.01)
    proxy_get(proxy).read()
    first.join()
    log = proxy.log()
    assert [e["overlapping"] for e in log] == [0, 1], log


def test_proxy_503_storm_then_recovery(proxy):
    proxy.add_fault("status", count=3, status=503)
    assert [proxy_get(proxy).status for _ in range(4)] == [503, 503, 503, 200]


def test_proxy_slowdown_body_is_s3_xml_with_a_request_id(proxy):
    proxy.add_fault("slowdown")
    r = proxy_get(proxy)
    body = r.read().decode()
    assert r.status == 503
    assert "<Code>SlowDown</Code>" in body
    rid = r.getheader("x-amz-request-id")
    assert rid and f"<RequestId>{rid}</RequestId>" in body


def test_proxy_internal_error_and_forbidden(proxy):
    proxy.add_fault("internal_error")
    proxy.add_fault("forbidden")
    r1, r2 = proxy_get(proxy), proxy_get(proxy)
    assert (r1.status, r2.status) == (500, 403)
    assert "<Code>InternalError</Code>" in r1.read().decode()
    assert "<Code>AccessDenied</Code>" in r2.read().decode()


def test_proxy_reset_mid_body(proxy):
    proxy.add_fault("reset", after_bytes=1000)
    r = proxy_get(proxy)
    assert r.status == 200 and r.getheader("Content-Length") == "10240"
    got = b""
    with pytest.raises((ConnectionResetError, http.client.IncompleteRead)) as e:
        while True:
            chunk = r.read1(65536)
            if not chunk:
                raise http.client.IncompleteRead(got)
            got += chunk
    assert len(got) <= 1000
    assert isinstance(e.value, ConnectionResetError), "the proxy closed with FIN, not RST"


def test_proxy_truncate_is_a_short_read(proxy):
    proxy.add_fault("truncate", after_bytes=4000)
    r = proxy_get(proxy)
    with pytest.raises(http.client.IncompleteRead) as e:
        r.read()
    assert len(e.value.partial) == 4000


def test_proxy_slow_first_byte(proxy):
    proxy.add_fault("slow_first_byte", delay_s=1.0)
    t = time.monotonic()
    r = proxy_get(proxy)
    assert r.status == 200 and len(r.read()) == 10240
    assert time.monotonic() - t >= 0.95


def test_proxy_stalled_body_times_out_a_reader(proxy):
    proxy.add_fault("stall", after_bytes=100, delay_s=20)
    r = proxy_get(proxy, timeout=1.0)
    assert r.status == 200
    t = time.monotonic()
    with pytest.raises((socket.timeout, TimeoutError)):
        r.read()
    assert 0.9 <= time.monotonic() - t < 5


def test_proxy_faults_match_method_and_path(proxy):
    proxy.add_fault("status", count=5, status=500, path=r"other", method="GET")
    proxy.add_fault("status", count=1, status=502, method="HEAD")
    assert proxy_get(proxy).status == 200
    assert proxy_get(proxy, "/shards/other.tar").status == 500
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=STEP_TIMEOUT_S)
    conn.request("HEAD", "/shards/shard-000000.tar")
    assert conn.getresponse().status == 502


def test_proxy_control_over_http(proxy):
    def call(method, path, body=None):
        req = urllib.request.Request(proxy.control + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
        with urllib.request.urlopen(req, timeout=STEP_TIMEOUT_S) as r:
            return r.status, r.read()
    assert call("POST", "/faults", {"kind": "slowdown", "count": 2})[0] == 200
    assert [proxy_get(proxy).status for _ in range(3)] == [503, 503, 200]
    status, body = call("GET", "/log")
    assert [e["fault"] for e in json.loads(body)] == ["slowdown", "slowdown", None]
    assert call("DELETE", "/faults")[0] == 200
    assert json.loads(call("GET", "/log")[1]) == []
    with pytest.raises(urllib.error.HTTPError) as e:
        call("POST", "/faults", {"kind": "meteor"})
    assert e.value.code == 400


def test_proxy_in_front_of_s3rver(s3):
    with store.FaultProxy(s3.endpoint, lifetime_s=60) as p:
        s3.put("data", "via/proxy.bin", b"abc")
        p.add_fault("slowdown", count=1)
        c = s3.client(endpoint=p.url)
        import botocore.exceptions
        with pytest.raises(botocore.exceptions.ClientError) as e:
            c.get_object(Bucket="data", Key="via/proxy.bin")
        assert e.value.response["Error"]["Code"] == "SlowDown"
        assert c.get_object(Bucket="data", Key="via/proxy.bin")["Body"].read() == b"abc"


def test_proxy_enforces_if_match_for_s3rver(s3):
    import botocore.exceptions
    with store.FaultProxy(s3.endpoint, lifetime_s=60) as p:
        etag = s3.put("data", "pinned.bin", b"v1")
        c = s3.client(endpoint=p.url)
        assert c.get_object(Bucket="data", Key="pinned.bin", IfMatch=etag)["Body"].read() == b"v1"
        s3.put("data", "pinned.bin", b"v2, replaced mid-epoch")
        with pytest.raises(botocore.exceptions.ClientError) as e:
            c.get_object(Bucket="data", Key="pinned.bin", IfMatch=etag, Range="bytes=0-1")
        assert e.value.response["Error"]["Code"] == "PreconditionFailed"
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412


def test_proxy_with_tls(www, tmp_path):
    with store.FaultProxy(www.url, tls=(www.ca_file, www.key_file), upstream_ca_file=www.ca_file,
                          lifetime_s=60) as p:
        assert p.url.startswith("https://")
        ctx = ssl.create_default_context(cafile=www.ca_file)
        conn = http.client.HTTPSConnection("127.0.0.1", p.port, context=ctx, timeout=STEP_TIMEOUT_S)
        conn.request("GET", "/shards/shard-000000.tar", headers={"Range": "bytes=0-3"})
        r = conn.getresponse()
        assert r.status == 206 and r.read() == bytes(range(4))


def test_servers_stop_after_their_lifetime(www):
    with store.FaultProxy(www.url, upstream_ca_file=www.ca_file, lifetime_s=0.5) as p:
        port = p.port
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            except OSError:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the proxy still listens 5 s after a 0.5 s lifetime")


# --- CLI (what C++ tests run) -------------------------------------------------------

def start_cli(tmp_path, *args):
    ready = tmp_path / "ready.json"
    proc = subprocess.Popen([sys.executable, str(SUPPORT / "object_store.py"), "serve", "--ready-file", str(ready),
                             *map(str, args)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not ready.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            return proc, None, out.decode() + err.decode()
        assert time.monotonic() < deadline, "the object store CLI did not get ready in 60 s"
        time.sleep(0.05)
    return proc, json.loads(ready.read_text()), ""


def test_cli_serves_until_stdin_closes(tmp_path):
    s3rver_or_skip()
    www = tmp_path / "www"
    www.mkdir()
    (www / "x.bin").write_bytes(b"payload")
    proc, info, _ = start_cli(tmp_path, "--s3", "data", "--https", www, "--proxy", "https", "--lifetime", 120)
    try:
        assert info["s3"]["access_key_id"] == "S3RVER"
        ctx = ssl.create_default_context(cafile=info["https"]["ca_file"])
        with urllib.request.urlopen(info["https"]["url"] + "/x.bin", context=ctx, timeout=STEP_TIMEOUT_S) as r:
            assert r.read() == b"payload"
        req = urllib.request.Request(info["proxy"]["control"] + "/faults", method="POST",
                                     data=json.dumps({"kind": "status", "status": 504}).encode())
        urllib.request.urlopen(req, timeout=STEP_TIMEOUT_S).close()
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(info["proxy"]["url"] + "/x.bin", timeout=STEP_TIMEOUT_S)
        assert e.value.code == 504
        with urllib.request.urlopen(info["s3"]["endpoint"] + "/data?list-type=2", timeout=STEP_TIMEOUT_S) as r:
            assert b"<ListBucketResult" in r.read()
    finally:
        proc.stdin.close()  # what a C++ test does by exiting
        assert proc.wait(timeout=15) == 0


def test_cli_exits_77_without_s3rver(tmp_path, monkeypatch):
    monkeypatch.setenv("RINGFEED_S3RVER", str(tmp_path / "missing"))
    proc, info, output = start_cli(tmp_path, "--s3", "data")
    assert info is None and proc.returncode == store.SKIP_EXIT_CODE
    assert "SKIPPED: RINGFEED_S3RVER=" in output


def test_cli_lifetime_bounds_it(tmp_path):
    www = tmp_path / "www"
    www.mkdir()
    proc, info, _ = start_cli(tmp_path, "--https", www, "--lifetime", 1, "--ignore-stdin")
    assert info is not None
    assert proc.wait(timeout=15) == 0

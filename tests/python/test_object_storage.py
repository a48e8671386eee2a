"""https:// and s3:// sources end to end, against servers the tests start on
127.0.0.1 (tests/support/object_store.py: s3rver, a TLS static server, a
fault-injecting proxy). Nothing leaves the machine.

What a user relies on: the same pixels and labels as the same data on local
disk (ImageFolder trees, tar shards, manifests), faults recovered inside the
deadline or named clearly, a replaced object failing loudly, credentials
from every place (and refreshed before they expire), and `ringfeed pack`
giving the same shards from object storage as from disk. How the bytes are
read (ranges resumed, parts streamed, stalls interrupted, HTTP/2) is in
test_object_storage_reads.py; the servers are conftest.py's fixtures.
"""
from __future__ import annotations

import os
import pathlib
import re
import sys

import pytest
import torch

import ringfeed

from conftest import OBJECT_KW as KW
from conftest import REPO, assert_same_batches, brace, epoch_batches, run_cli, shard_names

sys.path.insert(0, str(REPO / "tests" / "support"))
object_store = pytest.importorskip("object_store", reason="tests/support/object_store.py (the servers harness)")


def test_https_shards_by_brace_expansion_match_local(trust, tls_server, shards):
    names = shard_names(shards)
    assert len(names) >= 1
    local = epoch_batches(ringfeed.Loader(str(shards / brace(names)), **KW))
    pattern = f"{tls_server.url}/shards/{brace(names)}"
    got = epoch_batches(ringfeed.Loader(pattern, **KW))
    assert_same_batches(got, local, f"Loader({pattern!r})")


def test_https_untrusted_certificate_is_a_clear_error(monkeypatch, tls_server, shards):
    for var in ("CURL_CA_BUNDLE", "AWS_CA_BUNDLE", "SSL_CERT_FILE"):
        monkeypatch.delenv(var, raising=False)
    url = f"{tls_server.url}/shards/{shard_names(shards)[0]}"
    with pytest.raises(Exception) as e:
        ringfeed.Loader(url, **KW)
    assert url in str(e.value) and "certificate" in str(e.value).lower(), str(e.value)


def test_https_missing_object_names_url_and_status(trust, tls_server):
    url = f"{tls_server.url}/shards/nope-000000.tar"
    with pytest.raises(Exception) as e:
        ringfeed.Loader(url, **KW)
    assert url in str(e.value) and "404" in str(e.value), str(e.value)


def test_https_manifest_relative_paths(trust, tmp_path_factory, val_dir):
    # A manifest beside the tree, paths relative to it, served over TLS.
    root = pathlib.Path(val_dir)
    from torchvision.datasets import ImageFolder
    samples = ImageFolder(val_dir).samples
    lines = ["path,label"] + [f"{pathlib.Path(p).relative_to(root.parent).as_posix()},{c}" for p, c in samples]
    (root.parent / "val.csv").write_text("\n".join(lines) + "\n")
    with object_store.HttpsServer(root.parent, tmp_path_factory.mktemp("tls2")) as server:
        os.environ["CURL_CA_BUNDLE"] = server.ca_file
        try:
            got = epoch_batches(ringfeed.Loader(f"{server.url}/val.csv", **KW))
        finally:
            os.environ.pop("CURL_CA_BUNDLE", None)
    want = epoch_batches(ringfeed.Loader(val_dir, **KW))
    assert_same_batches(got, want, "https manifest")


def test_https_faults_recovered_through_the_proxy(trust, tls_server, shards):
    names = shard_names(shards)
    with object_store.FaultProxy(tls_server.url, upstream_ca_file=tls_server.ca_file) as proxy:
        url = f"{proxy.url}/shards/{names[0]}"
        want = epoch_batches(ringfeed.Loader(str(shards / names[0]), **KW))
        for kind, params in [("slowdown", {"count": 3}), ("internal_error", {"count": 2}),
                             ("reset", {"count": 2, "after_bytes": 1000}),
                             ("truncate", {"count": 1, "after_bytes": 700}),
                             ("slow_first_byte", {"count": 1, "delay_s": 0.5})]:
            proxy.clear()
            proxy.add_fault(kind, **params)
            got = epoch_batches(ringfeed.Loader(url, **KW))
            assert_same_batches(got, want, f"through a {kind} fault")
            faulted = [e for e in proxy.log() if e.get("fault")]
            assert len(faulted) == params["count"], f"{kind}: the proxy injected {faulted}"


def test_https_forbidden_is_not_retried(trust, tls_server, shards):
    with object_store.FaultProxy(tls_server.url, upstream_ca_file=tls_server.ca_file) as proxy:
        url = f"{proxy.url}/shards/{shard_names(shards)[0]}"
        proxy.add_fault("forbidden", count=5)
        with pytest.raises(Exception) as e:
            ringfeed.Loader(url, **KW)
        assert "403" in str(e.value) and "AccessDenied" in str(e.value) and "1 attempt" in str(e.value), str(e.value)
        assert len(proxy.log()) == 1, proxy.log()


def test_https_503_storm_past_the_retries_names_everything(trust, tls_server, shards):
    with object_store.FaultProxy(tls_server.url, upstream_ca_file=tls_server.ca_file) as proxy:
        url = f"{proxy.url}/shards/{shard_names(shards)[0]}"
        proxy.add_fault("slowdown", count=1000)
        with pytest.raises(Exception) as e:
            ringfeed.Loader(url, **KW)
        text = str(e.value)
        assert url in text and "503" in text and "SlowDown" in text and "attempts" in text, text
        assert "request id" in text, text


def test_bench_reads_https_shards(trust, tls_server, shards):
    import json
    names = shard_names(shards)
    out = run_cli("bench", f"{tls_server.url}/shards/{names[0]}", "--pipeline", "none", "--json")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["images"] > 0 and result["backend"] == "libcurl", result


# --- s3:// against s3rver -------------------------------------------------------------

def test_s3_image_folder_matches_the_tree_on_disk(s3_env, train_dir):
    from torchvision.datasets import ImageFolder
    loader = ringfeed.Loader("s3://data/train/", **KW)
    got = epoch_batches(loader)
    assert_same_batches(got, epoch_batches(ringfeed.Loader(train_dir, **KW)), "s3://data/train/")
    assert torch.cat([l for _, l in got]).tolist() == [c for _, c in ImageFolder(train_dir).samples]


def test_s3_shards_by_brace_expansion(s3_env, shards):
    names = shard_names(shards)
    got = epoch_batches(ringfeed.Loader(f"s3://data/shards/{brace(names)}", **KW))
    assert_same_batches(got, epoch_batches(ringfeed.Loader(str(shards / brace(names)), **KW)), "s3 shards")


def test_s3_manifest_with_relative_keys(s3_env, val_dir):
    from torchvision.datasets import ImageFolder
    root = pathlib.Path(val_dir)
    s3_env.populate("data", val_dir, prefix="sets/val/")
    rows = ["path,label"] + [f"val/{pathlib.Path(p).relative_to(root).as_posix()},{c}"
                             for p, c in ImageFolder(val_dir).samples]
    s3_env.put("data", "sets/val.csv", ("\n".join(rows) + "\n").encode())
    got = epoch_batches(ringfeed.Loader("s3://data/sets/val.csv", **KW))
    assert_same_batches(got, epoch_batches(ringfeed.Loader(val_dir, **KW)), "s3 manifest")


def test_s3_listing_past_1000_objects_paginates(s3_env, tmp_path, val_dir):
    # 1100 objects under one prefix: ListObjectsV2 answers 1000 a page.
    jpeg = next(pathlib.Path(val_dir).glob("*/*")).read_bytes()
    tree = tmp_path / "many"
    for c in range(2):
        (tree / f"c{c}").mkdir(parents=True)
        for i in range(550):
            (tree / f"c{c}" / f"{i:04d}.jpg").write_bytes(jpeg)
    s3_env.populate("data", tree, prefix="many/")
    loader = ringfeed.Loader("s3://data/many/", **KW)
    assert loader.dataset_size == 1100


def test_s3_replaced_object_fails_loudly(s3_env, shards, tmp_path):
    names = shard_names(shards)
    for n in names:
        s3_env.put("data", f"pinned/{n}", (shards / n).read_bytes())
    loader = ringfeed.Loader(f"s3://data/pinned/{brace(names)}", **KW)  # indexed: ETags pinned
    s3_env.put("data", f"pinned/{names[-1]}", (shards / names[0]).read_bytes())  # another shard's bytes
    with pytest.raises(Exception) as e:
        epoch_batches(loader)
    text = str(e.value)
    assert f"pinned/{names[-1]}" in text and "ETag" in text and "replaced" in text, text


def test_s3_missing_credentials_name_every_place(s3_env, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(Exception) as e:
        ringfeed.Loader("s3://data/train/", **KW)
    text = str(e.value)
    assert "AWS_ACCESS_KEY_ID" in text and "no-credentials" in text, text


def test_s3_profile_file(s3_env, monkeypatch, tmp_path, val_dir):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    creds = tmp_path / "credentials"
    creds.write_text(f"[train]\naws_access_key_id = {s3_env.access_key_id}\n"
                     f"aws_secret_access_key = {s3_env.secret_access_key}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_PROFILE", "train")
    assert ringfeed.Loader("s3://data/train/", **KW).dataset_size == 200


def test_s3_anonymous(s3_env, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_NO_SIGN_REQUEST", "true")
    assert ringfeed.Loader("s3://data/train/", **KW).dataset_size == 200


def test_s3_options_given_to_the_loader(s3_env, monkeypatch, tmp_path, train_dir):
    # Loader(s3=...): what the environment would say, given in code instead.
    for var in ("AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(var)
    secret = s3_env.secret_access_key
    with pytest.raises(Exception):  # nothing says where the server is, nor who asks
        ringfeed.Loader("s3://data/train/", **KW)
    given = dict(endpoint=s3_env.endpoint, region=s3_env.region, access_key_id=s3_env.access_key_id,
                 secret_access_key=secret, path_style=True)
    loader = ringfeed.Loader("s3://data/train/", s3=given, **KW)
    assert_same_batches(epoch_batches(loader), epoch_batches(ringfeed.Loader(train_dir, **KW)), "s3= options")
    assert secret not in repr(loader) and secret not in str(loader.stats())
    # A profile named in code; anonymous requests for a public bucket.
    creds = tmp_path / "credentials"
    creds.write_text(f"[train]\naws_access_key_id = {s3_env.access_key_id}\naws_secret_access_key = {secret}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    by_profile = dict(endpoint=s3_env.endpoint, region=s3_env.region, profile="train")
    assert ringfeed.Loader("s3://data/train/", s3=by_profile, **KW).dataset_size == 200
    anonymous = dict(endpoint=s3_env.endpoint, anonymous=True)
    assert ringfeed.Loader("s3://data/train/", s3=anonymous, **KW).dataset_size == 200


@pytest.mark.parametrize("s3, message", [
    ("http://127.0.0.1:1", "s3 must be a dict"),
    ({"endpiont": "http://x"}, "s3 has no option 'endpiont'"),
    ({"region": 3}, "s3['region'] must be a str"),
    ({"anonymous": "yes"}, "s3['anonymous'] must be True or False"),
    ({"access_key_id": "AKID"}, "access_key_id and secret_access_key together"),
    ({"anonymous": True, "access_key_id": "A", "secret_access_key": "S"}, "anonymous signs nothing"),
])
def test_s3_options_checked(s3, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        ringfeed.Loader("s3://data/val/", s3=s3, **KW)


def test_s3_cache_serves_the_second_epoch(s3_env, monkeypatch, tmp_path, train_dir):
    with object_store.FaultProxy(s3_env.endpoint) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        loader = ringfeed.Loader("s3://data/train/", cache_dir=tmp_path / "cache", **KW)
        first = epoch_batches(loader)
        assert_same_batches(first, epoch_batches(ringfeed.Loader(train_dir, **KW)), "first epoch")
        proxy.clear()
        proxy.add_fault("forbidden", count=100000)  # the store refuses everything now
        second = epoch_batches(loader)
        assert_same_batches(second, first, "second epoch from the cache")
        assert proxy.log() == [], "the second epoch went to the store"


def test_pack_from_s3_is_byte_for_byte_the_local_pack(s3_env, tmp_path, train_dir):
    run_cli("pack", train_dir, tmp_path / "local", "--shard-mb", "1")
    run_cli("pack", "s3://data/train/", tmp_path / "remote", "--shard-mb", "1")
    local = sorted(p.name for p in (tmp_path / "local").iterdir())
    assert local == sorted(p.name for p in (tmp_path / "remote").iterdir())
    for name in local:
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "remote" / name).read_bytes(), name


def test_https_replaced_object_fails_loudly(trust, tmp_path, shards):
    # The TLS server honours If-Match (412), as S3 does.
    names = shard_names(shards)
    root = tmp_path / "site"
    root.mkdir()
    for n in names:
        (root / n).write_bytes((shards / n).read_bytes())
    with object_store.HttpsServer(root, tmp_path / "tls") as server:
        os.environ["CURL_CA_BUNDLE"] = server.ca_file
        loader = ringfeed.Loader(f"{server.url}/{brace(names)}", **KW)  # indexed: ETags pinned
        (root / names[-1]).write_bytes((shards / names[0]).read_bytes())
        os.utime(root / names[-1], (1, 1))  # another mtime: another ETag
        with pytest.raises(Exception) as e:
            epoch_batches(loader)
    text = str(e.value)
    assert names[-1] in text and "412" in text and "replaced" in text, text


def test_cli_s3_options(s3_env, monkeypatch, tmp_path, train_dir):
    # ringfeed bench/pack --s3-endpoint/--s3-region/--s3-path-style: what the
    # environment would say, given on the command line (credentials stay in
    # the environment: a command line is visible to every user).
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    monkeypatch.delenv("AWS_REGION")
    given = ["--s3-endpoint", s3_env.endpoint, "--s3-region", s3_env.region, "--s3-path-style"]
    import json
    out = run_cli("bench", "s3://data/train/", "--pipeline", "none", "--json", *given).stdout
    assert json.loads(out.strip().splitlines()[-1])["images"] == 200, out
    run_cli("pack", "s3://data/train/", tmp_path / "remote", "--shard-mb", "1", *given)
    run_cli("pack", train_dir, tmp_path / "local", "--shard-mb", "1")
    for p in sorted((tmp_path / "local").iterdir()):
        assert (tmp_path / "remote" / p.name).read_bytes() == p.read_bytes(), p.name
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    out = run_cli("bench", "s3://data/train/", "--pipeline", "none", "--json", "--s3-anonymous", *given).stdout
    assert json.loads(out.strip().splitlines()[-1])["images"] == 200, out


class _CredentialsEndpoint:
    """A container credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI)
    on 127.0.0.1: each GET hands out a new session token that expires
    `lifetime_s` from now (ISO 8601, whole seconds), and remembers when."""

    def __init__(self, key_id, secret, lifetime_s):
        import http.server
        import threading
        self.issued = {}  # token -> expiration (epoch seconds)
        self._lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                import json
                import time
                with outer._lock:
                    token = f"session-{len(outer.issued)}"
                    expires = int(time.time()) + lifetime_s
                    outer.issued[token] = expires
                body = json.dumps({"AccessKeyId": key_id, "SecretAccessKey": secret, "Token": token,
                                   "Expiration": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires))})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256  # see object_store_servers._Server

        self._server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/creds"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()

    def expiration(self, token):
        with self._lock:
            return self.issued.get(token)

    def stop(self):
        self._server.shutdown()
        self._server.server_close()


def test_s3_expiring_credentials_are_refreshed_before_they_expire(s3_env, monkeypatch, shards):
    # Container credentials that expire 301 s after they are handed out:
    # inside ringfeed's 5-minute refresh margin 1 s later, so an 8 s run goes
    # through several sessions, each fetched before its predecessor expires.
    # The proxy refuses (S3's ExpiredToken) any token past its expiry or not
    # handed out. (A refresh that fails keeps the credentials that still
    # work, so on a loaded machine a session may serve past its margin: the
    # count of sessions is a lower bound.)
    import time
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    creds = _CredentialsEndpoint(s3_env.access_key_id, s3_env.secret_access_key, lifetime_s=301)

    def check(token):
        expires = creds.expiration(token)
        if expires is None:
            return f"unknown session token {token!r}"
        return f"The provided token has expired ({token})" if time.time() > expires else None

    names = shard_names(shards)
    kw = dict(KW, io_depth=4)
    try:
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", creds.url)
        with object_store.FaultProxy(s3_env.endpoint, token_check=check) as proxy:
            monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
            loader = ringfeed.Loader(f"s3://data/shards/{brace(names)}", **kw)
            want = epoch_batches(ringfeed.Loader(str(shards / brace(names)), **kw))
            started = time.monotonic()
            while time.monotonic() - started < 8:
                assert_same_batches(epoch_batches(loader), want, "with refreshed credentials")
            log = proxy.log()
    finally:
        creds.stop()
    assert not [e for e in log if e.get("status") == 400]
    used = {e["token"] for e in log if e["method"] == "GET"}
    assert None not in used and len(used) >= 2, used


def test_s3_expired_credentials_name_their_source(s3_env, monkeypatch):
    # A credentials source that hands out credentials already expired: a
    # clear error naming the source and the time, not a signature error.
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    creds = _CredentialsEndpoint(s3_env.access_key_id, s3_env.secret_access_key, lifetime_s=-60)
    try:
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", creds.url)
        with pytest.raises(Exception) as e:
            ringfeed.Loader("s3://data/train/", **KW)
    finally:
        creds.stop()
    text = str(e.value)
    assert "container" in text and "expired at" in text, text

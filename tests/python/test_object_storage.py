"""https:// and s3:// sources end to end, against servers the tests start on
127.0.0.1 (tests/support/object_store.py: s3rver, a TLS static server, a
fault-injecting proxy). Nothing leaves the machine.

What a user relies on: the same pixels and labels as the same data on local
disk (ImageFolder trees, tar shards, manifests), faults recovered inside the
deadline or named clearly, a replaced object failing loudly, and
`ringfeed pack` giving the same shards from object storage as from disk.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
import torch

import ringfeed

from conftest import REPO, assert_same_batches, cli_path, epoch_batches, run_cli

sys.path.insert(0, str(REPO / "tests" / "support"))
object_store = pytest.importorskip("object_store", reason="tests/support/object_store.py (the servers harness)")

KW = dict(batch_size=8, pipeline="val", shuffle=False, threads=2, on_error="fail", device="cpu")


def _s3rver_or_skip(directory, buckets):
    try:
        return object_store.S3rver(directory, buckets=buckets).start()
    except object_store.Unavailable as e:
        pytest.skip(f"s3rver not installed: {e}")


@pytest.fixture(scope="module")
def shards(tmp_path_factory, train_dir) -> pathlib.Path:
    """train_dir packed into 1 MiB tar shards (WebDataset naming), in order."""
    out = tmp_path_factory.mktemp("shards") / "shards"
    run_cli("pack", train_dir, out, "--shard-mb", "1", "--no-shuffle")
    assert len(list(out.glob("*.tar"))) >= 2, "want several shards"
    return out


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory, shards):
    root = shards.parent
    with object_store.HttpsServer(root, tmp_path_factory.mktemp("tls")) as server:
        yield server


@pytest.fixture
def trust(monkeypatch, tls_server):
    monkeypatch.setenv("CURL_CA_BUNDLE", tls_server.ca_file)


def _shard_names(shards: pathlib.Path):
    return sorted(p.name for p in shards.glob("*.tar"))


def _brace(names) -> str:
    """shard-{000000..00000N}.tar for names shard-000000.tar … shard-00000N.tar."""
    first, last = names[0], names[-1]
    stem = first[: first.rindex("-") + 1]
    return f"{stem}{{{first[len(stem):-4]}..{last[len(stem):-4]}}}.tar"


def test_https_shards_by_brace_expansion_match_local(trust, tls_server, shards):
    names = _shard_names(shards)
    assert len(names) >= 1
    local = epoch_batches(ringfeed.Loader(str(shards / _brace(names)), **KW))
    pattern = f"{tls_server.url}/shards/{_brace(names)}"
    got = epoch_batches(ringfeed.Loader(pattern, **KW))
    assert_same_batches(got, local, f"Loader({pattern!r})")


def test_https_untrusted_certificate_is_a_clear_error(monkeypatch, tls_server, shards):
    for var in ("CURL_CA_BUNDLE", "AWS_CA_BUNDLE", "SSL_CERT_FILE"):
        monkeypatch.delenv(var, raising=False)
    url = f"{tls_server.url}/shards/{_shard_names(shards)[0]}"
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
    names = _shard_names(shards)
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
        url = f"{proxy.url}/shards/{_shard_names(shards)[0]}"
        proxy.add_fault("forbidden", count=5)
        with pytest.raises(Exception) as e:
            ringfeed.Loader(url, **KW)
        assert "403" in str(e.value) and "AccessDenied" in str(e.value) and "1 attempt" in str(e.value), str(e.value)
        assert len(proxy.log()) == 1, proxy.log()


def test_https_503_storm_past_the_retries_names_everything(trust, tls_server, shards):
    with object_store.FaultProxy(tls_server.url, upstream_ca_file=tls_server.ca_file) as proxy:
        url = f"{proxy.url}/shards/{_shard_names(shards)[0]}"
        proxy.add_fault("slowdown", count=1000)
        with pytest.raises(Exception) as e:
            ringfeed.Loader(url, **KW)
        text = str(e.value)
        assert url in text and "503" in text and "SlowDown" in text and "attempts" in text, text
        assert "request id" in text, text


def test_bench_reads_https_shards(trust, tls_server, shards):
    import json
    names = _shard_names(shards)
    out = run_cli("bench", f"{tls_server.url}/shards/{names[0]}", "--pipeline", "none", "--json")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["images"] > 0 and result["backend"] == "libcurl", result

"""What a run asks of object storage: every GET is billed and counted
against the request rate, and every object the listing holds is either
read or named.

- A loader that knows where its work ends (`ringfeed export` of one epoch
  or `--count N`, `ringfeed bench --epochs N`, `Loader(epochs=N)`) sends one
  GET per object per epoch asked for, none past its end (issue 41: an
  export of 8 objects sent 64 GETs, prefetching later epochs).
- A key that no directory tree can hold (a "." or ".." segment, an empty
  segment, a trailing '/') is named in stats()["skipped"] with the reason,
  never dropped without a word.

The requests are counted by the fault proxy (tests/support/object_store.py)
in front of s3rver.
"""
from __future__ import annotations

import collections
import json
import pathlib
import sys

import pytest

import ringfeed

from conftest import REPO, epoch_batches, point_aws_at, run_cli

sys.path.insert(0, str(REPO / "tests" / "support"))
object_store = pytest.importorskip("object_store", reason="tests/support/object_store.py (the servers harness)")

KW = dict(batch_size=8, pipeline="val", shuffle=False, threads=2, on_error="fail", device="cpu", io_depth=8)


@pytest.fixture(scope="module")
def store(tmp_path_factory, val_dir):
    """s3rver with val_dir (20 images) under val/ and 40 images in 2 classes
    under forty/, behind a fault proxy that logs every request."""
    try:
        server = object_store.S3rver(tmp_path_factory.mktemp("s3rver"), buckets=["data"], lifetime_s=1800).start()
    except object_store.Unavailable as e:
        pytest.skip(f"s3rver not installed: {e}")
    try:
        server.populate("data", val_dir, prefix="val/")
        jpeg = next(pathlib.Path(val_dir).glob("*/*")).read_bytes()
        for i in range(40):
            server.put("data", f"forty/c{i % 2}/{i:02d}.jpg", jpeg)
        with object_store.FaultProxy(server.endpoint, lifetime_s=1800) as proxy:
            yield server, proxy
    finally:
        server.stop()


@pytest.fixture
def proxy(monkeypatch, store, tmp_path):
    """The AWS tools' configuration pointing at the proxy; its log cleared."""
    server, proxy = store
    point_aws_at(monkeypatch, proxy.url, server, tmp_path)
    proxy.clear()
    return proxy


def object_gets(proxy, prefix):
    """GETs per object key under `prefix` (listings, with their query, left out)."""
    counts = collections.Counter()
    for e in proxy.log():
        path = e["path"].split("?", 1)[0]
        if e["method"] == "GET" and "?" not in e["path"] and path.startswith(f"/data/{prefix}"):
            counts[path[len("/data/"):]] += 1
    return counts


# --- nothing read past the end -------------------------------------------------------------

def test_export_of_one_epoch_gets_each_object_once(proxy, tmp_path):
    run_cli("export", "s3://data/val/", "--out", tmp_path / "out", "--pipeline", "val")
    assert len(list((tmp_path / "out").glob("*.ppm"))) == 20
    gets = object_gets(proxy, "val/")
    assert len(gets) == 20 and set(gets.values()) == {1}, f"GETs per object: {dict(gets)}"


def test_export_count_reads_only_the_batches_it_writes(proxy, tmp_path):
    # export reads batches of 32: --count 3 needs the first one, and not the 8 objects after it.
    run_cli("export", "s3://data/forty/", "--out", tmp_path / "out", "--pipeline", "val", "--count", "3")
    assert len(list((tmp_path / "out").glob("*.ppm"))) == 3
    gets = object_gets(proxy, "forty/")
    assert len(gets) == 32 and set(gets.values()) == {1}, f"GETs per object: {dict(gets)}"


def test_bench_epochs_gets_each_object_once_per_epoch(proxy):
    out = run_cli("bench", "s3://data/val/", "--pipeline", "val", "--batch", "8", "--epochs", "2", "--json")
    assert json.loads(out.stdout.strip().splitlines()[-1])["images"] == 40
    gets = object_gets(proxy, "val/")
    assert len(gets) == 20 and set(gets.values()) == {2}, f"GETs per object: {dict(gets)}"


def test_loader_epochs_reads_nothing_past_its_last_epoch(proxy):
    loader = ringfeed.Loader("s3://data/val/", epochs=2, **KW)
    for _ in range(2):
        assert sum(len(labels) for _, labels in epoch_batches(loader)) == 20
    with pytest.raises(RuntimeError, match="past the end"):
        epoch_batches(loader)
    loader.close()
    gets = object_gets(proxy, "val/")
    assert len(gets) == 20 and set(gets.values()) == {2}, f"GETs per object: {dict(gets)}"


@pytest.mark.parametrize("epochs", [0, -1, "2"])
def test_loader_epochs_checked(epochs):
    with pytest.raises((ValueError, TypeError), match="epochs"):
        ringfeed.Loader("s3://data/val/", epochs=epochs, **KW)


# --- keys a tree cannot hold -----------------------------------------------------------------

ODD_KEYS = {
    "val/extra/dots/./x.jpg": "'.' or '..' path segment",
    "val/extra/../y.jpg": "'.' or '..' path segment",
    "val/extra//z.jpg": "empty path segment",
    "val/extra/folder/": "ends in '/'",
}


@pytest.mark.parametrize("cached", [False, True], ids=["direct", "read-through cache"])
def test_keys_no_tree_can_hold_are_named_in_skipped(proxy, tmp_path, cached):
    # s3rver folds "." and ".." segments away when storing, so the proxy adds
    # such keys to the listing, as a server that keeps them (S3) lists them.
    # The read-through cache wraps the source: it must pass them on too.
    proxy.add_fault("list_extra", count=1, path=r"list-type=2", method="GET", keys=sorted(ODD_KEYS))
    loader = ringfeed.Loader("s3://data/val/", cache_dir=(tmp_path / "cache") if cached else None, **KW)
    assert loader.dataset_size == 20  # the tree's samples, as on disk
    skipped = {s["path"]: s["reason"] for s in loader.stats()["skipped"]}
    assert set(skipped) == {f"s3://data/{k}" for k in ODD_KEYS}, skipped
    for key, why in ODD_KEYS.items():
        assert why in skipped[f"s3://data/{key}"], skipped
    assert sum(len(labels) for _, labels in epoch_batches(loader)) == 20
    loader.close()
    assert not [k for k in object_gets(proxy, "val/extra") if k], "a left-out key was requested"

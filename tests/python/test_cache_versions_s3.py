"""Caches over s3:// keyed by each object's version (issue 40). The bytes
cache (cache="bytes") keys an object by the ETag its listing gave, as the
pixel cache does, so an object replaced by another of the same size is read
anew. A manifest's keys come with no listing: with a cache on, the loader
lists their common prefix once and pins each key's ETag, so a replaced
object is a miss there too, and a key the listing lacks is an error naming
it. The manifest itself is read anew every run, never from the cache."""
from __future__ import annotations

import pathlib
import shutil

import pytest

import ringfeed
from conftest import OBJECT_KW, assert_same_batches, epoch_batches
from test_pixel_cache_s3 import same_size_other_pixels

KW = dict(OBJECT_KW, epochs=1)  # one epoch: nothing read ahead into a second, exact counts
STATS = {"bytes": "cache", "pixels": "pixel_cache"}


def run(url, cache, cache_dir):
    """One epoch through a fresh loader (a later run), closed so that what
    its cache holds is written; the batches and the cache's counters."""
    loader = ringfeed.Loader(url, cache=cache, cache_dir=cache_dir, **KW)
    got = epoch_batches(loader)
    counters, n = loader.stats()[STATS[cache]], loader.dataset_size
    loader.close()
    return got, counters, n


def replace_one(s3_env, tree: pathlib.Path, prefix: str) -> None:
    """The first JPEG of `tree` replaced, on disk and in the store, by one of
    the same size with other pixels."""
    victim = sorted(p for p in tree.rglob("*") if p.is_file() and p.read_bytes()[:2] == b"\xff\xd8")[0]
    replaced = same_size_other_pixels(victim.read_bytes())
    assert len(replaced) == victim.stat().st_size
    victim.write_bytes(replaced)
    s3_env.put("data", prefix + victim.relative_to(tree).as_posix(), replaced)


def write_manifest(s3_env, tree: pathlib.Path, key: str, rows) -> None:
    from torchvision.datasets import ImageFolder
    lines = ["path,label"] + [f"{pathlib.Path(p).relative_to(tree.parent).as_posix()},{c}"
                              for p, c in ImageFolder(str(tree)).samples] + list(rows)
    s3_env.put("data", key, ("\n".join(lines) + "\n").encode())


def check_replaced_object_is_a_miss(s3_env, tree, prefix, url, cache, cache_dir):
    want = epoch_batches(ringfeed.Loader(str(tree), **KW))
    got, c, n = run(url, cache, cache_dir)
    assert_same_batches(got, want, "filling")
    got, c, n = run(url, cache, cache_dir)
    assert_same_batches(got, want, "from the cache")
    assert (c["hits"], c["misses"]) == (n, 0), c
    replace_one(s3_env, tree, prefix)
    got, c, n = run(url, cache, cache_dir)
    assert (c["hits"], c["misses"]) == (n - 1, 1), c
    assert_same_batches(got, epoch_batches(ringfeed.Loader(str(tree), **KW)), "after the replacement")


def test_bytes_cache_reads_a_replaced_object_anew(s3_env, tmp_path, train_dir):
    tree = tmp_path / "tree"
    shutil.copytree(train_dir, tree)
    s3_env.populate("data", tree, prefix="bytes/")  # this test's own objects: one is replaced
    check_replaced_object_is_a_miss(s3_env, tree, "bytes/", "s3://data/bytes/", "bytes", tmp_path / "c")


@pytest.mark.parametrize("cache", ["pixels", "bytes"])
def test_manifest_keys_are_pinned_by_a_listing(s3_env, tmp_path, val_dir, cache):
    tree = tmp_path / "val"
    shutil.copytree(val_dir, tree)
    prefix = f"manifest-{cache}/"
    s3_env.populate("data", tree, prefix=prefix + "val/")
    write_manifest(s3_env, tree, prefix + "val.csv", [])
    check_replaced_object_is_a_miss(s3_env, tree, prefix + "val/", f"s3://data/{prefix}val.csv", cache,
                                    tmp_path / "c")


def test_manifest_key_the_listing_lacks_is_an_error_naming_it(s3_env, tmp_path, val_dir):
    tree = tmp_path / "val"
    shutil.copytree(val_dir, tree)
    s3_env.populate("data", tree, prefix="missing/val/")
    write_manifest(s3_env, tree, "missing/val.csv", ["val/gone/nothing.jpg,0"])
    with pytest.raises(Exception) as e:
        ringfeed.Loader("s3://data/missing/val.csv", cache="pixels", cache_dir=tmp_path / "c", **KW)
    assert "s3://data/missing/val/gone/nothing.jpg" in str(e.value), str(e.value)


def test_the_manifest_itself_is_read_anew_with_the_bytes_cache(s3_env, tmp_path, val_dir):
    tree = tmp_path / "val"
    shutil.copytree(val_dir, tree)
    s3_env.populate("data", tree, prefix="growing/val/")
    from torchvision.datasets import ImageFolder
    samples = ImageFolder(str(tree)).samples
    half = ["path,label"] + [f"{pathlib.Path(p).relative_to(tmp_path).as_posix()},{c}"
                             for p, c in samples[: len(samples) // 2]]
    s3_env.put("data", "growing/val.csv", ("\n".join(half) + "\n").encode())
    assert run("s3://data/growing/val.csv", "bytes", tmp_path / "c")[2] == len(samples) // 2
    write_manifest(s3_env, tree, "growing/val.csv", [])
    assert run("s3://data/growing/val.csv", "bytes", tmp_path / "c")[2] == len(samples)

"""cache="pixels" over s3:// (issue 40): a hit reads nothing from the store,
so the key carries the object's ETag from the listing. A second run is all
hits, with batches equal to an uncached exact run over the same files on
disk; an object replaced by one of the same size with other pixels is
decoded anew, never served from the cache."""
from __future__ import annotations

import pathlib
import shutil

import pytest

import ringfeed
from conftest import OBJECT_KW, assert_same_batches, epoch_batches

KW = dict(OBJECT_KW, cache="pixels", epochs=1)  # one epoch: nothing read ahead into a second


def same_size_other_pixels(jpeg: bytes) -> bytes:
    """The JPEG with its first quantization table's first value changed:
    the same number of bytes, a valid file, other pixels."""
    at = jpeg.index(b"\xff\xdb") + 5  # FFDB, length (2), precision and table id (1), then the values
    out = bytearray(jpeg)
    out[at] = out[at] + 1 if out[at] < 255 else out[at] - 1
    return bytes(out)


def test_s3_second_run_hits_and_a_replaced_object_is_decoded_anew(s3_env, tmp_path, train_dir):
    tree = tmp_path / "tree"
    shutil.copytree(train_dir, tree)
    s3_env.populate("data", tree, prefix="pixels/")  # this test's own objects: one is replaced below
    url = "s3://data/pixels/"
    exact = dict(OBJECT_KW, exact=True)
    want = epoch_batches(ringfeed.Loader(str(tree), **exact))
    assert_same_batches(epoch_batches(ringfeed.Loader(url, cache_dir=tmp_path / "c", **KW)), want, "filling")
    again = ringfeed.Loader(url, cache_dir=tmp_path / "c", **KW)
    assert_same_batches(epoch_batches(again), want, "from the cache")
    n = again.dataset_size
    assert again.stats()["pixel_cache"]["hits"] == n

    victim = sorted(p for p in tree.rglob("*") if p.is_file() and p.read_bytes()[:2] == b"\xff\xd8")[0]
    replaced = same_size_other_pixels(victim.read_bytes())
    assert len(replaced) == victim.stat().st_size
    victim.write_bytes(replaced)
    s3_env.put("data", "pixels/" + victim.relative_to(tree).as_posix(), replaced)
    after = ringfeed.Loader(url, cache_dir=tmp_path / "c", **KW)
    got = epoch_batches(after)
    p = after.stats()["pixel_cache"]
    assert (p["hits"], p["misses"]) == (n - 1, 1), p
    assert_same_batches(got, epoch_batches(ringfeed.Loader(str(tree), **exact)), "after the replacement")

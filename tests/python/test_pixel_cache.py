"""cache="pixels" from Python and the CLI (issue 40): decoded pixels kept on
local disk, so epochs after the first skip the decode, with batches equal
to an uncached exact run and, through ringfeed.DataLoader, to torchvision's
own (torch's DataLoader over PIL). The cache itself is tested in
tests/pixel_cache_tests.cpp and tests/loader_pixel_cache_tests.cpp."""
import json
from pathlib import Path

import pytest

import ringfeed
import ringfeed.transforms
from conftest import assert_same_batches, brace, epoch_batches, run_cli, shard_names

torch = pytest.importorskip("torch")


def two_epochs(loader):
    return [epoch_batches(loader), epoch_batches(loader)]


def test_epochs_after_the_first_hit_and_equal_an_uncached_exact_run(train_dir, tmp_path):
    want = two_epochs(ringfeed.Loader(train_dir, batch_size=16, size=64, exact=True, seed=3))
    loader = ringfeed.Loader(train_dir, batch_size=16, size=64, seed=3, cache_dir=tmp_path, cache="pixels",
                             epochs=2)
    got0 = epoch_batches(loader)
    n = loader.dataset_size
    assert loader.stats()["pixel_cache"]["stores"] == n  # epoch 0 decoded and kept every sample
    got1 = epoch_batches(loader)
    p = loader.stats()["pixel_cache"]
    # epoch 1 was read ahead while epoch 0 ended: a sample whose epoch-0 decode
    # had not been stored yet is decoded again; every other one is a hit
    assert p["hits"] + p["misses"] == 2 * n and p["stores"] == n and p["hits"] >= n - 64
    assert p["entries"] == n and p["bytes_per_image"] > 0 and p["filling"] is True
    # fast mode (no exact=True) with the cache reads the full decode: exact mode's batches
    assert_same_batches(got0, want[0], "epoch 0")
    assert_same_batches(got1, want[1], "epoch 1")


def test_stream_shards_with_the_cache_equals_the_uncached_streamed_run(shards, tmp_path):
    # The streamer reads whole shards: a hit's bytes are dropped, its pixels read from the cache.
    source = str(shards / brace(shard_names(shards)))
    kw = dict(batch_size=16, size=64, exact=True, seed=3, stream_shards=True, epochs=2)
    want = two_epochs(ringfeed.Loader(source, **kw))
    loader = ringfeed.Loader(source, cache_dir=tmp_path, cache="pixels", **kw)
    assert_same_batches(epoch_batches(loader), want[0], "epoch 0")
    n = loader.dataset_size
    assert loader.stats()["pixel_cache"]["stores"] == n
    assert_same_batches(epoch_batches(loader), want[1], "epoch 1")
    p = loader.stats()["pixel_cache"]
    assert p["hits"] + p["misses"] == 2 * n and p["hits"] >= n - 64, p


def test_dataloader_with_the_cache_equals_torchs_dataloader(train_dir, tmp_path):
    T = pytest.importorskip("torchvision.transforms")
    datasets = pytest.importorskip("torchvision.datasets")
    dataset = datasets.ImageFolder(train_dir, transform=T.Compose([
        T.Resize(40), T.CenterCrop(32), T.ToTensor(), T.Normalize((0.5, 0.4, 0.3), (0.2, 0.3, 0.25))]))
    want = [x for x, _ in torch.utils.data.DataLoader(dataset, batch_size=32)]
    loader = ringfeed.DataLoader(dataset, batch_size=32, cache_dir=tmp_path, cache="pixels", strict=True)
    for epoch in range(2):
        count = 0
        for (x, _), w in zip(loader, want):  # compared as they come: no batch is kept
            assert torch.equal(x, w), f"epoch {epoch}, batch {count}"
            count += 1
        assert count == len(want)
    p = loader.stats()["pixel_cache"]
    assert p["hits"] == len(dataset) and p["stores"] == len(dataset)


def test_a_cache_name_not_known_is_refused_with_the_names(train_dir, tmp_path):
    with pytest.raises(ValueError, match="bytes.*pixels"):
        ringfeed.Loader(train_dir, cache_dir=tmp_path, cache="decoded")


def test_cli_build_then_info_then_bench_reads_it(val_dir, tmp_path):
    cache = tmp_path / "cache"
    built = run_cli("cache", "build", val_dir, "--cache-dir", cache, "--threads", 2)
    assert " added" in built.stdout
    info = json.loads(run_cli("cache", "info", cache, "--json").stdout)
    n = info["entries"]
    assert n > 0 and info["torn"] == 0 and info["bytes_per_image"] >= 4096
    again = run_cli("cache", "build", val_dir, "--cache-dir", cache)  # resumable: nothing left to add
    assert f"0 added, {n} present" in again.stdout
    bench = run_cli("bench", val_dir, "--pipeline", "train", "--size", 64, "--batch", 16, "--cache-dir", cache,
                    "--cache", "pixels", "--json")
    out = json.loads(bench.stdout.strip().splitlines()[-1])
    assert out["pixel_cache"]["hits"] == n and out["pixel_cache"]["misses"] == 0
    # Each run that read the cache is counted: the two builds, then the
    # bench, whose every lookup hit.
    info = json.loads(run_cli("cache", "info", cache, "--json").stdout)
    assert info["runs"] == 3 and info["last_run"] == {"hits": n, "misses": 0}
    assert info["hits"] == 2 * n and info["misses"] == n
    text = run_cli("cache", "info", cache).stdout
    assert "hit rate 100.0% in the last run" in text and "66.7% over 3 run(s)" in text


def test_a_cache_dir_inside_the_source_is_refused(val_dir, tmp_path):
    # The cache's folder became a class with no image at the next listing.
    import shutil
    source = tmp_path / "val"
    shutil.copytree(val_dir, source)
    with pytest.raises(ValueError, match="inside the source"):
        ringfeed.Loader(str(source), batch_size=4, cache="pixels", cache_dir=str(source / "n00000000"))
    assert sorted(p.name for p in source.iterdir()) == sorted(p.name for p in Path(val_dir).iterdir())


def test_cli_build_fails_when_it_can_make_no_cache(val_dir, tmp_path):
    # Its one purpose failed, and it said "0 added" and exited 0.
    import subprocess
    from conftest import cli_path
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    proc = subprocess.run([cli_path(), "cache", "build", val_dir, "--cache-dir", str(blocker)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc
    assert "no pixel cache could be made" in proc.stderr and str(blocker) in proc.stderr, proc.stderr
    assert "Not a directory" in proc.stderr, proc.stderr


@pytest.mark.parametrize("how", [("--pipeline", "val", "--size", "48"),
                                 ("--transform", "Resize(56); CenterCrop(48); ToTensor()")])
def test_cli_build_fills_a_val_lists_head_that_training_then_only_reads(val_dir, tmp_path, how):
    # The val list keeps its Resize + CenterCrop output, not the decode: a
    # build for the training run's recipe fills exactly the keys it reads.
    cache = tmp_path / "cache"
    run_cli("cache", "build", val_dir, "--cache-dir", cache, *how)
    T = ringfeed.transforms
    kw = (dict(pipeline="val", size=48) if how[0] == "--pipeline"
          else dict(transform=T.Compose([T.Resize(56), T.CenterCrop(48), T.ToTensor()])))
    want = epoch_batches(ringfeed.Loader(val_dir, batch_size=8, exact=True, **kw))
    loader = ringfeed.Loader(val_dir, batch_size=8, cache_dir=cache, cache="pixels", epochs=1, **kw)
    assert_same_batches(epoch_batches(loader), want, "epoch 0")
    p = loader.stats()["pixel_cache"]
    assert p["hits"] == loader.dataset_size and p["misses"] == 0 and p["stores"] == 0, p
    # a head-only entry is smaller than the decode: the val head, not the image, was kept
    assert p["bytes_per_image"] <= 48 * 48 * 3 + 4096, p

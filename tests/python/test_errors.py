"""Errors: bad options are ValueErrors naming the option; a missing source is
FileNotFoundError; a corrupt file is skipped (and listed) or fails naming it."""
from __future__ import annotations

import os

import pytest
import torch
from torchvision.datasets import ImageFolder

import ringfeed

from conftest import epoch_batches

BS = 4
# A batch of 4 float32 224x224 images: 2.3 MiB.
BATCH_BYTES = BS * 3 * 224 * 224 * 4


@pytest.mark.parametrize("options, name", [
    (dict(batch_size=0), "batch_size"),
    (dict(batch_size=-1), "batch_size"),
    (dict(batch_size=2.5), "batch_size"),
    (dict(pipeline="foo"), "pipeline"),
    (dict(output="int8"), "output"),
    (dict(on_error="ignore"), "on_error"),
    (dict(size=0), "size"),
    (dict(device="tpu"), "device"),
    (dict(device="cuda:x"), "device"),
    (dict(rank=3, world_size=2), "rank"),
    (dict(rank=-1, world_size=2), "rank"),
    (dict(world_size=0), "world_size"),
    (dict(memory_budget=BATCH_BYTES), "memory_budget"),       # room for one batch; two are needed
    (dict(memory_budget=0), "memory_budget"),
    (dict(threads=-1), "threads"),
    (dict(io="aio"), "io"),
    (dict(shuffle="yes"), "shuffle"),
    (dict(seed=-1), "seed"),
    (dict(max_pixels=0), "max_pixels"),
    (dict(max_pixels=1.5), "max_pixels"),
    # past what C++ holds, or a machine: pybind11's "Unable to cast", or
    # bad_alloc after threads were made
    (dict(batch_size=2**64), "batch_size"),
    (dict(seed=2**64), "seed"),
    (dict(threads=2**40), "threads"),
    (dict(io_depth=10**6), "io_depth"),
])
def test_bad_option_is_value_error_naming_it(val_dir, options, name):
    with pytest.raises(ValueError) as info:
        ringfeed.Loader(val_dir, **{"batch_size": BS, **options})
    assert name in str(info.value), f"{options}: the message does not name {name!r}: {info.value}"


@pytest.mark.parametrize("option, value, message", [
    ("seed", -1, "seed must be an int >= 0, not -1"),
    ("size", 0, "size must be an int >= 1, not 0"),
    ("max_pixels", 1.5, "max_pixels must be an int >= 1, not 1.5"),
    ("pipeline", "foo", "pipeline must be one of"),
])
def test_loader_and_decode_word_a_bad_option_alike(val_dir, option, value, message):
    # One check behind every front end: the same argument gets the same words.
    from pathlib import Path
    data = next(p for p in sorted(Path(val_dir).rglob("*")) if p.is_file()).read_bytes()
    for call in (lambda: ringfeed.Loader(val_dir, batch_size=BS, **{option: value}),
                 lambda: ringfeed.decode(data, **{"pipeline": "val", option: value})):
        with pytest.raises(ValueError) as info:
            call()
        assert message in str(info.value), str(info.value)


def test_bad_set_epoch(val_dir):
    loader = ringfeed.Loader(val_dir, batch_size=BS)
    with pytest.raises(ValueError, match="epoch"):
        loader.set_epoch(-1)


@pytest.mark.filterwarnings("ignore:.*copies:RuntimeWarning")  # two buffers, one held by the loop: copies
def test_memory_budget_for_two_batches_is_enough(val_dir):
    # the limit is two batches (plus the loader's rounding): a little more than that works
    loader = ringfeed.Loader(val_dir, batch_size=BS, pipeline="val", memory_budget=2 * BATCH_BYTES + (1 << 20), threads=2)
    assert sum(x.shape[0] for x, _ in loader) == 20


@pytest.mark.parametrize("source", ["does-not-exist", "/nonexistent/ringfeed/data"])
def test_missing_source(tmp_path, source):
    path = source if os.path.isabs(source) else str(tmp_path / source)
    with pytest.raises(FileNotFoundError) as info:
        ringfeed.Loader(path)
    assert path in str(info.value) or info.value.filename == path


def test_empty_source(tmp_path):
    (tmp_path / "empty" / "cls").mkdir(parents=True)
    with pytest.raises((ValueError, RuntimeError, OSError)) as info:
        ringfeed.Loader(str(tmp_path / "empty"))
    assert "empty" in str(info.value) or "no sample" in str(info.value)


# --- corrupt files -------------------------------------------------------------------------
BAD_INDEX = 7  # in ImageFolder order: the second batch of 4, last slot
CORRUPTIONS = {
    "garbage": b"this is not an image at all\n" * 10,
    "truncated": b"\xff\xd8\xff\xe0\x00\x10JF",  # a JPEG cut to a few bytes
    "empty": b"",
}


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_corrupt_file_skipped(corrupt_copy, val_dir, kind):
    root, bad = corrupt_copy(BAD_INDEX, CORRUPTIONS[kind], kind)
    good = ImageFolder(val_dir)
    for pipeline in ("val", "train"):
        loader = ringfeed.Loader(root, batch_size=BS, pipeline=pipeline, output="uint8", size=64, threads=2,
                                 on_error="skip")
        batches = epoch_batches(loader)
        labels = torch.cat([l for _, l in batches])
        assert labels.numel() == len(good) - 1, f"{pipeline}: {labels.numel()} samples, expected {len(good) - 1}"
        want = list(good.targets)
        del want[BAD_INDEX]
        assert sorted(labels.tolist()) == sorted(want)
        skipped = loader.stats()["skipped"]
        assert len(skipped) == 1, skipped
        assert os.path.basename(bad) in skipped[0]["path"], skipped
        assert skipped[0]["reason"], skipped
    # The samples that are left are the good ones, in order (val: no shuffle).
    loader = ringfeed.Loader(root, batch_size=64, pipeline="val", output="uint8", size=64, threads=2)
    reference = ringfeed.Loader(val_dir, batch_size=64, pipeline="val", output="uint8", size=64, threads=2)
    (got, got_labels), = epoch_batches(loader)
    (ref, ref_labels), = epoch_batches(reference)
    keep = [i for i in range(len(good)) if i != BAD_INDEX]
    assert torch.equal(got, ref[keep]) and torch.equal(got_labels, ref_labels[keep])


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_corrupt_file_fails_naming_it(corrupt_copy, val_dir, kind):
    root, bad = corrupt_copy(BAD_INDEX, CORRUPTIONS[kind], kind)
    reference = epoch_batches(ringfeed.Loader(val_dir, batch_size=BS, pipeline="val", output="uint8", size=64, threads=2))
    loader = ringfeed.Loader(root, batch_size=BS, pipeline="val", output="uint8", size=64, threads=2, on_error="fail")
    delivered = []
    with pytest.raises(RuntimeError) as info:
        for images, labels in loader:
            delivered.append((images.clone(), labels.clone()))
    assert os.path.basename(bad) in str(info.value), f"the error does not name the file: {info.value}"
    assert len(delivered) == BAD_INDEX // BS, f"{len(delivered)} batches before the error, expected {BAD_INDEX // BS}"
    for (x, y), (rx, ry) in zip(delivered, reference):
        assert torch.equal(x, rx) and torch.equal(y, ry), "a batch before the bad file differs"


def _jpeg_of(width, height):
    import io
    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 90)).save(buf, format="JPEG")
    return buf.getvalue()


def test_max_pixels_refuses_a_bigger_image(corrupt_copy, val_dir):
    from PIL import Image
    largest = max(w * h for w, h in (Image.open(p).size for p, _ in ImageFolder(val_dir).samples))
    side = int(largest ** 0.5) * 2
    root, big = corrupt_copy(BAD_INDEX, _jpeg_of(side, side), "big")
    limit = side * side - 1
    for pipeline, exact in (("val", True), ("val", False), ("train", False)):
        loader = ringfeed.Loader(root, batch_size=BS, pipeline=pipeline, exact=exact, output="uint8", size=64,
                                 threads=2, on_error="skip", max_pixels=limit)
        epoch_batches(loader)
        skipped = loader.stats()["skipped"]
        assert [os.path.basename(s["path"]) for s in skipped] == [os.path.basename(big)], skipped
        assert f"more than the limit of {limit}" in skipped[0]["reason"], skipped
    # At the default limit, or one pixel more, it is read.
    for max_pixels in (side * side, ringfeed.loader.DEFAULT_MAX_PIXELS):
        loader = ringfeed.Loader(root, batch_size=BS, pipeline="val", output="uint8", size=64, threads=2,
                                 on_error="skip", max_pixels=max_pixels)
        epoch_batches(loader)
        assert loader.stats()["skipped"] == []
    data = _jpeg_of(300, 200)
    assert tuple(ringfeed.decode(data, max_pixels=60000).shape) == (200, 300, 3)
    with pytest.raises(RuntimeError, match="big.jpg.*60000 pixels, more than the limit of 59999"):
        ringfeed.decode(data, name="big.jpg", max_pixels=59999)
    with pytest.raises(ValueError, match="max_pixels"):
        ringfeed.decode(data, max_pixels=0)

"""LMDB sources: a database in the PyTorch ImageNet/LMDB layout (keys b"0",
b"1", ... holding msgpack [image_bytes, label], b"__len__" the count)
holding the bytes of an ImageFolder's files, in the ImageFolder's order and
with its labels, gives the same batches through ringfeed.Loader as the
ImageFolder itself: same pixels, same labels, same order.
"""
from __future__ import annotations

import pathlib

import numpy as np
import pytest
import torch

import ringfeed

lmdb = pytest.importorskip("lmdb", reason="python3-lmdb writes the test database")
msgpack = pytest.importorskip("msgpack", reason="python3-msgpack writes the test database")

BATCH = 5
KW = dict(batch_size=BATCH, pipeline="val", shuffle=False, threads=2, on_error="fail", device="cpu")


def _write_image(path: pathlib.Path, rng, width: int, height: int, fmt: str, progressive=False) -> None:
    from PIL import Image
    # Smooth gradients plus noise: real image content, not flat colour.
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1), (x + y) % 256], axis=-1)
    noisy = base.astype(np.int16) + rng.integers(-20, 21, (height, width, 3), dtype=np.int16)
    im = Image.fromarray(noisy.clip(0, 255).astype(np.uint8), "RGB")
    if fmt == "JPEG":
        im.save(path, "JPEG", quality=90, progressive=progressive)
    else:
        im.save(path, "PNG")


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory) -> pathlib.Path:
    """13 images in 3 classes: baseline and progressive JPEGs and PNGs of
    varied sizes, some smaller than the val crop."""
    root = tmp_path_factory.mktemp("lmdb_if") / "val"
    rng = np.random.default_rng(5)
    shapes = [(320, 240), (257, 311), (500, 375), (120, 90), (640, 480), (224, 224), (301, 199)]
    n = 0
    for c, name in enumerate(["ant", "bee", "cat"]):
        (root / name).mkdir(parents=True)
        for k in range(4 + (c == 1)):
            w, h = shapes[(n * 3 + c) % len(shapes)]
            if n % 3 == 2:
                _write_image(root / name / f"img{k:02d}.png", rng, w, h, "PNG")
            else:
                _write_image(root / name / f"img{k:02d}.jpg", rng, w, h, "JPEG", progressive=(n % 4 == 1))
            n += 1
    return root


@pytest.fixture(scope="module")
def lmdb_dir(tmp_path_factory, image_folder) -> pathlib.Path:
    """The ImageFolder's files as an LMDB database, in torchvision's order."""
    from torchvision.datasets import ImageFolder
    samples = ImageFolder(str(image_folder)).samples
    path = tmp_path_factory.mktemp("lmdb_db") / "val.lmdb"
    env = lmdb.open(str(path), map_size=1 << 30)
    with env.begin(write=True) as txn:
        for i, (file, label) in enumerate(samples):
            with open(file, "rb") as f:
                txn.put(str(i).encode("ascii"), msgpack.packb([f.read(), label], use_bin_type=True))
        txn.put(b"__len__", msgpack.packb(len(samples)))
    env.close()
    lock = path / "lock.mdb"
    if lock.exists():
        lock.unlink()
    assert (path / "data.mdb").is_file()
    return path


def _open(source):
    return ringfeed.Loader(source, **KW)


def _epoch(loader):
    images, labels = [], []
    for batch_images, batch_labels in loader:
        images.append(batch_images.clone())
        labels.append(batch_labels.clone())
    return images, labels


def _assert_same(got, want, what):
    gi, gl = got
    wi, wl = want
    assert len(gi) == len(wi), f"{what}: {len(gi)} batches, expected {len(wi)}"
    for b, (a, e) in enumerate(zip(gl, wl)):
        assert torch.equal(a, e), f"{what}: batch {b} labels {a.tolist()}, expected {e.tolist()}"
    for b, (a, e) in enumerate(zip(gi, wi)):
        assert a.shape == e.shape and a.dtype == e.dtype, f"{what}: batch {b} is {a.dtype}{tuple(a.shape)}"
        assert torch.equal(a, e), f"{what}: batch {b} pixels differ (max abs diff {(a - e).abs().max().item()})"


@pytest.fixture(scope="module")
def reference(image_folder):
    loader = ringfeed.Loader(str(image_folder), **KW)
    assert loader.dataset_size == 13
    return _epoch(loader)


@pytest.mark.parametrize("form", ["lmdb://", "directory"])
def test_lmdb_matches_image_folder(form, lmdb_dir, reference, image_folder):
    from torchvision.datasets import ImageFolder
    source = "lmdb://" + str(lmdb_dir) if form == "lmdb://" else str(lmdb_dir)
    loader = _open(source)
    assert loader.dataset_size == 13
    got = _epoch(loader)
    _assert_same(got, reference, f"Loader({source!r})")
    # And the labels are ImageFolder's, in its order (not just equal to ours).
    want = [label for _, label in ImageFolder(str(image_folder)).samples]
    assert torch.cat(got[1]).tolist() == want
    assert not (lmdb_dir / "lock.mdb").exists(), "reading the database created a lock file"


def test_pixel_cache_over_lmdb_hits_and_a_rewritten_database_is_decoded_anew(lmdb_dir, reference, tmp_path):
    # A record has no version of its own: the key carries the database file's
    # size and mtime, so a rewritten database never reads pixels of the old one.
    import shutil
    db = tmp_path / "copy.lmdb"
    shutil.copytree(lmdb_dir, db)
    cache = dict(KW, cache_dir=tmp_path / "cache", cache="pixels", epochs=1)  # nothing read ahead
    want = _epoch(ringfeed.Loader(str(lmdb_dir), **dict(KW, exact=True)))
    _assert_same(_epoch(ringfeed.Loader(str(db), **cache)), want, "filling the cache")
    again = ringfeed.Loader(str(db), **cache)
    _assert_same(_epoch(again), want, "from the cache")
    n = again.dataset_size
    assert again.stats()["pixel_cache"]["hits"] == n
    # Record 0 now holds record 1's image: same keys, another database.
    env = lmdb.open(str(db), map_size=1 << 30)
    with env.begin(write=True) as txn:
        image1, _ = msgpack.unpackb(txn.get(b"1"), raw=False)
        _, label0 = msgpack.unpackb(txn.get(b"0"), raw=False)
        txn.put(b"0", msgpack.packb([image1, label0], use_bin_type=True))
    env.close()
    (db / "lock.mdb").unlink(missing_ok=True)
    after = ringfeed.Loader(str(db), **cache)
    got = _epoch(after)
    assert after.stats()["pixel_cache"]["hits"] == 0  # every key is new
    _assert_same(got, _epoch(ringfeed.Loader(str(db), **dict(KW, exact=True))), "after the rewrite")

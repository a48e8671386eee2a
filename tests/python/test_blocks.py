"""Building blocks: read_files, decode, ImageFolder."""
from __future__ import annotations

import io
import os
import pathlib

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.datasets import ImageFolder as TorchvisionImageFolder

import ringfeed


# --- read_files ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def files(tmp_path_factory, train_dir):
    d = tmp_path_factory.mktemp("files")
    paths = sorted(str(p) for p in pathlib.Path(train_dir).glob("*/*"))[:40]
    empty = d / "empty.bin"
    empty.write_bytes(b"")
    big = d / "big.bin"
    big.write_bytes(np.random.default_rng(1).integers(0, 256, 3 * (1 << 20) + 12345, dtype=np.uint8).tobytes())
    odd = d / "one byte"
    odd.write_bytes(b"\x00")
    return [str(empty), str(big), str(odd)] + paths


@pytest.mark.parametrize("options", [{}, {"io_depth": 1}, {"io_depth": 64}, {"direct": True}])
def test_read_files_equals_open_read(files, options):
    got = ringfeed.read_files(files, **options)
    assert isinstance(got, list) and len(got) == len(files)
    for path, view in zip(files, got):
        assert isinstance(view, memoryview)
        assert view.readonly
        with open(path, "rb") as f:
            want = f.read()
        assert view.nbytes == len(want), f"{path}: {view.nbytes} bytes, expected {len(want)}"
        assert bytes(view) == want, f"{path}: contents differ"


def test_read_files_accepts_pathlike_and_empty_list(files):
    assert ringfeed.read_files([]) == []
    (view,) = ringfeed.read_files([pathlib.Path(files[2])])
    assert bytes(view) == b"\x00"
    (view,) = ringfeed.read_files(iter([os.fsencode(files[2])]))
    assert bytes(view) == b"\x00"
    with pytest.raises(TypeError):
        ringfeed.read_files(files[2])  # one path, not a list of them


def test_read_files_views_stay_valid(files):
    views = ringfeed.read_files(files[:5])
    want = [open(p, "rb").read() for p in files[:5]]
    for _ in range(3):
        ringfeed.read_files(files)  # more reads must not overwrite earlier results
    assert [bytes(v) for v in views] == want
    arr = np.frombuffer(views[1], dtype=np.uint8)  # the buffer protocol, zero copy
    assert arr.tobytes() == want[1]


def test_read_files_missing_file(files, tmp_path):
    missing = str(tmp_path / "no-such-file.jpg")
    with pytest.raises(FileNotFoundError) as info:
        ringfeed.read_files(files[:3] + [missing] + files[3:6])
    assert info.value.filename == missing
    assert "no-such-file.jpg" in str(info.value)


def test_read_files_directory_is_os_error(tmp_path):
    with pytest.raises(OSError) as info:
        ringfeed.read_files([str(tmp_path)])
    assert str(tmp_path) in str(info.value)


# --- decode --------------------------------------------------------------------------------
def encoded_images():
    yy, xx = np.mgrid[0:61, 0:83]
    smooth = np.stack([(xx * 3) % 256, (yy * 4) % 256, ((xx + yy) * 2) % 256], -1).astype(np.uint8)
    noise = np.random.default_rng(0).integers(0, 256, (37, 53, 3), dtype=np.uint8)
    out = {}
    for tag, arr in (("smooth", smooth), ("noise", noise)):
        im = Image.fromarray(arr)

        def enc(img, fmt, **kw):
            b = io.BytesIO()
            img.save(b, fmt, **kw)
            return b.getvalue()
        out[f"{tag}-baseline.jpg"] = enc(im, "JPEG", quality=90)
        out[f"{tag}-444.jpg"] = enc(im, "JPEG", quality=95, subsampling=0)
        out[f"{tag}-422.jpg"] = enc(im, "JPEG", quality=75, subsampling=1)
        out[f"{tag}-progressive.jpg"] = enc(im, "JPEG", quality=85, progressive=True)
        out[f"{tag}-gray.jpg"] = enc(im.convert("L"), "JPEG")
        out[f"{tag}-cmyk.jpg"] = enc(im.convert("CMYK"), "JPEG")
        out[f"{tag}-rgb.png"] = enc(im, "PNG")
        out[f"{tag}-rgba.png"] = enc(im.convert("RGBA"), "PNG")
        out[f"{tag}-gray.png"] = enc(im.convert("L"), "PNG")
        out[f"{tag}-gray-alpha.png"] = enc(im.convert("LA"), "PNG")
        out[f"{tag}-palette.png"] = enc(im.convert("P", palette=Image.ADAPTIVE, colors=50), "PNG")
        out[f"{tag}-palette-trns.png"] = enc(im.convert("P", palette=Image.ADAPTIVE, colors=16), "PNG", transparency=3)
        out[f"{tag}-1bit.png"] = enc(im.convert("1"), "PNG")
    return out


ENCODED = encoded_images()


@pytest.mark.parametrize("name", sorted(ENCODED))
def test_decode_whole_image_equals_pil(name):
    data = ENCODED[name]
    want = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    got = ringfeed.decode(data, name=name)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.uint8
    assert tuple(got.shape) == want.shape
    assert np.array_equal(got.numpy(), want), f"{name}: max diff {np.abs(got.numpy().astype(int) - want).max()}"


def test_decode_dataset_files_equal_pil(train_dir):
    # gen's JPEGs (various sizes, some progressive), read with read_files
    paths = sorted(str(p) for p in pathlib.Path(train_dir).glob("*/*"))[::10]
    for path, data in zip(paths, ringfeed.read_files(paths)):
        want = np.asarray(Image.open(path).convert("RGB"))
        got = ringfeed.decode(data, name=path).numpy()
        assert np.array_equal(got, want), path


def test_decode_accepts_bytes_like():
    data = ENCODED["smooth-baseline.jpg"]
    want = ringfeed.decode(data).numpy()
    for like in (bytearray(data), memoryview(data), np.frombuffer(data, dtype=np.uint8)):
        assert np.array_equal(ringfeed.decode(like).numpy(), want), type(like)


@pytest.mark.parametrize("pipeline, exact, seed, epoch", [
    ("val", True, 0, 0), ("val", False, 0, 0), ("train", True, 5, 1), ("train", False, 3, 0)])
def test_decode_pipeline_equals_loader_slot(val_dir, pipeline, exact, seed, epoch):
    # decode(pipeline=...) gives the pixels the uint8 loader puts in the slot
    # of dataset sample `index` (no shuffle: slot k of batch b is index b*B+k).
    samples = TorchvisionImageFolder(val_dir).samples
    loader = ringfeed.Loader(val_dir, batch_size=8, pipeline=pipeline, exact=exact, output="uint8", size=96,
                             shuffle=False, seed=seed, threads=2)
    loader.set_epoch(epoch)
    index = 0
    for images, labels in loader:
        for slot in range(images.shape[0]):
            path, label = samples[index]
            with open(path, "rb") as f:
                got = ringfeed.decode(f.read(), pipeline=pipeline, size=96, exact=exact, seed=seed, epoch=epoch,
                                      index=index, name=path)
            assert got.shape == (96, 96, 3)
            assert labels[slot].item() == label
            assert torch.equal(got, images[slot]), f"sample {index} ({path}): decode differs from the loader"
            index += 1
    assert index == len(samples)


def test_decode_train_depends_on_key():
    data = ENCODED["smooth-baseline.jpg"]
    a = ringfeed.decode(data, pipeline="train", size=32, seed=1, epoch=0, index=0)
    assert torch.equal(a, ringfeed.decode(data, pipeline="train", size=32, seed=1, epoch=0, index=0))
    others = [ringfeed.decode(data, pipeline="train", size=32, seed=s, epoch=e, index=i)
              for s, e, i in ((2, 0, 0), (1, 1, 0), (1, 0, 1))]
    assert sum(torch.equal(a, o) for o in others) <= 1, "the random crop ignores seed, epoch and index"


@pytest.mark.parametrize("data", [b"garbage bytes, not an image" * 4, b"", ENCODED["smooth-baseline.jpg"][:40],
                                  b"\x89PNG\r\n\x1a\n" + b"\x00" * 30])
def test_decode_garbage_names_the_argument(data):
    with pytest.raises(RuntimeError) as info:
        ringfeed.decode(data, name="my-broken-file.jpg")
    assert "my-broken-file.jpg" in str(info.value)


def test_decode_bad_options():
    data = ENCODED["smooth-baseline.jpg"]
    with pytest.raises(ValueError, match="pipeline"):
        ringfeed.decode(data, pipeline="foo")
    with pytest.raises(ValueError, match="size"):
        ringfeed.decode(data, pipeline="val", size=0)
    with pytest.raises(ValueError, match="index"):
        ringfeed.decode(data, pipeline="train", index=-1)


# --- ImageFolder -----------------------------------------------------------------------------
TREE = [
    "b_cls/x.JPG", "b_cls/a.Jpeg", "b_cls/c.png", "b_cls/d.PNG", "b_cls/notes.txt", "b_cls/.hidden.jpg",
    "b_cls/sub/deep.jpg", "b_cls/sub/deeper/z.jpeg", "b_cls/sub.d/q.jpg", "b_cls/sub-x/r.jpg", "b_cls/Sub/s.jpg",
    "b_cls/.hdir/h.jpg", "A_cls/1.jpg", "A_cls/10.jpg", "A_cls/2.jpg", "A_cls/café.jpg", "A_cls/img.bmp",
    "A_cls/img.ppm", "A_cls/img.webp", "A_cls/img.tif", "A_cls/img.tiff", "A_cls/img.pgm", "A_cls/noext",
    "A_cls/trail.jpg.bak", "A_cls/.jpg", "A_cls/README", ".hidden_cls/h.jpg", "a_cls/lower.jpeg",
    "root_file.jpg", "c cls/space name.jpg", "d_cls/only.txt.png", "e_cls/nested/only/deep.PNG",
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("tree") / "root"
    for rel in TREE:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"not really an image")
    os.symlink(root / "A_cls" / "1.jpg", root / "b_cls" / "link.jpg")
    os.symlink(root / "b_cls" / "sub", root / "A_cls" / "linked_dir")
    os.symlink(root / "a_cls", root / "f_linked_cls")
    return root


@pytest.mark.parametrize("form", ["absolute", "trailing-slash", "relative", "pathlike"])
def test_image_folder_equals_torchvision(tree, form, monkeypatch):
    monkeypatch.chdir(tree.parent)
    root = {"absolute": str(tree), "trailing-slash": str(tree) + "/", "relative": tree.name, "pathlike": tree}[form]
    want = TorchvisionImageFolder(str(root) if form != "pathlike" else root)
    got = ringfeed.ImageFolder(root)
    assert got.classes == want.classes
    assert got.class_to_idx == want.class_to_idx
    assert got.samples == want.samples
    assert got.targets == want.targets and got.imgs == want.imgs
    assert len(got) == len(want) and got[3] == want.samples[3]
    assert ".hidden_cls" in got.classes and any("/.hidden.jpg" in p for p, _ in got.samples)


def test_image_folder_without_hidden(tree):
    got = ringfeed.ImageFolder(tree, include_hidden=False)
    assert not any(c.startswith(".") for c in got.classes)
    assert not any(part.startswith(".") for p, _ in got.samples for part in os.path.relpath(p, tree).split(os.sep))
    with_hidden = ringfeed.ImageFolder(tree)
    visible = [(p, with_hidden.classes[l]) for p, l in with_hidden.samples
               if not any(part.startswith(".") for part in os.path.relpath(p, tree).split(os.sep))]
    assert [(p, got.classes[l]) for p, l in got.samples] == visible


def test_image_folder_on_generated_dataset(train_dir):
    want = TorchvisionImageFolder(train_dir)
    got = ringfeed.ImageFolder(train_dir)
    assert (got.classes, got.class_to_idx, got.samples) == (want.classes, want.class_to_idx, want.samples)


def test_image_folder_missing_root(tmp_path):
    with pytest.raises((FileNotFoundError, OSError, RuntimeError)):
        ringfeed.ImageFolder(tmp_path / "missing")

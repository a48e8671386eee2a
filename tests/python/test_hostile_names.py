"""File names are bytes: an ImageFolder whose class folder and files are named
in Latin-1 (not UTF-8), with images whose bytes end up quoted in a decoder's
message. Paths come out of ringfeed as `os.fsdecode` makes them (so they open
the file), messages quote the bytes as \\xNN, and the good files are
delivered."""
from __future__ import annotations

import os
import shutil

import pytest

import ringfeed

from conftest import epoch_batches

CLASS0 = b"c0_caf\xe9"                      # a class folder named in Latin-1
BAD = {
    b"bad\xe9\tname\n.ppm": b"P3\n2 1\n255\n1\xe00 0 0 0 0 0\n",  # the PNM token
    b"bad\xff.jpg": b"\xff\xd8\xff" + bytes(range(0x80, 0x100)) + bytes(range(0x20)),
}


@pytest.fixture(scope="module")
def latin1_root(tmp_path_factory, dataset):
    """A copy of the val ImageFolder: first class folder renamed to Latin-1,
    every other file renamed to a Latin-1 name, plus the BAD files. Returns
    (root as str, the good files' byte paths, the bad files' byte paths)."""
    root = os.fsencode(tmp_path_factory.mktemp("latin1")) + b"/r\xe9"
    src = os.fsencode(dataset / "val")
    good, bad = [], []
    for i, c in enumerate(sorted(os.listdir(src))):
        d = os.path.join(root, CLASS0 if i == 0 else c)
        os.makedirs(d)
        for j, f in enumerate(sorted(os.listdir(os.path.join(src, c)))):
            p = os.path.join(d, b"\xe9\xff_" + f if j % 2 == 0 else f)
            shutil.copyfile(os.path.join(src, c, f), p)
            good.append(p)
    for name, content in BAD.items():
        p = os.path.join(root, CLASS0, name)
        with open(p, "wb") as f:
            f.write(content)
        bad.append(p)
    return os.fsdecode(root), good, bad


def test_loader_delivers_good_files_and_stats_paths_open(latin1_root):
    root, good, bad = latin1_root
    loader = ringfeed.Loader(root, batch_size=4, pipeline="val", output="uint8", size=32, threads=2,
                             on_error="skip")
    labels = [l for _, ls in epoch_batches(loader) for l in ls.tolist()]
    assert len(labels) == len(good)
    skipped = loader.stats()["skipped"]
    assert sorted(s["path"] for s in skipped) == sorted(os.fsdecode(p) for p in bad)
    for s in skipped:
        with open(s["path"], "rb") as f:  # the reported path opens the file
            assert f.read() in BAD.values()
        assert s["reason"].isprintable(), s["reason"]
    assert any("invalid token '1\\xe00' in image data" in s["reason"] for s in skipped), skipped


def test_loader_fail_message_quotes_the_name_escaped(latin1_root):
    root, _, _ = latin1_root
    loader = ringfeed.Loader(root, batch_size=64, pipeline="val", output="uint8", size=32, threads=2,
                             on_error="fail")
    with pytest.raises(RuntimeError) as info:
        epoch_batches(loader)
    message = str(info.value)
    assert "bad\\xe9\\x09name\\x0a.ppm" in message or "bad\\xff.jpg" in message, message
    assert message.isprintable(), message


def test_image_folder_and_read_files_give_fsdecoded_paths(latin1_root):
    root, good, bad = latin1_root
    ds = ringfeed.ImageFolder(root)
    assert ds.classes[0] == os.fsdecode(CLASS0)
    paths = [p for p, _ in ds.samples]
    assert sorted(paths) == sorted(os.fsdecode(p) for p in good + bad)
    data = ringfeed.read_files(paths)
    for p, d in zip(paths, data):
        with open(p, "rb") as f:
            assert bytes(d) == f.read()
    missing = os.fsdecode(os.fsencode(root) + b"/gone\xe9.jpg")
    with pytest.raises(FileNotFoundError) as info:
        ringfeed.read_files([missing])
    assert info.value.filename == missing
    assert "gone\\xe9.jpg" in str(info.value)

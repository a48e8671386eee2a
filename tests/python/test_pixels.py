"""Pixels: the val pipeline in exact mode is torchvision's, the uint8 output
is what `ringfeed export` writes, and the output formats agree."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision import transforms
from torchvision.datasets import ImageFolder

import ringfeed

from conftest import MEAN, STD, run_cli

BATCH = 32


def torchvision_val():
    return transforms.Compose([
        transforms.Resize(256),
        transforms.CenterCrop(224),
        transforms.ToTensor(),
        transforms.Normalize(mean=list(MEAN), std=list(STD)),
    ])


def read_ppm(path):
    with open(path, "rb") as f:
        data = f.read()
    # P6 <w> <h> <maxval> then one whitespace byte, then w*h*3 bytes.
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    pos += 1
    magic, w, h, maxval = fields[0], int(fields[1]), int(fields[2]), int(fields[3])
    assert magic == b"P6" and maxval == 255, f"{path}: not an 8-bit P6 PPM"
    pixels = np.frombuffer(data, dtype=np.uint8, count=w * h * 3, offset=pos)
    assert len(data) == pos + w * h * 3, f"{path}: {len(data) - pos} pixel bytes, expected {w * h * 3}"
    return pixels.reshape(h, w, 3)


def test_val_exact_float32_equals_torchvision(train_dir):
    # The 200 train images (varied sizes, some progressive) through the val
    # transform: same pixels within 1e-6, same labels, same order.
    reference = ImageFolder(train_dir, transform=torchvision_val())
    loader = ringfeed.Loader(train_dir, batch_size=BATCH, pipeline="val", exact=True, threads=2)
    assert len(loader) == -(-len(reference) // BATCH)

    position = 0
    worst = 0.0
    for number, (images, labels) in enumerate(loader):
        assert images.dtype == torch.float32 and labels.dtype == torch.int64
        expected_n = min(BATCH, len(reference) - position)
        assert images.shape == (expected_n, 3, 224, 224), f"batch {number}: shape {tuple(images.shape)}"
        assert labels.shape == (expected_n,)
        for slot in range(expected_n):
            want, want_label = reference[position + slot]
            got = images[slot]
            diff = (got - want).abs().max().item()
            worst = max(worst, diff)
            assert labels[slot].item() == want_label, \
                f"sample {position + slot} ({reference.samples[position + slot][0]}): label {labels[slot].item()}, torchvision {want_label}"
            assert diff <= 1e-6, \
                f"sample {position + slot} ({reference.samples[position + slot][0]}): max abs diff {diff} from torchvision"
        position += expected_n
    assert position == len(reference), f"the epoch delivered {position} samples of {len(reference)}"
    print(f"max abs diff from torchvision over {position} samples: {worst:g}")


def test_val_exact_uint8_equals_cli_export(train_dir, tmp_path):
    out = tmp_path / "export"
    run_cli("export", train_dir, "--out", out, "--pipeline", "val", "--exact", "--threads", "2")
    files = {}
    for name in os.listdir(out):
        stem, ext = os.path.splitext(name)
        assert ext == ".ppm", f"unexpected export output {name}"
        position, label = (int(v) for v in stem.split("_"))
        files[position] = (out / name, label)
    n = len(ImageFolder(train_dir))
    assert sorted(files) == list(range(n)), "export did not write one file per sample"

    loader = ringfeed.Loader(train_dir, batch_size=BATCH, pipeline="val", exact=True, output="uint8", threads=2)
    position = 0
    for images, labels in loader:
        assert images.dtype == torch.uint8 and images.shape[1:] == (224, 224, 3)
        for slot in range(images.shape[0]):
            path, label = files[position]
            assert labels[slot].item() == label, f"position {position}: label {labels[slot].item()}, export {label}"
            want = read_ppm(path)
            got = images[slot].numpy()
            assert got.shape == want.shape
            if not np.array_equal(got, want):
                diff = np.abs(got.astype(int) - want.astype(int))
                pytest.fail(f"position {position}: {int((diff > 0).sum())} bytes differ from {path.name} (max {diff.max()})")
            position += 1
    assert position == n


def test_output_formats_agree(train_dir):
    # Train pipeline, fast mode: float32 == normalize(uint8), float16 == float32 rounded.
    kw = dict(batch_size=64, pipeline="train", seed=5, threads=2)
    f32 = [x for x, _ in ringfeed.Loader(train_dir, output="float32", **kw)]
    f16 = [x for x, _ in ringfeed.Loader(train_dir, output="float16", **kw)]
    u8 = [x for x, _ in ringfeed.Loader(train_dir, output="uint8", **kw)]
    assert len(f32) == len(f16) == len(u8) == 4
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    for a, h, u in zip(f32, f16, u8):
        assert a.dtype == torch.float32 and a.dim() == 4 and a.shape[1] == 3
        assert h.dtype == torch.float16 and h.shape == a.shape
        assert u.dtype == torch.uint8 and u.shape == (a.shape[0], 224, 224, 3)
        assert a.is_contiguous() and h.is_contiguous() and u.is_contiguous()
        from_u8 = (u.permute(0, 3, 1, 2).float() / 255 - mean) / std
        assert torch.allclose(a, from_u8, atol=1e-6, rtol=0), (a - from_u8).abs().max()
        assert torch.allclose(h.float(), a, atol=2e-3, rtol=0), (h.float() - a).abs().max()


def test_size_option(val_dir):
    images, _ = next(iter(ringfeed.Loader(val_dir, batch_size=4, pipeline="val", size=96, output="uint8", threads=2)))
    assert images.shape == (4, 96, 96, 3)
    images, _ = next(iter(ringfeed.Loader(val_dir, batch_size=4, pipeline="train", size=64, threads=2)))
    assert images.shape == (4, 3, 64, 64)


def test_val_exact_small_size_equals_torchvision(val_dir):
    # size=160: Resize(160*256/224 = 182) then CenterCrop(160), per the CLI's --size doc.
    tf = transforms.Compose([transforms.Resize(160 * 256 // 224), transforms.CenterCrop(160), transforms.ToTensor(),
                             transforms.Normalize(mean=list(MEAN), std=list(STD))])
    reference = ImageFolder(val_dir, transform=tf)
    position = 0
    for images, labels in ringfeed.Loader(val_dir, batch_size=8, pipeline="val", size=160, exact=True, threads=2):
        for slot in range(images.shape[0]):
            want, label = reference[position]
            assert labels[slot].item() == label
            assert images[slot].shape == want.shape
            assert torch.allclose(images[slot], want, atol=1e-6, rtol=0), \
                f"sample {position}: max abs diff {(images[slot] - want).abs().max().item()}"
            position += 1
    assert position == len(reference)


def test_pil_reference_sanity(val_dir):
    # Guards the reference itself: ImageFolder's loader is PIL .convert("RGB").
    path = ImageFolder(val_dir).samples[0][0]
    with open(path, "rb") as f:
        assert np.array_equal(np.asarray(Image.open(f).convert("RGB")), ringfeed.decode(open(path, "rb").read()).numpy())
